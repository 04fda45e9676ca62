"""`workspace/symbol` as plain data: facts, memory keys, skills, proposals and runs for a query.

Facts and memory records are ranked exactly as Harn's recall ranks them; skills, pending
proposals and runs follow, matched by substring of their names. Names and containers are
one-line text, capped (data from the project)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harn_ls.render.limits import DESCRIPTION_BYTES, LABEL_BYTES, one_line
from harn_ls.render.uri import make_uri

if TYPE_CHECKING:
    from harn_ls.formats.fact_types import Fact
    from harn_ls.model.workspace import Workspace

LIMIT = 200
RECALL_K = 100
PATTERN_NAMESPACE = "project/pattern-learning"

# Symbol kinds by role (lsp/symbols.py maps them to LSP SymbolKind values).
FACT, MEMORY, SKILL, PROPOSAL, RUN = "fact", "memory", "skill", "proposal", "run"


@dataclass(frozen=True)
class SymbolView:
    """One workspace symbol: a fact, record, skill, proposal or run."""

    name: str
    kind: str  # FACT MEMORY SKILL PROPOSAL RUN
    container: str
    uri: str = ""  # a harn-state: document, or "" when `path` is set
    path: str = ""  # an absolute source file path (the client gets a file: URI)
    line: int = 0  # 0-based line in `path`


def _name(text: object) -> str:
    return one_line(text, min(80, LABEL_BYTES)) or "?"


def _container(text: object) -> str:
    return one_line(text, DESCRIPTION_BYTES)


def _fact_symbol(ws: Workspace, fact: Fact) -> SymbolView:
    """A fact opens at its first `file_range` evidence when it has one, else its document."""
    rng = next((e.range for e in fact.evidence if e.range is not None), None)
    container = _container(f"fact · {fact.kind} {fact.confidence:g}")
    if rng is not None:
        return SymbolView(_name(fact.claim), FACT, container, path=os.path.join(ws.root, rng.path), line=rng.start - 1)
    return SymbolView(_name(fact.claim), FACT, container, uri=make_uri("facts", fact.id))


def _recalled(ws: Workspace, query: str) -> list[SymbolView]:
    out: list[SymbolView] = []
    for hit in ws.recall.recall(query, k=RECALL_K).hits:
        if hit.namespace == PATTERN_NAMESPACE:
            continue  # pattern-learning bookkeeping; proposals are listed by name below
        fact = ws.facts.get((hit.namespace, hit.seq))
        if fact is not None:
            out.append(_fact_symbol(ws, fact))
        else:
            out.append(SymbolView(_name(hit.key), MEMORY, _container(f"memory · {hit.namespace}"),
                                  uri=make_uri("memory", hit.namespace)))
    return out


def _named(ws: Workspace, q: str) -> list[SymbolView]:
    out: list[SymbolView] = []
    if ws.skills is not None:
        for sk in ws.skills.skills:
            if q in sk.id.lower() or q in (sk.short or "").lower():
                out.append(SymbolView(_name(sk.id), SKILL, _container(f"skill · {sk.layer}"), path=sk.path))
    for p in ws.pending_proposals():
        if q in p.name.lower() or q in (p.title or "").lower() or q in p.id.lower():
            out.append(SymbolView(_name(p.title or p.name), PROPOSAL, "pending proposal", uri=make_uri("proposals", p.id)))
    for run in ws.runs.values():
        if q in run.id.lower() or q in (run.workflow_name or "").lower():
            out.append(SymbolView(_name(run.workflow_name or run.id), RUN, _container(f"run · {run.status}"),
                                  uri=make_uri("runs", run.id)))
    return out


def search_symbols(ws: Workspace, query: str, files_only: bool = False) -> list[SymbolView]:
    """At most `LIMIT` symbols: recall hits first (in recall order), then names containing the
    query (case-insensitive). An empty query lists the first `LIMIT` facts and every name.
    `files_only`: only symbols at a file (for a client that cannot open harn-state: documents),
    chosen before the limit, so that state documents do not take the places of files."""
    q = query.strip().lower()
    if q:
        out = _recalled(ws, query)
    else:
        out = [SymbolView(_name(f.claim), FACT, _container(f"fact · {f.kind}"), uri=make_uri("facts", f.id))
               for f in list(ws.facts.values())[:LIMIT]]
    found = out + _named(ws, q)
    if files_only:
        found = [v for v in found if v.path]
    return found[:LIMIT]
