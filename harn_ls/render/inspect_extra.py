"""The `inspect` sections for event logs, HITL and the rest of `.harn/` (issue 16), as JSON and
as text. Kept apart from render/state_docs.py (their Markdown documents): printing them needs the
loaded state only, not the URI, Markdown and HITL helpers the documents load."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from harn_ls.render.shown_path import shown_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from harn_ls.formats.newer_state import NewerState
    from harn_ls.model.workspace import Workspace
    from harn_ls.util.json_types import JsonObject


def inspect_extra(ws: Workspace) -> JsonObject:
    """The `inspect --json` sections for event logs, HITL and the rest of `.harn/`."""
    x = ws.event_logs
    rel = partial(shown_path, ws)
    return {
        "event_logs": [
            {"label": v.label, "backend": v.loc.backend, "path": rel(v.path), "state_dir": rel(v.loc.state_dir),
             "topics": [t.to_json() for t in sorted(v.summary.topics.values(), key=lambda t: t.topic)],
             "consumers": [c.to_json() for c in v.summary.consumers]}
            for v in x.existing_logs()
        ],
        "hitl": {
            "waiting": [r.to_json() for r in x.waiting()],
            "resolved": [r.to_json() for r in x.all_requests() if not r.is_waiting],
        },
        "store": None if x.store is None else {"path": rel(x.store.path), "keys": sorted(x.store.entries)},
        "orchestrator_store": None if x.orchestrator_store is None else {
            "path": rel(x.orchestrator_store.path), "keys": sorted(x.orchestrator_store.entries)},
        "workflows": [{"workflow_id": m.workflow_id, "path": rel(m.path), "pending": len(m.pending), "paused": m.paused,
                       "unanswered_updates": m.unanswered_updates} for m in x.mailboxes],
        "receipts": [r.to_json() | {"path": rel(r.path)} for r in x.receipts],
        "worktrees": [{"name": w.name, "path": rel(w.path), "branch": w.branch, "stale": w.stale, "reason": w.reason}
                      for w in x.worktrees],
        "crystallization": [{"id": c.id, "path": rel(c.path), "layout": c.layout, "shadowed": [rel(p) for p in c.shadowed],
                             "complete": c.complete, "files": c.files,
                             "kind": c.proposal.get("kind"), "name": c.proposal.get("name")} for c in x.candidates],
        "locks": [{"path": rel(lk.path), "kind": lk.kind, "name": lk.name, "held": lk.held} for lk in x.locks],
        "embed_cache": [{"namespace": e.namespace, "model_hint": e.model_hint, "vectors": e.vectors, "bytes": e.bytes}
                        for e in x.embed],
        "newer_state": _newer(x.newer, rel, x.idempotency_keys() if x.newer is not None else {}),
    }


def _newer(n: NewerState | None, rel: Callable[[str], str], keys: dict[str, int]) -> JsonObject | None:
    """Issue 28: counts, sizes, newest, model names — never a cached prompt or response."""
    if n is None or (n.empty and not any(keys.values())):
        return None
    sq = n.llm_sqlite
    return {
        "llm_cache_sqlite": None if sq is None else {**sq, "path": rel(sq["path"])},
        "llm_cache_files": n.llm_files,
        "selection": None if n.selection is None else {**n.selection, "path": rel(n.selection["path"])},
        "guard_models": [{**g, "path": rel(g["path"])} for g in n.guard],
        "orchestrator_state": None if n.orchestrator is None else {**n.orchestrator, "path": rel(n.orchestrator["path"])},
        "metadata": None if n.metadata is None else {**n.metadata, "path": rel(n.metadata["path"])},
        "idempotency_keys": keys,
    }


def inspect_extra_text(data: JsonObject) -> list[str]:
    out: list[str] = []
    logs = data["event_logs"]
    out.append(f"event logs       {len(logs)}")
    for lg in logs:
        out.append(f"  {lg['label']:<16} {lg['path']}  {len(lg['topics'])} topic(s), "
                   f"{sum(t['count'] for t in lg['topics'])} event(s)")
        for t in lg["topics"][:30]:
            out.append(f"    {t['topic'][:60]:<60} {t['count']:>7}  last {t['last_id']}")
        for c in lg["consumers"]:
            out.append(f"    consumer {c['consumer_id']} on {c['topic']}: cursor {c['cursor']}, lag {c['lag']}")
    waiting = data["hitl"]["waiting"]
    out.append(f"waiting for you  {len(waiting)} request(s), {len(data['hitl']['resolved'])} resolved")
    for r in waiting:
        out.append(f"  {r['kind']:<12} {r['state']:<20} {r['request_id']}  {r['prompt'][:50]}")
    st = data["store"]
    out.append("store            " + (f"{len(st['keys'])} key(s)" if st else "none"))
    out.append(f"workflows        {len(data['workflows'])} mailbox(es), "
               f"{sum(m['pending'] for m in data['workflows'])} pending message(s)")
    out.append(f"receipts         {len(data['receipts'])}")
    for r in data["receipts"]:
        out.append(f"  {r['id']:<48} {r['label']}" + (f"  {r['errors'][0]}" if r["errors"] else ""))
    out.append(f"worktrees        {len(data['worktrees'])}" +
               (f" ({sum(1 for w in data['worktrees'] if w['stale'])} stale)" if data["worktrees"] else ""))
    for w in data["worktrees"]:
        out.append(f"  {w['name']:<48} {'STALE: ' + w['reason'] if w['stale'] else w['branch']}")
    out.append(f"crystallization  {len(data['crystallization'])} candidate(s)")
    for c in data["crystallization"]:
        out.append(f"  {c['id']:<32} {len(c['files'])} file(s)" + ("" if c["complete"] else "  (incomplete)"))
    held = [lk for lk in data["locks"] if lk["held"]]
    out.append(f"locks            {len(data['locks'])} lock file(s), {len(held)} held (running now)")
    for lk in held:
        out.append(f"  running: {lk['kind']} {lk['name']}")
    out.append(f"embedding cache  {sum(e['vectors'] for e in data['embed_cache'])} vector(s) in "
               f"{len(data['embed_cache'])} folder(s)")
    return out
