"""Every dataclass in harn_ls has a docstring.

Python 3.11's `dataclass` gives a class without one a docstring built from `inspect.signature`,
at import: ~0.5-2 ms a class, paid by every process (the CLI's warm `inspect --json` loads 45)."""

from __future__ import annotations

import ast
import dataclasses

from tests.arch.imports import module_files


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id in ("dataclass", "lean_dataclass")) or \
        (isinstance(target, ast.Attribute) and target.attr == "dataclass")


def test_every_dataclass_has_a_docstring():
    missing, seen = [], 0
    for name, path in sorted(module_files().items()):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(_is_dataclass_decorator(d) for d in node.decorator_list):
                seen += 1
                if ast.get_docstring(node) is None:
                    missing.append(f"{name}.{node.name} (line {node.lineno})")
    assert seen > 40  # the walk does find them
    assert missing == []


def test_a_documented_dataclass_keeps_its_own_docstring():
    """What the rule relies on: with a docstring, dataclass leaves __doc__ alone (no signature made)."""

    @dataclasses.dataclass
    class WithDoc:
        """Own words."""

        x: int

    @dataclasses.dataclass
    class WithoutDoc:
        x: int

    assert WithDoc.__doc__ == "Own words."
    assert WithoutDoc.__doc__.startswith("WithoutDoc(x:")  # made from the signature
