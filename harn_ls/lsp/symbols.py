"""`workspace/symbol`: facts, memory keys, skills, proposals and runs, ranked by the recall engine."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls.render import make_uri
from harn_ls.render.limits import DESCRIPTION_BYTES, LABEL_BYTES, MAX_RESPONSE_BYTES, one_line, utf8_len

LIMIT = 200
_ZERO = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))


def _name(text) -> str:
    return one_line(text, min(80, LABEL_BYTES)) or "?"


def _container(text) -> str:
    return one_line(text, DESCRIPTION_BYTES)


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


def _loc(uri: str, line: int = 0) -> types.Location:
    return types.Location(uri=uri, range=types.Range(start=types.Position(line=line, character=0),
                                                     end=types.Position(line=line, character=0)))


def search_symbols(ws, query: str) -> list[types.WorkspaceSymbol]:
    q = query.strip().lower()
    out: list[types.WorkspaceSymbol] = []
    seen: set[str] = set()
    # Memory records and facts: ranked exactly as Harn's recall ranks them.
    if q:
        result = ws.recall.recall(query, k=100)
        for hit in result.hits:
            if hit.namespace == "project/pattern-learning":
                continue  # pattern-learning bookkeeping; proposals are listed by name below
            fact = ws.facts.get((hit.namespace, hit.seq))
            if fact is not None:
                rng = next((e.range for e in fact.evidence if e.range is not None), None)
                loc = _loc(from_fs_path(os.path.join(ws.root, rng.path)), rng.start - 1) if rng else _loc(make_uri("facts", fact.id))
                out.append(types.WorkspaceSymbol(name=_name(fact.claim), kind=types.SymbolKind.Constant,
                                                 location=loc, container_name=_container(f"fact · {fact.kind} {fact.confidence:g}")))
                seen.add(fact.id)
            else:
                out.append(types.WorkspaceSymbol(name=_name(hit.key), kind=types.SymbolKind.Field,
                                                 location=_loc(make_uri("memory", hit.namespace)),
                                                 container_name=_container(f"memory · {hit.namespace}")))
    else:
        for fact in list(ws.facts.values())[:LIMIT]:
            out.append(types.WorkspaceSymbol(name=_name(fact.claim), kind=types.SymbolKind.Constant,
                                             location=_loc(make_uri("facts", fact.id)), container_name=_container(f"fact · {fact.kind}")))
    # Names of skills, proposals and runs: substring match.
    if ws.skills is not None:
        for sk in ws.skills.skills:
            if q in sk.id.lower() or q in (sk.short or "").lower():
                out.append(types.WorkspaceSymbol(name=_name(sk.id), kind=types.SymbolKind.Module,
                                                 location=_loc(from_fs_path(sk.path)), container_name=_container(f"skill · {sk.layer}")))
    for p in ws.pending_proposals():
        if q in p.name.lower() or q in (p.title or "").lower() or q in p.id.lower():
            out.append(types.WorkspaceSymbol(name=_name(p.title or p.name), kind=types.SymbolKind.Event,
                                             location=_loc(make_uri("proposals", p.id)), container_name="pending proposal"))
    for run in ws.runs.values():
        if q in run.id.lower() or q in (run.workflow_name or "").lower():
            out.append(types.WorkspaceSymbol(name=_name(run.workflow_name or run.id), kind=types.SymbolKind.Function,
                                             location=_loc(make_uri("runs", run.id)), container_name=_container(f"run · {run.status}")))
    return within_response(out[:LIMIT])


def register(server) -> None:
    @server.handler(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(ls, params: types.WorkspaceSymbolParams):
        out: list[types.WorkspaceSymbol] = []
        for proj in ls.projects.values():
            if proj.ws is not None:
                out.extend(await proj.run(lambda p=proj: search_symbols(p.ws, params.query)))
        return within_response(out[:LIMIT])
