"""`harn-ls inspect`: everything found in a project, as JSON or a readable summary."""

from __future__ import annotations

import heapq
import os
from typing import TYPE_CHECKING, cast

import orjson

from harn_ls.cache.rows import FACT_SEPARATOR, fact_inspect_entry, fact_inspect_fragment, join_fact_fragments, split_fact_body
from harn_ls.formats.harn_time import date_now_iso
from harn_ls.formats.locks import checkpoint_running, open_flock_table, running_session_writers, session_running
from harn_ls.formats.pattern_learning import is_suppressed
from harn_ls.render.inspect_extra import inspect_extra, inspect_extra_text
from harn_ls.render.shown_path import shown_path
from harn_ls.util.json_types import JsonObject

if TYPE_CHECKING:
    from harn_ls.formats.fact_types import Fact
    from harn_ls.model.workspace import Workspace


def inspect_json(ws: Workspace, facts_fragment: bool = False) -> JsonObject:
    """Everything found, as `inspect --json` prints it. `facts_fragment`: the "facts" list may be an
    orjson.Fragment (the bytes orjson would write for it at that depth, with INSPECT_JSON_OPTIONS),
    taken from the state cache for the namespaces whose facts were not decoded."""
    p = ws.paths
    now = date_now_iso()
    pattern = ws.pattern
    pending = pattern.pending if pattern else []
    state = pattern.state if pattern else None
    skills_by_layer: dict[str, list[JsonObject]] = {}
    if ws.skills is not None:
        for sk in ws.skills.skills + ws.skills.shadowed:
            skills_by_layer.setdefault(sk.layer, []).append({
                "id": sk.id, "path": shown_path(ws, sk.path), "shadowed_by": sk.shadowed_by,
                "signature": sk.signature.status if sk.signature is not None else None, "loadable": sk.loadable,
                "signature_label": sk.signature.label if sk.signature is not None else None,
            })
    problems = [pr.to_json() | {"path": shown_path(ws, pr.path)} for pr in ws.problems()]
    # "running": a Harn process holds the lock file right now (None: cannot tell on this system); the
    # kernel's table is read only if some lock file exists
    locks = open_flock_table()
    return {
        "roots": {
            "project": p.project_root, "state": p.state_root, "runs": p.run_root, "memory": p.memory_root,
            "pattern_memory": p.pattern_memory_root,
            "skills": [{"layer": r.layer, "path": r.path, "exists": os.path.isdir(r.path)} for r in p.skill_roots],
        },
        "counts": ws.counts(),
        "checkpoints": [
            {"pipeline": name, "path": ws.relpath(cf.path), "retry": cf.retry, "running": checkpoint_running(cf.path, locks),
             "stages": [{"key": e.key, "keyed": e.keyed, "fingerprint": e.fingerprint} for e in cf.entries.values()]}
            for name, cf in sorted(ws.checkpoints.items())
        ],
        "memory": [
            {"namespace": ns, "path": ws.relpath(s.path), "events": s.event_count, "active": sizes[0],
             "forgotten_ids": sizes[1], "hidden_by_tombstone": sizes[2], "config": s.config}
            for ns, s, sizes in ((ns, s, s.sizes()) for ns, s in sorted(ws.memory.items()))
        ],
        "facts": _facts(ws, facts_fragment),
        "pattern_learning": {
            "observations": len(pattern.observations) if pattern else 0,
            "pending": [
                {"id": pr.id, "name": pr.name, "kind": pr.kind, "source": pr.source, "support": pr.support,
                 "suppressed": is_suppressed(pr.id, state, now)}
                for pr in pending
            ],
            "state": None if state is None else {"enabled": state.enabled, "suppressed_until": state.suppressed_until,
                                                 "updated_at": state.updated_at},
            "legacy_streams": sorted(ws.legacy_streams),
            "migration_needed": ws.migration_needed,
        },
        "skills": skills_by_layer,
        "runs": [
            {"id": r.id, "status": r.status, "path": ws.relpath(r.path), "transcripts": [t.id for t in r.transcripts]}
            for r in sorted(ws.runs.values(), key=lambda r: r.id)
        ],
        "transcripts": sorted(ws.transcripts),
        "sessions": None if ws.sessions is None else {
            "schema_version": ws.sessions.schema_version,
            "sessions": [{"id": s.id, "title": s.title, "status": s.status, "events": s.event_count,
                          "running": session_running(ws.sessions.path, s.id, locks)} for s in ws.sessions.sessions],
            "running_writers": running_session_writers(ws.sessions.path, locks),
        },
        "problems": problems,
    } | inspect_extra(ws)


def _facts(ws: Workspace, as_fragment: bool) -> orjson.Fragment | list[JsonObject]:
    body = _cached_facts_body(ws) if as_fragment else None
    if body is not None:
        return orjson.Fragment(join_fact_fragments(body))
    ws.materialize_facts()
    return [fact_inspect_entry(f) for f in sorted(ws.facts.values(), key=lambda f: f.id)]


