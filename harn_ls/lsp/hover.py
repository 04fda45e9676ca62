"""`textDocument/hover` on code covered by a fact's `file_range` evidence (text: render/hover.py).

Markdown to a client that declared it in `hover.contentFormat`; any other gets the CLI's text
rendering of the same hover (render/terminal.py: escapes undone, links as `label <uri>`, control
and bidi characters made visible), so `**observation**` or `1\\.5%` never shows literally.

The hover's range is the facts' whole lines, ending at the real end of the last one in the session's
position encoding (from the client's open document, else the file), not at a made-up large column."""

from __future__ import annotations

from lsprotocol import types

from harn_ls.lsp.file_uris import file_path
from harn_ls.lsp.project_links import markdown_for
from harn_ls.lsp.span_save import run_noting_spans
from harn_ls.render.hover import hover_at
from harn_ls.render.terminal import markdown_to_text, safe_for_terminal
from harn_ls.util.safe_read import source_text
from harn_ls.util.text_positions import line_text, units_len


def hover_contents(markdown: str, client) -> types.MarkupContent:
    if client.hover_markdown:
        return types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown)
    return types.MarkupContent(kind=types.MarkupKind.PlainText, value=safe_for_terminal(markdown_to_text(markdown)))


async def end_of_line(ls, proj, uri: str, path: str, line: int) -> types.Position:
    """The end of `line`'s content, its column in the session's position encoding."""
    opened = ls.workspace.text_documents.get(uri)
    source = opened.source if opened is not None else await proj.run(lambda: source_text(path, proj.root))
    text = line_text(source, line) or ""
    return types.Position(line=line, character=units_len(text, ls.position_encoding))


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls, params: types.HoverParams):
        uri = params.text_document.uri
        path = file_path(uri)
        proj = await ls.loaded_project_for(path)
        if path is None or proj is None or proj.ws is None:
            return None
        min_conf = ls.settings_for(proj).facts.minConfidence
        view = await run_noting_spans(proj, lambda: hover_at(proj.ws, path, params.position.line, min_conf,
                                                             proj.fact_spans))
        if view is None:
            return None
        return types.Hover(
            contents=hover_contents(markdown_for(ls, proj, view.markdown), ls.client),
            range=types.Range(start=types.Position(line=view.first_line, character=0),
                              end=await end_of_line(ls, proj, uri, path, view.last_line)),
        )
