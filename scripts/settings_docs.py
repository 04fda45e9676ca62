"""The settings tables of the README and the Neovim and Emacs docs, written from the one schema:
vscode-extension/package.json's `contributes.configuration`.

    python scripts/settings_docs.py          # rewrite the tables in place
    python scripts/settings_docs.py --check  # exit 1 (naming the file) when a table is not what the schema gives

Each table sits between `settings:begin` and `settings:end` marker lines; everything outside them is
hand-written. tests/unit/test_settings_schema.py runs the check in `make test`, and checks the server's
own defaults and scopes (harn_ls/lsp/settings.py) against the same schema.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "vscode-extension" / "package.json"
PREFIX = "harnState."

# Settings only the VS Code extension reads: how it starts the server, how it opens documents, its trace.
CLIENT_ONLY = frozenset({"server.path", "server.args", "documents.openAs", "trace.server"})


def schema() -> dict[str, dict]:
    """Every `harnState.*` setting by its name without the prefix, in package.json's order."""
    configuration = json.loads(PACKAGE.read_text())["contributes"]["configuration"]
    out: dict[str, dict] = {}
    for section in configuration if isinstance(configuration, list) else [configuration]:
        for key, spec in section["properties"].items():
            if not key.startswith(PREFIX):
                raise ValueError(f"{key}: not a {PREFIX}* setting")
            out[key[len(PREFIX):]] = spec
    return out


def type_of(spec: dict) -> str:
    kind = spec["type"]
    if kind == "array":
        return f"array of {spec.get('items', {}).get('type', 'any')}"
    if "enum" in spec:
        return " \\| ".join(json.dumps(v) for v in spec["enum"])
    return kind


def default_of(spec: dict) -> str:
    return json.dumps(spec["default"], ensure_ascii=False)


def describe(spec: dict) -> str:
    """The schema's description as one table cell (VS Code's `#setting#` links become code spans)."""
    text = spec.get("markdownDescription") or spec.get("description") or ""
    text = re.sub(r"`?#([\w.]+)#`?", r"`\1`", text)
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(names: list[str], specs: dict[str, dict], prefix: str) -> str:
    rows = ["| Setting | Type | Default | Scope | What it does |", "|---|---|---|---|---|"]
    for name in names:
        spec = specs[name]
        rows.append(f"| `{prefix}{name}` | {type_of(spec)} | `{default_of(spec)}` | {spec['scope']} | {describe(spec)} |")
    return "\n".join(rows)


def readme_block(specs: dict[str, dict]) -> str:
    server = [n for n in specs if n not in CLIENT_ONLY]
    client = [n for n in specs if n in CLIENT_ONLY]
    return (markdown_table(server, specs, PREFIX)
            + "\n\nRead by the VS Code extension only:\n\n"
            + markdown_table(client, specs, PREFIX))


def neovim_block(specs: dict[str, dict]) -> str:
    return markdown_table([n for n in specs if n not in CLIENT_ONLY], specs, "")


def emacs_block(specs: dict[str, dict]) -> str:
    names = [n for n in specs if n not in CLIENT_ONLY]
    width = max(len(n) for n in names)
    types = max(len(type_of(specs[n]).replace("\\|", "|")) for n in names)
    defaults = max(len(default_of(specs[n])) for n in names)
    lines = [f";;   {'setting'.ljust(width)}  {'type'.ljust(types)}  {'default'.ljust(defaults)}  scope"]
    for n in names:
        spec = specs[n]
        lines.append(f";;   {n.ljust(width)}  {type_of(spec).replace(chr(92) + '|', '|').ljust(types)}  "
                     f"{default_of(spec).ljust(defaults)}  {spec['scope']}")
    return "\n".join(lines)


# file -> (the marker line's comment form, the block's writer)
DOCS = {
    "README.md": ("<!-- {} -->", readme_block),
    "editors/neovim/README.md": ("<!-- {} -->", neovim_block),
    "editors/emacs/harn-state.el": (";; {}", emacs_block),
}


def with_block(text: str, marker: str, block: str, where: str) -> str:
    begin, end = marker.format("settings:begin"), marker.format("settings:end")
    pattern = re.compile(re.escape(begin) + r"\n.*?\n?" + re.escape(end), re.S)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{where}: needs exactly one {begin} ... {end} block")
    return pattern.sub(lambda _m: f"{begin}\n{block}\n{end}", text)


def expected(path: str) -> str:
    marker, writer = DOCS[path]
    return with_block((REPO / path).read_text(), marker, writer(schema()), path)


def main(argv: list[str]) -> int:
    stale = []
    for path in DOCS:
        want = expected(path)
        if (REPO / path).read_text() != want:
            if "--check" in argv:
                stale.append(path)
            else:
                (REPO / path).write_text(want)
    for path in stale:
        print(f"{path}: its settings table differs from vscode-extension/package.json; "
              "run `python scripts/settings_docs.py`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
