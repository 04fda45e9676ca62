"""Settings from one source (issue 31, item 7): the VS Code extension's `contributes.configuration`
is the schema. The server's settings (`lsp/settings.py`: name, type, default, scope, restriction),
the README's table and the Neovim and Emacs docs are checked against it, so a setting added, or a
default or scope changed, in one place and not the others fails here, not in a user's editor."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harn_ls import contract
from harn_ls.lsp.settings import FOLDER_SCOPES, LEAVES, Settings, folder_part, folder_settings, parse_settings

REPO = Path(__file__).resolve().parents[2]
PACKAGE = json.loads((REPO / "vscode-extension" / "package.json").read_text())
sys.path.insert(0, str(REPO / "scripts"))
import settings_docs  # noqa: E402  (scripts/ is not a package: the generator the docs are written by)

CLIENT_ONLY = settings_docs.CLIENT_ONLY
# Server settings no client schema carries: the trust default for clients that say nothing about trust.
SERVER_ONLY = {"trustedByDefault"}
# Settings that name a path or a program: a cloned repository's .vscode/settings.json must not set
# them in an untrusted workspace (issue 27, item 1).
NAMES_PATH_OR_PROGRAM = {"server.path", "server.args", "harnPath", "projectRoots", "skillRoot", "harnEnv"}
JSON_TYPE = {bool: "boolean", float: "number", int: "number", str: "string", list: "array", dict: "object"}
VALID_SCOPES = {"application", "machine", "machine-overridable", "window", "resource", "language-overridable"}


def schema() -> dict[str, dict]:
    return settings_docs.schema()


def server_defaults() -> dict[str, object]:
    defaults = Settings()
    out: dict[str, object] = {}
    for name in LEAVES:
        value: object = defaults
        for part in name.split("."):
            value = getattr(value, part)
        out[name] = value
    return out


def restricted() -> set[str]:
    return {k.removeprefix("harnState.") for k in PACKAGE["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]}


# ------------------------------------------------------------------ the server against the schema
def test_every_server_setting_is_in_the_schema_with_the_same_default() -> None:
    declared = schema()
    for name, default in server_defaults().items():
        if name in SERVER_ONLY:
            continue
        assert name in declared, f"harnState.{name} is read by the server but not declared in package.json"
        want = declared[name].get("default")
        assert want == default and type(want) in (type(default), int), \
            f"harnState.{name}: package.json says {want!r}, the server {default!r}"


@pytest.mark.parametrize("name", sorted(set(LEAVES) - SERVER_ONLY))
def test_each_server_setting_has_the_schemas_type_scope_and_restriction(name: str) -> None:
    spec, field = schema()[name], LEAVES[name]
    default = server_defaults()[name]
    assert JSON_TYPE[type(default)] == spec["type"], f"harnState.{name}: {type(default).__name__} vs {spec['type']}"
    if spec["type"] == "array":
        assert spec["items"]["type"] == "string" and field.type in ("list[str]", list[str])
    assert field.metadata["scope"] == spec["scope"], \
        f"harnState.{name}: the server gives scope {field.metadata['scope']!r}, package.json {spec['scope']!r}"
    assert field.metadata["restricted"] == (name in restricted()), f"harnState.{name}: restriction differs"


def test_server_only_settings_cannot_come_from_a_folder() -> None:
    for name in SERVER_ONLY:
        assert LEAVES[name].metadata["scope"] not in FOLDER_SCOPES, name


def test_every_schema_setting_is_read_by_the_server_or_said_to_be_the_clients() -> None:
    for name, spec in schema().items():
        assert name in LEAVES or name in CLIENT_ONLY, f"harnState.{name} is declared but nothing reads it"
        assert not (name in LEAVES and name in CLIENT_ONLY), name
        assert spec.get("scope") in VALID_SCOPES, f"harnState.{name}: scope {spec.get('scope')!r}"
        assert "default" in spec and "type" in spec, name


def test_settings_that_name_a_path_or_a_program_are_restricted_in_untrusted_workspaces() -> None:
    missing = NAMES_PATH_OR_PROGRAM - restricted()
    assert not missing, f"not restricted in untrusted workspaces: {sorted(missing)}"
    assert NAMES_PATH_OR_PROGRAM <= set(schema())


# ---------------------------------------------------------------- what a folder's answer may set
HOSTILE_FOLDER_ANSWER = {
    "hitl.reviewer": "mallory",  # application: the user's own name
    "trustedByDefault": False,  # the server's own
    "harnPath": "../proj-evil/bin/harn", "skillRoot": "../proj-evil/skills", "projectRoots": ["../proj-evil"],
    "harnEnv": {"HARN_STATE_DIR": "../proj-evil/state"},
    "facts": {"minConfidence": 0.7}, "transcripts.showPrivate": True,
    "bogus": 1, "probes": {"bogus": 2},
}


def test_a_folder_sets_folder_scoped_settings_and_never_an_application_one() -> None:
    workspace, errors = parse_settings({"hitl": {"reviewer": "alice"}, "trustedByDefault": True})
    assert errors == []
    folder, errors = folder_settings(HOSTILE_FOLDER_ANSWER, workspace, trusted=True)
    assert errors == []
    assert folder.hitl.reviewer == "alice" and folder.trustedByDefault is True
    assert folder.facts.minConfidence == 0.7 and folder.transcripts.showPrivate is True
    assert folder.harnPath == "../proj-evil/bin/harn" and folder.skillRoot == "../proj-evil/skills"  # trusted: yours
    assert workspace.facts.minConfidence == 0.0  # the workspace's own settings are left as they were


def test_an_untrusted_folder_sets_no_restricted_setting() -> None:
    workspace, _ = parse_settings({"skillRoot": ".burin/skills"})
    folder, _ = folder_settings(HOSTILE_FOLDER_ANSWER, workspace, trusted=False)
    assert (folder.harnPath, folder.skillRoot, folder.projectRoots, folder.harnEnv) == ("harn", ".burin/skills", [], {})
    assert folder.facts.minConfidence == 0.7  # what names no path still applies
    assert folder_part(HOSTILE_FOLDER_ANSWER, trusted=False) == {"facts": {"minConfidence": 0.7},
                                                                 "transcripts": {"showPrivate": True}}


def test_a_folder_answer_that_is_not_an_object_sets_nothing() -> None:
    workspace, _ = parse_settings({"facts": {"minConfidence": 0.5}})
    for raw in (None, [], "x", 3):
        assert folder_settings(raw, workspace, trusted=True) == (workspace, [])


# --------------------------------------------------------------------------------- the docs
@pytest.mark.parametrize("doc", sorted(settings_docs.DOCS))
def test_the_docs_settings_table_is_the_schemas(doc: str) -> None:
    assert (REPO / doc).read_text() == settings_docs.expected(doc), \
        f"{doc}: its settings table differs from package.json; run `python scripts/settings_docs.py`"


def _markdown_rows(doc: str) -> dict[str, list[str]]:
    text = (REPO / doc).read_text()
    block = text[text.index("<!-- settings:begin -->"):text.index("<!-- settings:end -->")]
    rows = {}
    for line in block.splitlines():
        m = re.match(r"\| `(?:harnState\.)?([\w.]+)` \| (.*?) \| `(.*?)` \| ([\w-]+) \|", line)
        if m:
            rows[m.group(1)] = [m.group(2), m.group(3), m.group(4)]
    return rows


@pytest.mark.parametrize("doc", ["README.md", "editors/neovim/README.md"])
def test_each_documented_setting_has_the_servers_type_default_and_scope(doc: str) -> None:
    """Read back from the page as a user reads it (not through the generator): every setting the
    server reads is there, with its type, its default as the server has it and its scope."""
    rows = _markdown_rows(doc)
    defaults = server_defaults()
    for name in set(LEAVES) - SERVER_ONLY:
        assert name in rows, f"{doc} does not document harnState.{name}"
        kind, default, scope = rows[name]
        assert kind.split(" ")[0] == JSON_TYPE[type(defaults[name])], (doc, name, kind)
        assert json.loads(default) == defaults[name], (doc, name, default, defaults[name])
        assert scope == LEAVES[name].metadata["scope"], (doc, name, scope)
    if doc == "README.md":
        assert set(rows) == set(schema()), "the README documents every setting, the extension's own too"


def test_the_emacs_docs_give_each_setting_with_its_type_default_and_scope() -> None:
    text = (REPO / "editors/emacs/harn-state.el").read_text()
    defaults = server_defaults()
    for name in set(LEAVES) - SERVER_ONLY:
        m = re.search(rf"^;;   {re.escape(name)}  +(.+?)  +(.+?)  +(\S+)$", text, re.M)  # columns: 2+ spaces apart
        assert m, f"harn-state.el does not document {name}"
        assert m.group(1).split(" ")[0] == JSON_TYPE[type(defaults[name])], (name, m.group(1))
        assert json.loads(m.group(2)) == defaults[name] and m.group(3) == LEAVES[name].metadata["scope"], name


SETTING_MENTION = re.compile(r"harnState\.([a-zA-Z][\w]*(?:\.[a-zA-Z]\w*)*)")
# commands share the prefix: the extension's, the server's (contract.py) and the ones a client runs itself
COMMAND_IDS = {c["command"].removeprefix("harnState.") for c in PACKAGE["contributes"]["commands"]} | {
    v.removeprefix("harnState.") for k, v in vars(contract).items() if k.startswith("CMD_") and isinstance(v, str)}


@pytest.mark.parametrize("doc", ["README.md", "editors/neovim/README.md", "editors/emacs/harn-state.el",
                                 "docs/server.md", "docs/guarantees.md", "docs/internals.md"])
def test_every_setting_the_docs_name_exists(doc: str) -> None:
    """A renamed or removed setting left in prose fails too."""
    known = set(schema()) | SERVER_ONLY
    groups = {n.split(".")[0] for n in known}
    for name in SETTING_MENTION.findall((REPO / doc).read_text()):
        if name in COMMAND_IDS or name.startswith(("ui.", "server.open")) or name == "ui":
            continue  # a command (`harnState.ui.*` are the extension's, `server.open` the server's)
        assert name in known or name in groups, f"{doc} names harnState.{name}, which is no setting"


def test_the_generator_checks_clean() -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "settings_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_invalid_setting_values_are_named_inert_and_capped():
    """The errors about a settings value the server ignores quote it as every other message does
    (util/message_text.quote), not with repr: the value may be the repository's own settings file."""
    link = "[Open terminal](command:workbench.action.terminal.new)"
    _s, errors = parse_settings({"projectRoots": link + "y" * 3000, "harnEnv": {"HARN_STATE_DIR": 5, link + "\n": "a"}})
    assert len(errors) == 3, errors
    for e in errors:
        assert "](command:" not in e and "\n" not in e and "'" not in e, e
        assert len(e.encode()) < 900, len(e)
    assert any(e.startswith("harnState.harnEnv.HARN_STATE_DIR: ignored invalid value `5`") for e in errors)
