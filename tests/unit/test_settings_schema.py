"""Settings from one source (issue 31, item 7): the VS Code extension's `contributes.configuration`
is the schema. The server's defaults (`lsp/settings.py`), the README's settings paragraph and the
Neovim and Emacs docs are checked against it, so a setting added in one place and forgotten in
another fails here, not in a user's editor."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

from harn_ls.lsp.settings import Settings

REPO = Path(__file__).resolve().parents[2]
PACKAGE = json.loads((REPO / "vscode-extension" / "package.json").read_text())

# Settings only the VS Code extension reads (how it starts the server, how it opens documents).
CLIENT_ONLY = {
    "server.path": "the server program the extension starts",
    "server.args": "its arguments",
    "documents.openAs": "preview or source: the extension's choice of editor",
    "trace.server": "vscode-languageclient's own trace setting",
}
# Server settings no client schema carries: the trust default for clients that say nothing about trust.
SERVER_ONLY = {"trustedByDefault"}
# Settings that name a path or a program: a cloned repository's .vscode/settings.json must not set
# them in an untrusted workspace (issue 27, item 1).
NAMES_PATH_OR_PROGRAM = {"server.path", "server.args", "harnPath", "projectRoots", "skillRoot", "harnEnv"}


def schema() -> dict[str, dict]:
    configuration = PACKAGE["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    out = {}
    for section in sections:
        for key, spec in section["properties"].items():
            assert key.startswith("harnState."), key
            out[key[len("harnState."):]] = spec
    return out


def server_defaults(cls=Settings, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    instance = cls()
    for field in attrs.fields(cls):
        value = getattr(instance, field.name)
        if attrs.has(type(value)):
            out.update(server_defaults(type(value), f"{prefix}{field.name}."))
        else:
            out[f"{prefix}{field.name}"] = value
    return out


def test_every_server_setting_is_in_the_schema_with_the_same_default() -> None:
    declared = schema()
    for name, default in server_defaults().items():
        if name in SERVER_ONLY:
            continue
        assert name in declared, f"harnState.{name} is read by the server but not declared in package.json"
        want = declared[name].get("default")
        assert want == default or (isinstance(default, float) and want == pytest.approx(default)), \
            f"harnState.{name}: package.json says {want!r}, the server {default!r}"


def test_every_schema_setting_is_read_by_the_server_or_said_to_be_the_clients() -> None:
    server = set(server_defaults())
    for name in schema():
        assert name in server or name in CLIENT_ONLY, f"harnState.{name} is declared but nothing reads it"


def test_settings_that_name_a_path_or_a_program_are_restricted_in_untrusted_workspaces() -> None:
    restricted = set(PACKAGE["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"])
    missing = {f"harnState.{n}" for n in NAMES_PATH_OR_PROGRAM} - restricted
    assert not missing, f"not restricted in untrusted workspaces: {sorted(missing)}"
    declared = schema()
    assert NAMES_PATH_OR_PROGRAM <= set(declared)


def _readme_settings_paragraph() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("Settings (`harnState.*`")
    return text[start:text.index("\n\n", start)]


@pytest.mark.parametrize("name", sorted(set(server_defaults()) - SERVER_ONLY))
def test_the_readme_gives_each_setting_and_its_default(name: str) -> None:
    paragraph = _readme_settings_paragraph()
    default = server_defaults()[name]
    shown = {True: "true", False: "false"}.get(default, None) if isinstance(default, bool) else None
    if shown is None:
        shown = json.dumps(default) if isinstance(default, (str, list, dict)) else f"{default:g}"
    pattern = re.escape(f"`{name}`") + r"\s*\(" + re.escape(shown)
    assert re.search(pattern, paragraph), f"README's settings paragraph lacks `{name}` ({shown}"


@pytest.mark.parametrize("doc", ["editors/neovim/README.md", "editors/emacs/harn-state.el"])
def test_the_editor_docs_name_each_setting(doc: str) -> None:
    text = (REPO / doc).read_text()
    for name in sorted(set(server_defaults()) - SERVER_ONLY):
        leaf = name.rsplit(".", 1)[-1]
        assert leaf in text, f"{doc} does not mention the setting {name}"
