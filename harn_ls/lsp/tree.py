"""Sidebar data: `harn/tree` {view, parent?, page?} -> {items, nextPage?, total?} (items: render/tree_items.py);
`harn/treeChanged` after changes."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from harn_ls.lsp import protocol as P
from harn_ls.render import tree_state
from harn_ls.render.tree_items import TreeOptions, tree_page

_VIEW_KINDS = {
    "runs": {"runs"} | tree_state.KINDS,
    "checkpoints": {"checkpoints"},
    "memory": {"memory", "facts"},
    "skills": {"skills", "pattern"},
}


def tree_options(min_conf: float = 0.0, show_suppressed: bool = False) -> TreeOptions:
    return TreeOptions(open_command=P.CMD_OPEN, page_size=P.TREE_PAGE_SIZE, min_conf=min_conf,
                       show_suppressed=show_suppressed)


ITEM_BYTES = tree_options().item_bytes


def views_for(changes) -> list[str]:
    if changes.rescanned:
        return list(P.TREE_VIEWS)
    return [v for v, kinds in _VIEW_KINDS.items() if kinds & changes.kinds]


def _get(params: Any, name: str, default=None):
    if isinstance(params, dict):
        return params.get(name, default)
    return getattr(params, name, default)


def register(server) -> None:
    @server.handler(P.TREE)
    async def tree(ls, params):
        view = _get(params, "view")
        parent = _get(params, "parent")
        page = _get(params, "page", 0) or 0
        if view not in P.TREE_VIEWS:
            raise JsonRpcInvalidParams(f"unknown view {view!r}; expected one of {', '.join(P.TREE_VIEWS)}")
        root = _get(params, "root")
        proj = ls.projects.get(root) if root else ls.default_project()
        if proj is None or proj.ws is None:
            return {"items": []}
        opts = tree_options(ls.settings.facts.minConfidence, bool(_get(params, "showSuppressed", False)))
        return await proj.run(lambda: tree_page(proj.ws, view, parent, int(page), opts))
