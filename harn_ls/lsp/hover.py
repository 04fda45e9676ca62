"""`textDocument/hover` on code covered by a fact's `file_range` evidence (text: render/hover.py)."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls.lsp.project_links import markdown_for
from harn_ls.lsp.span_save import run_noting_spans
from harn_ls.render.hover import hover_at


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls, params: types.HoverParams):
        uri = params.text_document.uri
        proj = ls.project_for_uri(uri)
        if proj is None or proj.ws is None:
            return None
        path = to_fs_path(uri)
        min_conf = ls.settings.facts.minConfidence
        view = await run_noting_spans(proj, lambda: hover_at(proj.ws, path, params.position.line, min_conf,
                                                             proj.fact_spans))
        if view is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown_for(ls, proj, view.markdown)),
            range=types.Range(start=types.Position(line=view.first_line, character=0),
                              end=types.Position(line=view.last_line, character=10_000)),
        )
