"""Issue 13 item 5: every module stays under ~700 lines and every function under ~100, and the old import
paths of split modules keep working."""

from __future__ import annotations

import ast
from pathlib import Path

import harn_ls

PKG = Path(harn_ls.__file__).parent
SPLIT = sorted(PKG.rglob("*.py"))  # every module (it started with the ones split out of big files)
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 100


def test_split_modules_are_small():
    too_big = []
    for path in SPLIT:
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            too_big.append(f"{path.name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_big.append(f"{path.name}:{node.lineno} {node.name}: {length} lines")
    assert not too_big, too_big


def test_skills_package_reexports_every_public_name():
    import harn_ls.formats.skills as sk

    exported = set(sk.__all__)
    for path in (PKG / "formats" / "skills").glob("*.py"):
        if path.name == "__init__.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = []
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            for name in names:
                if not name.startswith("_"):
                    assert name in exported, f"{path.name}: {name} missing from harn_ls.formats.skills"
                    assert getattr(sk, name) is getattr(__import__(f"harn_ls.formats.skills.{path.stem}",
                                                                   fromlist=[name]), name)
