"""`textDocument/documentSymbol` for the documents harn-ls owns: the outline (Markdown headings) of
a `harn-state:` document as the client gets it, and of a Markdown state file (SKILL.md and the
other `.md` files under the project's state and skill roots). Any other document: null (not ours).

Hierarchical `DocumentSymbol`s to a client that declared hierarchicalDocumentSymbolSupport,
flat `SymbolInformation`s (with their container's name) to any other; columns in the session's
position encoding."""

from __future__ import annotations

import os

from lsprotocol import types

from harn_ls import contract as P
from harn_ls.lsp import documents
from harn_ls.lsp.file_uris import file_path
from harn_ls.render.outline import Heading, outline
from harn_ls.util.safe_read import ReadRefused, read_confined
from harn_ls.util.text_positions import LINE_BREAK_RE, units_len

MAX_TEXT_CHARS = 4 * 1024 * 1024  # the outline of a bigger open document covers its first 4 MB
MAX_TEXT_BYTES = 16 * 1024 * 1024  # a state file on disk bigger than this gets no outline


def _inside(path: str, root: str) -> bool:
    return path.startswith(root.rstrip(os.sep) + os.sep)


async def _owned_markdown_text(ls, uri: str) -> str | None:
    """The text of a `.md` file under one of its project's state or skill roots, else None (not ours).

    The URI is the client's: `..` segments and links are resolved before the roots are compared (a
    `…/.harn/skills/../../../proj-evil/x.md` is not the project's), and a file the client has not
    opened is read through safe_read on the project's thread (a regular file inside the project, at
    most MAX_TEXT_BYTES: a FIFO is refused, never waited on)."""
    path = file_path(uri)
    if not path or not path.endswith(".md"):
        return None
    proj = ls.project_for_path(os.path.normpath(path))
    if proj is None or proj.ws is None:
        return None
    ws = proj.ws
    opened = ls.workspace.text_documents.get(uri)  # (the client's open documents are the loop's)
    opened_text = str(opened.source[:MAX_TEXT_CHARS]) if opened is not None else None

    def read() -> str | None:
        real = os.path.realpath(path)
        if not any(_inside(real, os.path.realpath(root)) for root in ws.paths.watch_roots()):
            return None
        if opened_text is not None:
            return opened_text
        try:
            data = read_confined(real, ws.root, MAX_TEXT_BYTES)
        except (ReadRefused, OSError):
            return None
        return data.decode("utf-8", errors="replace")[:MAX_TEXT_CHARS]

    return await proj.run_before_facts(read)  # the model (and file reads) are the project thread's


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
            owned = await _owned_markdown_text(ls, uri)
            if owned is None:
                return None
            text = owned
        return symbols_for(text, uri, ls.position_encoding, ls.client.hierarchical_symbols)
