"""Sidebar data: `harn/tree` TreeParams -> TreeResult (built by render/tree_items.py, put on the wire
here); `harn/treeChanged` after changes."""

from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams

from harn_ls import contract as P
from harn_ls.lsp.project_links import tree_page_for
from harn_ls.model.change_kinds import K
from harn_ls.render import tree_state
from harn_ls.render.tree_items import TreeOptions, tree_result
from harn_ls.render.uri import MAX_QUERY_INT

_VIEW_KINDS = {
    "runs": {K.RUNS} | tree_state.KINDS,
    "checkpoints": {K.CHECKPOINTS},
    "memory": {K.MEMORY, K.FACTS},
    "skills": {K.SKILLS, K.PATTERN},
}


def tree_options(min_conf: float = 0.0, show_suppressed: bool = False) -> TreeOptions:
    return TreeOptions(open_command=P.CMD_OPEN, page_size=P.TREE_PAGE_SIZE, min_conf=min_conf,
                       show_suppressed=show_suppressed)


ITEM_BYTES = tree_options().item_bytes


def views_for(changes) -> list[str]:
    if changes.rescanned:
        return list(P.TREE_VIEWS)
    return [v for v, kinds in _VIEW_KINDS.items() if kinds & changes.kinds]


def register(server) -> None:
    @server.handler(P.TREE)
    async def tree(ls, params):
        try:
            p = P.parse_params(P.TreeParams, params, P.TREE)
        except P.ArgumentError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        if p.view not in P.TREE_VIEWS:
            raise JsonRpcInvalidParams(f"unknown view {p.view!r}; expected one of {', '.join(P.TREE_VIEWS)}")
        await ls.wait_for_projects()
        if not 0 <= p.page <= MAX_QUERY_INT:
            raise JsonRpcInvalidParams(f"page {str(p.page)[:40]} is out of range (expected 0 to {MAX_QUERY_INT})")
        proj = ls.projects.get(p.root) if p.root else ls.default_project()
        if proj is None or proj.ws is None:
            return P.to_wire(P.TreeResult(items=[]))
        opts = tree_options(ls.settings_for(proj).facts.minConfidence, p.show_suppressed)
        result = await proj.run(lambda: tree_result(proj.ws, p.view, p.parent, p.page, opts))
        return tree_page_for(ls, proj, P.to_wire(result))
