"""The house rules of docs/internals.md, checked on the source (nothing imported)."""

from __future__ import annotations

from tests.arch.imports import cycles, edges, internal_graph

PURE_CORE = (
    "harn_ls.formats",
    "harn_ls.render",
    "harn_ls.paths",
    "harn_ls.project_discovery",
    "harn_ls.workspace",
    "harn_ls.recall",
    "harn_ls.cache_dir",
    "harn_ls.staleness",
    "harn_ls.harn_source",
    "harn_ls.contract",
    "harn_ls.change_kinds",
    "harn_ls.accept_plan",
    "harn_ls.debounce",
    "harn_ls.extra_state",
    "harn_ls.history",
    "harn_ls.refusal",
    "harn_ls.safe_read",
    "harn_ls.state_cache",
    "harn_ls.state_rows",
    "harn_ls.state_spans",
    "harn_ls.text_positions",
    "harn_ls.watch",
    "harn_ls.workspace_recall",
    "harn_ls.workspace_runs",
)
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


def test_pure_core_imports_neither_actions_nor_lsp():
    offenders = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges()
        if _within(e.source, PURE_CORE) and _within(e.target, ("harn_ls.actions", "harn_ls.lsp", "harn_ls.cli"))
    ]
    assert offenders == []


def test_no_import_cycles_at_module_level():
    assert cycles(internal_graph(include_nested=False)) == []


def test_no_import_cycles_even_through_imports_inside_functions():
    assert cycles(internal_graph(include_nested=True)) == []


def test_every_import_inside_a_function_says_why():
    """Imports go at the top; one kept inside a function (start-up cost, an optional platform module)
    has a one-line comment right above it, or above the block of imports it belongs to."""
    unexplained = [f"{e.source}:{e.line} {e.target}" for e in edges() if not e.top_level and not e.reason]
    assert unexplained == []
