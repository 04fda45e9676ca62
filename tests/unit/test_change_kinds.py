"""ChangeSet kinds are one enum (harn_ls/model/change_kinds.py): producers emit its members, readers
map each of them somewhere, and no module names a kind with a string literal of its own."""

from __future__ import annotations

import ast
import os
import shutil

from harn_ls.lsp import documents, tree
from harn_ls.model.change_kinds import CORE_KINDS, EXTRA_KINDS, RESCAN_KINDS, ChangeKind
from harn_ls.model.workspace import Workspace

HERE = os.path.dirname(__file__)
SAMPLE = os.path.join(HERE, "..", "..", "fixtures", "sample-project")
PACKAGE = os.path.join(HERE, "..", "..", "harn_ls")


def test_a_rescan_reports_enum_members_only(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(SAMPLE, project, symlinks=True)
    ws = Workspace.load(str(project))
    changes = ws.rescan()
    assert changes.kinds >= RESCAN_KINDS
    assert all(type(k) is ChangeKind for k in changes.kinds), sorted(map(repr, changes.kinds))
    (project / ".harn" / "checkpoints" / "ingest.json").write_text("{}")
    live = ws.apply_changes([str(project / ".harn" / "checkpoints" / "ingest.json")])
    assert ChangeKind.CHECKPOINTS in live.kinds and all(type(k) is ChangeKind for k in live.kinds)
    assert live.to_json()["kinds"] == sorted(str(k) for k in live.kinds)


def test_every_kind_reaches_a_view_or_a_document():
    """A kind nobody maps would change state without refreshing anything."""
    readers = set().union(*(k for k in documents._AFFECTS.values() if k), *tree._VIEW_KINDS.values())
    assert all(isinstance(k, ChangeKind) for k in readers)
    assert set(ChangeKind) - readers == {ChangeKind.ROOTS}  # roots come with `rescanned`: everything refreshes
    assert CORE_KINDS | EXTRA_KINDS | {ChangeKind.ROOTS} == set(ChangeKind)


def _literal_kinds(node: ast.AST) -> list[str]:
    values = {k.value for k in ChangeKind}
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and n.value in values]


def test_no_module_spells_a_kind_as_a_string():
    offenders = []
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py") or name == "model/change_kinds.py":
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                tree_ = ast.parse(fh.read(), path)
            for node in ast.walk(tree_):
                # changes.kinds.add("x") / .update(...), ChangeSet(kinds=...), "x" in changes.kinds
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("add", "update") and isinstance(node.func.value, ast.Attribute) \
                        and node.func.value.attr == "kinds":
                    found = _literal_kinds(node)
                elif isinstance(node, ast.keyword) and node.arg == "kinds":
                    found = _literal_kinds(node.value)
                elif isinstance(node, ast.Compare) and any(isinstance(c, ast.Attribute) and c.attr == "kinds"
                                                           for c in node.comparators):
                    found = _literal_kinds(node.left)
                else:
                    continue
                offenders += [f"{os.path.relpath(path, PACKAGE)}:{node.lineno} {v!r}" for v in found]
    assert offenders == []
