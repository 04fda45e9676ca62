"""Import Burin's legacy pattern-learning streams once (harn-formats §E.4, seed "Migration").

Only on request: reading a project never migrates (the seed: "Read operations
never migrate or write"). Order, as Harn's `pattern_learning_ensure_migrated`:
import, then write the marker `.burin-session-store-migrated-v1.json` inside
the namespace. All memory events go out in ONE append; the marker is written
afterwards, atomically and exclusively (a second migration racing us loses).

Records are built as Harn's migration builds them (pattern_knowledge.harn
@0526ba57 `pl_migrate_*`, persistence module @12fc74ed):
* observations: `pl_observation_from_legacy` -> id, session_id, prompt
  (`pl_redact_sensitive(pl_text(..))`), tool_sequence (slugified, empty and
  `load-skill` dropped), observed_at; `source_id`, `run_id`, `evidence_kind`
  are "" (the legacy path passes none of them);
* proposals: id, kind (default `skill`), source, name, title, description,
  when_to_use through `pl_text`; body as is; support (default 0);
  sample_prompts; tool_sequence; created_at / last_seen_at from the legacy
  record, else now; nothing else;
* state: replaced with the legacy `enabled` (default true) and
  `suppressedUntil` (default {}).

One decision of ours, for crash safety: records already active (or
tombstoned) are not stored again and an identical state is not replaced, so
re-running after a crash between the append and the marker adds nothing twice.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from typing import Any

from harn_ls.actions import ActionFailed, append_lines, atomic_write
from harn_ls.actions.proposals import NAMESPACE, _ids_with_key, _refresh, forget_event, pattern_store_event
from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats.checkpoints import render_checkpoint_json
from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.harn_time import iso_millis, now_ns
from harn_ls.model.accept_plan import confining_root


def normalize_tools(tools: list[str]) -> list[str]:
    out = []
    for tool in tools:
        slug = pl_fmt.slugify(tool)
        if slug and slug != "load-skill":
            out.append(slug)
    return out


def _observation_events(observations: Iterable[Any], known: set[str], now_iso: str,
                        counts: dict[str, int]) -> list[dict[str, Any]]:
    """pl_migrate_observations: a store event per legacy observation Harn would keep (a prompt, an id
    not stored or forgotten yet), counted in `counts`."""
    out: list[dict[str, Any]] = []
    for obs in observations:
        prompt = pl_fmt.redact_prompt(obs.prompt)
        if not prompt:  # HARN-PATTERN-001: Harn refuses an empty prompt
            counts["skipped"] += 1
            continue
        oid = obs.id or str(uuid.uuid4())
        if oid in known:
            counts["skipped"] += 1
            continue
        value = pl_fmt.pattern_record_value({
            "id": oid, "session_id": obs.session_id, "prompt": prompt,
            "tool_sequence": normalize_tools(obs.tool_sequence), "observed_at": obs.observed_at or now_iso,
            "source_id": "", "run_id": "", "evidence_kind": "",  # pl_observation_from_legacy passes none
        }, "observation")
        out.append(pattern_store_event(NAMESPACE, oid, pl_fmt.pattern_record_key("observation", oid), value, now_iso,
                                       "observation"))
        known.add(oid)
        counts["observations"] += 1
    return out


def migrate_pattern_learning(ws, now=None) -> dict:
    paths = ws.paths
    marker = pl_fmt.migration_marker_path(paths.pattern_learning_dir)
    if os.path.lexists(marker):
        return {"migrated": False, "message": "already migrated (the marker exists); nothing written",
                "marker_path": marker}
    legacy = pl_fmt.read_legacy_streams(paths.state_root)
    if not legacy.paths:
        return {"migrated": False, "message": "no legacy Burin pattern-learning streams; nothing written"}

    t = now_ns(now)
    now_iso = iso_millis(t)
    events_path = _refresh(ws, NAMESPACE)
    root = confining_root(ws, events_path)
    confining_root(ws, marker)
    space = ws.memory.get(NAMESPACE)
    # ids stored or forgotten already: an observation is never stored twice
    known = ({r.id for r in space.records()} | set(space.forgotten)) if space is not None else set()
    counts = {"observations": 0, "proposals": 0, "state": 0, "skipped": 0}
    events = _observation_events(legacy.observations, known, now_iso, counts)

    for prop in legacy.proposals:
        if _ids_with_key(space, pl_fmt.pattern_record_key("pending", prop.id)):
            counts["skipped"] += 1
            continue
        t_ = pl_fmt.pl_text
        if not t_(prop.id):  # Harn stores only proposals with an id
            counts["skipped"] += 1
            continue
        record: dict[str, Any] = {  # pl_migrate_pending's `normalized`, field for field
            "id": t_(prop.id), "kind": t_(prop.kind) or "skill", "source": t_(prop.source), "name": t_(prop.name),
            "title": t_(prop.title), "description": t_(prop.description), "when_to_use": t_(prop.when_to_use),
            "body": "" if prop.body is None else str(prop.body), "support": prop.support if prop.support is not None else 0,
            "sample_prompts": list(prop.sample_prompts or []), "tool_sequence": list(prop.tool_sequence or []),
            "created_at": t_(prop.created_at or now_iso),
            "last_seen_at": t_(prop.last_seen_at or now_iso),
        }
        value = pl_fmt.pattern_record_value(record, "pending")
        rid = pl_fmt.pending_record_id(record["id"], now_iso, str(uuid.uuid4()))
        events.append(pattern_store_event(NAMESPACE, rid, pl_fmt.pattern_record_key("pending", record["id"]), value, now_iso,
                                          "pending"))
        counts["proposals"] += 1

    # pl_migrate_state always replaces the state: a missing legacy state stream reads as the
    # fallback {enabled: true, suppressedUntil: {}} (pl_project_value).
    legacy_state = legacy.state if legacy.state is not None else pl_fmt.PatternState()
    current = ws.pattern.state if ws.pattern is not None else pl_fmt.PatternState()
    merged = dict(legacy_state.suppressed_until)  # pl_replace_state: the legacy value replaces the current one
    enabled = True if legacy_state.enabled is None else legacy_state.enabled
    unchanged = current.record is not None and current.enabled == enabled \
        and current.suppressed_until == merged
    if unchanged:
        counts["skipped"] += 1
    else:
        value = pl_fmt.pattern_record_value(
            {"enabled": enabled, "suppressed_until": merged, "updated_at": now_iso}, "state")
        events.append(forget_event(NAMESPACE, {"key": "state"}, _ids_with_key(space, "state"), t))
        events.append(pattern_store_event(NAMESPACE, pl_fmt.state_record_id(now_iso, str(uuid.uuid4())),
                                          "state", value, now_iso, "state"))
        counts["state"] = 1

    if events:
        append_lines(root, events_path, [serde_compact(e) for e in events])
    marker_text = render_checkpoint_json({"migrated_at": now_iso, "schema": pl_fmt.SCHEMA})
    try:
        atomic_write(root, marker, marker_text, exclusive=True)
    except ActionFailed:
        # Someone else finished a migration meanwhile; our events were deduplicated against theirs
        # only up to our re-read, which is the best Harn itself does.
        ws.apply_changes([events_path, marker])
        raise
    ws.apply_changes([events_path, marker])
    return {
        "migrated": True,
        "message": (f"Imported {counts['observations']:d} observation(s), {counts['proposals']:d} proposal(s)"
                    + (" and the state" if counts["state"] else "") + " from Burin's legacy streams"),
        "counts": counts,
        "events_path": events_path,
        "marker_path": marker,
        "legacy_paths": dict(legacy.paths),
        "problems": [p.message for p in legacy.problems],
    }
