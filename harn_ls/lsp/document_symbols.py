"""`textDocument/documentSymbol` for the documents harn-ls owns: the outline (Markdown headings) of
a `harn-state:` document as the client gets it, and of a Markdown state file (SKILL.md and the
other `.md` files under the project's state and skill roots). Any other document: null (not ours).

Hierarchical `DocumentSymbol`s to a client that declared hierarchicalDocumentSymbolSupport,
flat `SymbolInformation`s (with their container's name) to any other; columns in the session's
position encoding."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls import contract as P
from harn_ls.lsp import documents
from harn_ls.render.outline import Heading, outline
from harn_ls.util.text_positions import LINE_BREAK_RE, units_len

MAX_TEXT_CHARS = 4 * 1024 * 1024  # the outline of a bigger state file covers its first 4 MB


async def _owned_markdown(ls, uri: str) -> bool:
    """A `.md` file under one of its project's state or skill roots (confined to the project)."""
    path = to_fs_path(uri)
    if not path or not path.endswith(".md"):
        return False
    proj = ls.project_for_path(path)
    if proj is None or proj.ws is None:
        return False
    roots = await proj.run_before_facts(lambda: proj.ws.paths.watch_roots())  # the model is the project thread's
    return any(path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _ranges(lines: list[str], h: Heading, encoding: str) -> tuple[types.Range, types.Range]:
    end_line = min(h.end_line, len(lines) - 1)
    whole = types.Range(start=types.Position(line=h.line, character=0),
                        end=types.Position(line=end_line, character=units_len(lines[end_line], encoding)))
    head = types.Range(start=types.Position(line=h.line, character=0),
                       end=types.Position(line=h.line, character=units_len(lines[h.line], encoding)))
    return whole, head


def symbols_for(text: str, uri: str, encoding: str, hierarchical: bool) -> list:
    lines = LINE_BREAK_RE.split(text)
    heads = outline(text)
    if not hierarchical:
        out: list[types.SymbolInformation] = []
        parents: list[Heading] = []
        for h in heads:
            while parents and parents[-1].level >= h.level:
                parents.pop()
            whole, _ = _ranges(lines, h, encoding)
            out.append(types.SymbolInformation(name=h.title, kind=types.SymbolKind.String,
                                               location=types.Location(uri=uri, range=whole),
                                               container_name=parents[-1].title if parents else None))
            parents.append(h)
        return out
    roots: list[types.DocumentSymbol] = []
    stack: list[tuple[int, list[types.DocumentSymbol]]] = []  # (level, children) of the open headings
    for h in heads:
        whole, head = _ranges(lines, h, encoding)
        children: list[types.DocumentSymbol] = []
        sym = types.DocumentSymbol(name=h.title, kind=types.SymbolKind.String, range=whole,
                                   selection_range=head, children=children)
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        (stack[-1][1] if stack else roots).append(sym)
        stack.append((h.level, children))
    return roots


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(ls, params: types.DocumentSymbolParams):
        uri = params.text_document.uri
        if uri.startswith(P.SCHEME + ":"):
            text = await documents.render(ls, uri)
        else:
            await ls.wait_for_projects()
            if not await _owned_markdown(ls, uri):
                return None
            try:
                text = ls.workspace.get_text_document(uri).source[:MAX_TEXT_CHARS]
            except OSError:
                return None
        return symbols_for(text, uri, ls.position_encoding, ls.client.hierarchical_symbols)
