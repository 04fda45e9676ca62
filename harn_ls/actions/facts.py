"""Invalidate a fact the way Harn's `invalidate_facts("fact_…")` does (harn-formats §D.5, §C.4).

Harn translates a `fact_…` string into the dict predicate `{"id": "<fact id>"}`
and appends one memory `forget` event listing the active records it matched.
Tombstones are permanent per id (§C.3): the fact cannot be re-asserted under
the same deterministic id afterwards — the message says so.
"""

from __future__ import annotations

from harn_ls.actions import ActionFailed, append_lines
from harn_ls.actions.proposals import forget_event
from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.harn_time import now_ns
from harn_ls.model.accept_plan import confining_root
from harn_ls.util.message_text import quote


def invalidate_fact(ws, fact_id: str, now=None) -> dict:
    if not isinstance(fact_id, str) or not fact_id:
        raise ActionFailed("refused: empty fact id")
    fact = ws.facts_by_id.get(fact_id)
    if fact is None:
        raise ActionFailed(f"refused: no active fact {quote(fact_id)} (unknown, or already invalidated)")
    ns = fact.namespace
    path = ws.namespace_path(ns)
    if path is None:
        raise ActionFailed(f"refused: the log of namespace {quote(ns)} is gone")
    ws.apply_changes([path])  # someone may have invalidated it meanwhile
    space = ws.memory.get(ns)
    # `{id}` matches the memory record id; one entry per active record, as memory_forget lists them.
    ids = [r.id for r in space.records() if r.id == fact_id] if space is not None else []
    if not ids:
        raise ActionFailed(f"refused: no active memory record with id {quote(fact_id)} in {quote(ns)} (already invalidated?)")
    t = now_ns(now)
    event = forget_event(ns, {"id": fact_id}, ids, t)
    append_lines(confining_root(ws, path), path, [serde_compact(event)])
    ws.apply_changes([path])
    return {
        "message": f"Invalidated {quote(fact_id)} in {quote(ns)}"
                   " (Harn hides this id for good: re-asserting the same fact stays invisible)",
        "id": fact_id,
        "namespace": ns,
        "forget": event,
        "events_path": path,
    }
