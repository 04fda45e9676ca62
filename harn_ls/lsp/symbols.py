"""`workspace/symbol`: the symbols of render/symbols.py, as LSP WorkspaceSymbols, within 1 MB.

A client that did not declare `workspace.textDocumentContent` cannot open a `harn-state:` document:
it gets only the symbols at files (facts at their `file_range` evidence, skills at their SKILL.md),
not locations that would open an empty buffer."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls.lsp.project_links import link_root
from harn_ls.render import symbols as S
from harn_ls.render.limits import MAX_RESPONSE_BYTES
from harn_ls.render.uri import with_root
from harn_ls.util.utf8 import utf8_len

LIMIT = S.LIMIT
_KINDS = {S.FACT: types.SymbolKind.Constant, S.MEMORY: types.SymbolKind.Field, S.SKILL: types.SymbolKind.Module,
          S.PROPOSAL: types.SymbolKind.Event, S.RUN: types.SymbolKind.Function}


def _symbol_bytes(sym: types.WorkspaceSymbol) -> int:
    loc = sym.location
    return utf8_len(sym.name) + utf8_len(sym.container_name or "") + utf8_len(getattr(loc, "uri", "")) + 120


def within_response(symbols: list) -> list:
    """Symbols in order until the response would pass `MAX_RESPONSE_BYTES` (names are capped, but a
    location URI carries an id from data)."""
    out, total = [], 0
    for sym in symbols:
        total += _symbol_bytes(sym)
        if total > MAX_RESPONSE_BYTES:
            break
        out.append(sym)
    return out


def to_symbol(view: S.SymbolView) -> types.WorkspaceSymbol:
    uri = from_fs_path(view.path) if view.path else view.uri
    pos = types.Position(line=view.line, character=0)
    return types.WorkspaceSymbol(name=view.name, kind=_KINDS[view.kind], container_name=view.container,
                                 location=types.Location(uri=uri, range=types.Range(start=pos, end=pos)))


def search_symbols(ws, query: str, files_only: bool = False) -> list[types.WorkspaceSymbol]:
    return within_response([to_symbol(v) for v in S.search_symbols(ws, query, files_only)])


def register(server) -> None:
    @server.handler(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(ls, params: types.WorkspaceSymbolParams):
        out: list[types.WorkspaceSymbol] = []
        await ls.wait_for_projects()
        for proj in ls.projects.values():
            if proj.ws is not None:
                # a client that cannot open harn-state: documents gets symbols at files only
                files_only = not ls.client.text_document_content
                found = await proj.run(lambda p=proj, f=files_only: search_symbols(p.ws, params.query, f))
                root = link_root(ls, proj)
                if root:  # several projects: a harn-state: location names its own
                    for sym in found:
                        sym.location.uri = with_root(sym.location.uri, root)
                out.extend(found)
        return within_response(out[:LIMIT])
