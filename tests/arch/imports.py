"""Static import graph of harn_ls, read with ast (nothing is imported)."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

PACKAGE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "harn_ls")


@dataclass(frozen=True)
class ImportEdge:
    source: str  # module importing, e.g. harn_ls.render.documents
    target: str  # module or package imported, e.g. harn_ls.actions.proposals
    line: int
    top_level: bool  # False when the import sits inside a function or class body
    reason: str  # the comment on the line before a nested import ("" when none)


def module_name(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def module_files() -> dict[str, str]:
    out = {}
    for folder, _dirs, files in os.walk(PACKAGE_DIR):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                out[module_name(path)] = path
    return out


def edges() -> list[ImportEdge]:
    modules = module_files()
    found: list[ImportEdge] = []
    for name, path in modules.items():
        with open(path, encoding="utf-8") as fh:
            source_text = fh.read()
        lines = source_text.splitlines()
        tree = ast.parse(source_text, path)
        is_package = path.endswith("__init__.py")
        nested: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        nested.add(id(inner))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                targets = [base]
                # `from harn_ls.render import documents` imports a submodule
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        targets.append(f"{base}.{alias.name}")
            else:
                continue
            # the comment above the import, or above the block of consecutive imports it ends
            row = node.lineno - 2
            while row >= 0 and lines[row].strip().startswith(("import ", "from ")):
                row -= 1
            above = lines[row].strip() if row >= 0 else ""
            reason = above[1:].strip() if above.startswith("#") else ""
            for target in targets:
                found.append(ImportEdge(name, target, node.lineno, id(node) not in nested, reason))
    return found


def internal_graph(include_nested: bool = True) -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges():
        if not include_nested and not e.top_level:
            continue
        if e.target in modules and e.target != e.source:
            graph[e.source].add(e.target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                result.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result