def _cached_facts_body(ws: Workspace) -> bytes | memoryview | None:
    """The entries of the "facts" list as `sorted(ws.facts.values(), key=id)` would give them had every
    cached fact been decoded, joined by FACT_SEPARATOR; None when some cached form is not usable (then
    the facts are decoded).

    Decoded, a namespace's facts are one run of `ws.facts` (a load restores or reads one namespace at a
    time, in `ws.memory` order) in the cached entry order, then those of lines appended since (a deferred
    namespace keeps them apart: Workspace._restore_pending_facts); each part is sorted stably by id (the
    cached ones when saved), and merging the parts in that order keeps ties in that order."""
    deferred = ws.deferred_fact_namespaces()
    if not deferred:
        return None
    position = {ns: i for i, ns in enumerate(ws.memory)}
    decoded: dict[str, list[Fact]] = {}
    last = -1
    for (ns, _seq), f in ws.facts.items():
        i = position.get(ns, -1)
        if i < 0 or i < last:
            return None  # not one run per namespace in namespace order: decode and sort them all
        last = i
        decoded.setdefault(ns, []).append(f)
    if not decoded:
        holding = [ns for ns in ws.memory if ns in deferred and ws.cached_fact_count(ns)]
        if len(holding) == 1:  # one namespace holds every fact: its cached body is the whole list
            return ws.cached_inspect_fact_body(holding[0])  # (None: not intact, decode them all)
    # per part with facts, in namespace order: (ids by id, cached body or None, ends or fragments): the
    # ends (list[int]) of the entries in a cached body, else the fragments (list[bytes]) themselves
    parts: list[tuple[list[str], bytes | None, list[int] | list[bytes]]] = []
    for ns in ws.memory:
        if ns in deferred:
            cached = ws.cached_inspect_facts(ns)
            if cached is None:
                return None
            ids, ends, body = cached
            if ids:
                parts.append((ids, body, ends))
        if ns in decoded:
            facts = sorted(decoded[ns], key=lambda f: f.id)
            parts.append(([f.id for f in facts], None, [fact_inspect_fragment(f) for f in facts]))
    if len(parts) == 1 and parts[0][1] is not None:
        return parts[0][1]  # one namespace holds every fact: its cached body is the whole list
    runs = [zip(ids, cast("list[bytes]", rest) if body is None else split_fact_body(body, cast("list[int]", rest)),
                strict=True) for ids, body, rest in parts]  # (one entry per id, cached or decoded)
    return FACT_SEPARATOR.join(frag for _id, frag in heapq.merge(*runs, key=lambda e: e[0]))


def inspect_text(ws: Workspace) -> str:
    data = inspect_json(ws)
    c = data["counts"]
    out = [f"harn-ls: {data['roots']['project']}", ""]
    out.append("roots")
    for label in ("state", "runs", "memory", "pattern_memory"):
        path = data["roots"][label]
        out.append(f"  {label:<15} {path}{'' if os.path.isdir(path) else '  (missing)'}")
    out.append("")
    out.append(f"checkpoints      {c['checkpoints']} file(s), {c['checkpointKeys']} stage(s)")
    for cp in data["checkpoints"]:
        keyed = sum(1 for s in cp["stages"] if s["keyed"])
        out.append(f"  {cp['pipeline']:<20} {len(cp['stages'])} stage(s), {keyed} keyed" + ("  UNREADABLE" if cp["retry"] else "")
                   + ("  WRITING NOW" if cp["running"] else ""))
    out.append(f"memory           {c['namespaces']} namespace(s), {c['records']} active record(s)")
    for m in data["memory"]:
        out.append(f"  {m['namespace']:<28} {m['active']:>5} active {m['events']:>6} events  "
                   f"backend {m['config'].get('backend')}")
    out.append(f"facts            {c['facts']}")
    for f in data["facts"][:12]:
        rng = f" @ {f['ranges'][0]}" if f["ranges"] else ""
        out.append(f"  {f['confidence']:<5g} {f['kind']:<12} {f['claim'][:60]}{rng}")
    pl = data["pattern_learning"]
    visible = [p for p in pl["pending"] if not p["suppressed"]]
    out.append(f"pattern learning {pl['observations']} observation(s), {len(visible)} pending proposal(s)"
               f" (+{len(pl['pending']) - len(visible)} suppressed)")
    for p in pl["pending"]:
        out.append(f"  {p['id']:<24} {p['kind']:<14} support {p['support']:<3} {p['name']}"
                   + ("  [suppressed]" if p["suppressed"] else ""))
    if pl["migration_needed"]:
        out.append("  legacy Burin streams found, not migrated")
    n_sk = sum(len(v) for v in data["skills"].values())
    out.append(f"skills           {c['skills']} loaded, {n_sk} file(s) in {len(data['skills'])} layer(s)")
    for layer, items in data["skills"].items():
        for s in items:
            extra = []
            if s["signature"] and s["signature"] != "missing_signature":
                extra.append(f"signature {s.get('signature_label') or s['signature']}")
            if s["shadowed_by"]:
                extra.append(f"shadowed by {s['shadowed_by']}")
            if not s["loadable"]:
                extra.append("not loadable")
            out.append(f"  {layer:<9} {s['id']:<28} {', '.join(extra)}")
    out.append(f"runs             {c['runs']} run(s), {c['transcripts']} transcript(s)")
    for r in data["runs"]:
        out.append(f"  {r['id']:<44} {r['status'] or '?'}")
    ss = data["sessions"]
    out.append(f"sessions         {c['sessions']}" + (f" (schema v{ss['schema_version']})" if ss else " (no session store)"))
    out.extend(inspect_extra_text(data))
    out.append("")
    probs = data["problems"]
    out.append(f"problems         {len(probs)}")
    for pr in probs:
        out.append(f"  {pr['path']}:{pr['line']}: {pr['severity']} {pr['code']}: {pr['message']}")
    return "\n".join(out) + "\n"
