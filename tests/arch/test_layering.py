"""The house rules of docs/internals.md, checked on the source (nothing imported)."""

from __future__ import annotations

import os

from tests.arch.imports import PACKAGE_DIR, cycles, edges, internal_graph, module_files

# Each folder of harn_ls/ is one layer; a module imports only from its own layer or a lower one.
# The layer of a module is the first part of its path, so a new module cannot escape the rules:
# it lands in a folder, and a new folder or top-level module fails test_every_module_has_a_layer.
LAYERS = {
    "util": 0,  # small pure helpers: safe reads, text positions, UTF-8 cuts, message defusing
    "formats": 1,  # Harn's files as Harn writes them (read side), paths
    "recall": 2,  # the BM25 recall engine over memory records
    "cache": 3,  # harn-ls's own cache (outside the project)
    "model": 4,  # the Workspace and its parts
    "watch": 4,  # the file watcher
    "contract": 4,  # method names and payload types shared with the extension
    "render": 5,  # documents, hovers, lenses, trees as plain data
    "actions": 6,  # the only code that writes into a project
    "lsp": 7,  # translation to and from LSP (pygls lives here only)
    "cli": 8,  # the command line (serve starts lsp/)
    "__main__": 9,
}
PURE_CORE = ("util", "formats", "recall", "cache", "model", "watch", "contract", "render")


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


LSP_LIBRARIES = ("pygls", "lsprotocol", "cattrs", "attrs")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_lsp_libraries_only_in_lsp_layer():
    offenders = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges()
        if _within(e.target, ("pygls", "lsprotocol")) and not _within(e.source, ("harn_ls.lsp",))
    ]
    assert offenders == []


def test_every_module_has_a_layer():
    unplaced = sorted({m for m in module_files() if m != "harn_ls" and layer_of(m) not in LAYERS})
    assert unplaced == []


def test_imports_run_down_the_layers_only():
    offenders = [
        f"{e.source}:{e.line} ({layer_of(e.source)}) imports {e.target} ({layer_of(e.target)})"
        for e in edges()
        if e.target.startswith("harn_ls.") and layer_of(e.source) != layer_of(e.target)
        and LAYERS.get(layer_of(e.target), 99) >= LAYERS[layer_of(e.source)]
    ]
    assert offenders == []


def test_pure_core_imports_neither_actions_nor_lsp():
    offenders = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges()
        if layer_of(e.source) in PURE_CORE and layer_of(e.target) in ("actions", "lsp", "cli")
    ]
    assert offenders == []


def test_at_most_eight_modules_directly_under_the_package():
    top = sorted(m for m, path in module_files().items()
                 if m != "harn_ls" and os.path.normpath(os.path.dirname(path)) == os.path.normpath(PACKAGE_DIR))
    assert len(top) <= 8, top


def test_no_import_cycles_at_module_level():
    assert cycles(internal_graph(include_nested=False)) == []


def test_no_import_cycles_even_through_imports_inside_functions():
    assert cycles(internal_graph(include_nested=True)) == []


def test_every_import_inside_a_function_says_why():
    """Imports go at the top; one kept inside a function (start-up cost, an optional platform module)
    has a one-line comment right above it, or above the block of imports it belongs to."""
    unexplained = [f"{e.source}:{e.line} {e.target}" for e in edges() if not e.top_level and not e.reason]
    assert unexplained == []
