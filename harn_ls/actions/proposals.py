"""Accept / reject learned-skill proposals exactly as Harn's pattern learning does (harn-formats §E).

Accept (§E.3): write the file(s) first, then append one memory `forget` event
with predicate `{"key": "pending:<id>"}`. A crash between the two leaves a
written skill and a still-pending proposal; accepting again then succeeds,
because an identical file at the target is not a conflict. Executable kinds
stage their whole candidate folder in a hidden sibling and rename it into
place, so the folder is absent or complete, never half-staged.

Reject (§E.3, §E.2): forget `{"key": "pending:<id>"}`, forget `{"key":
"state"}`, store a fresh state record with `suppressed_until[<id>]` = now +
days. The three events go out in one append, so a crash leaves all or none.

Timestamps: `suppressed_until` values are what Harn's `pl_add_days_iso`
writes, chrono's `to_rfc3339()` of now + days in UTC
(`2026-04-25T17:32:09.481+00:00`, no fraction when it is zero), computed
through Harn's own datetime steps (`pattern_learning.suppressed_until_after`).
`updated_at` / `stored_at` are `date_now_iso()` (`...SS.mmmZ`), and the
`forgotten_at` of each forget event chrono's `Utc::now().to_rfc3339()`.

A `skillRoot` other than `.claude/skills` / `.burin/skills` is outside
Harn's pattern-learning roots: Harn will not see skills there and may propose
the same skill again. `skill_root_warning` says so (Accept preview, start-up).

`planned_files` (harn_ls/model/accept_plan.py, pure) says exactly what Accept writes; this module writes it.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path
from typing import Any

from harn_ls.actions import ActionFailed, append_lines, atomic_write, atomic_write_dir, uuid7
from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats.facts import sorted_json
from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.harn_time import iso_millis, now_ns, rfc3339_nanos
from harn_ls.model.accept_plan import (  # noqa: F401 (check_skill_name, skill_root_warning: re-exported)
    EXECUTABLE_ENTRYPOINTS,
    NAMESPACE,
    Plan,
    PlannedFile,
    check_segment,
    check_skill_name,
    confining_root,
    namespace_parts,
    pattern_events_path,
    planned_files,
    skill_root_warning,
)
from harn_ls.util.message_text import quote

PROVENANCE = {"source": "harn.pattern_learning"}
MAX_REJECT_DAYS = 36500


# ---------------------------------------------------------------- reading

def _refresh(ws, namespace: str) -> str:
    """Re-read the pattern log before acting: someone (Harn, another editor) may have acted."""
    path = pattern_events_path(ws, namespace)
    ws.apply_changes([path])
    return path


def _space(ws, namespace: str):
    return ws.memory.get(namespace if namespace == NAMESPACE else "/".join(namespace_parts(namespace)))


def _pattern_view(ws, namespace: str):
    if namespace == NAMESPACE:
        return ws.pattern or pl_fmt.PatternLearning()
    space = _space(ws, namespace)
    records = space.records() if space is not None else []
    return pl_fmt.project_pattern_learning(records, pattern_events_path(ws, namespace))


def list_proposals(ws, include_suppressed: bool = False, now=None, namespace: str = NAMESPACE,
                   skill_root: str | None = None) -> list[dict]:
    """Pending proposals in Harn's order (support desc, id asc); suppressed ones only on request."""
    view = _pattern_view(ws, namespace)
    now_iso = iso_millis(now_ns(now))
    out = []
    for prop in view.pending:
        until = view.state.suppressed_until.get(prop.id) if pl_fmt.is_suppressed(prop.id, view.state, now_iso) else None
        if until is not None and not include_suppressed:
            continue
        target, error = None, None
        try:
            plan = planned_files(ws, prop, skill_root=skill_root, namespace=namespace)
            target = os.path.relpath(plan.skill_path if prop.kind == "skill" else os.path.dirname(plan.files[0].path),
                                     ws.root).replace(os.sep, "/")
        except ActionFailed as exc:
            error = str(exc)
        out.append({
            "id": prop.id,
            "name": prop.name,
            "title": prop.title,
            "kind": prop.kind,
            "source": prop.source,
            "support": prop.support,
            "suppressed_until": until,
            "target": target,
            "target_error": error,
            "record_id": prop.record.id if prop.record is not None else None,
            "enabled": view.state.enabled,
        })
    return out


# ---------------------------------------------------------------- events

def forget_event(namespace: str, predicate: Any, forgotten_ids: list[str], at_ns: int) -> dict:
    """A memory `forget` event, fields in serde's declaration order (§C.2)."""
    return {
        "type": "forget",
        "id": uuid7(at_ns),
        "namespace": namespace,
        "predicate": predicate,
        "forgotten_ids": list(forgotten_ids),
        "forgotten_at": rfc3339_nanos(at_ns),
    }


def pattern_store_event(namespace: str, record_id: str, key: str, value: dict, stored_at: str, kind: str) -> dict:
    """`pl_store_record`'s memory `store` event: text = compact value, tags sorted (§C.2, §E.1)."""
    value = sorted_json(value)  # Harn dicts are BTreeMaps: keys sorted at every level
    return {
        "type": "store",
        "id": record_id,
        "namespace": namespace,
        "key": key,
        "value": value,
        "text": serde_compact(value),
        "tags": sorted(set(pl_fmt.pattern_tags(kind))),
        "stored_at": stored_at,
        "provenance": dict(PROVENANCE),
    }


def _ids_with_key(space, key: str) -> list[str]:
    return [r.id for r in space.by_key(key)] if space is not None else []


# ---------------------------------------------------------------- accept / reject

def _pending_or_refuse(ws, proposal_id: str, namespace: str):
    """Re-read the pattern log, then the proposal if it is still pending (someone else may have acted)."""
    check_segment(proposal_id, "proposal id")
    events_path = _refresh(ws, namespace)
    prop = next((p for p in _pattern_view(ws, namespace).pending if p.id == proposal_id), None)
    if prop is None:
        raise ActionFailed(f"refused: proposal {quote(proposal_id)} is no longer pending "
                           "(accepted, rejected or refreshed away by someone else)")
    return events_path, prop


def accept_proposal(ws, proposal_id: str, skill_root: str | None = None, now=None, *,
                    namespace: str = NAMESPACE) -> dict:
    """Write the proposal's file(s), then append one `forget` of its pending record."""
    t = now_ns(now)
    events_path, prop = _pending_or_refuse(ws, proposal_id, namespace)
    plan = planned_files(ws, prop, skill_root, now=t, namespace=namespace)
    conflicts = [f.path for f in plan.files if f.conflict]
    if conflicts:
        raise ActionFailed("refused: a different file already exists at " + ", ".join(quote(c) for c in conflicts)
                           + "; compare it with the proposal instead")
    written, unchanged = _stage_candidate(ws, plan) if plan.candidate_dir else _write_files(ws, plan.files)
    space = _space(ws, namespace)
    ns_name = space.namespace if space is not None else namespace
    key = pl_fmt.pattern_record_key("pending", prop.id)
    event = forget_event(ns_name, {"key": key}, _ids_with_key(space, key), t)
    append_lines(confining_root(ws, events_path), events_path, [serde_compact(event)])
    ws.apply_changes(written + [events_path])
    rel = os.path.relpath(plan.skill_path, ws.root).replace(os.sep, "/")
    what = "staged under " + quote(os.path.relpath(os.path.dirname(plan.files[0].path), ws.root).replace(os.sep, "/")) \
        if prop.kind in EXECUTABLE_ENTRYPOINTS else f"wrote {quote(rel)}"
    return {
        "message": f"Accepted {quote(prop.name)}: " + what + (" (files already identical)" if not written else ""),
        "id": prop.id,
        "name": prop.name,
        "kind": prop.kind,
        "written": written,
        "unchanged": unchanged,
        "forget": event,
        "events_path": events_path,
        "skill_path": plan.skill_path,
        "skill_uri": Path(plan.skill_path).as_uri(),
        "warning": plan.warning,
    }


def _stage_candidate(ws, plan: Plan) -> tuple[list[str], list[str]]:
    """Stage an executable proposal's folder all or nothing.

    No folder (or an empty one) yet: every file goes into a hidden staging
    folder next to it, which one rename(2) moves into place, so a crash
    leaves no candidate folder or a complete one (plus, at worst, a hidden
    `.<id>.harn-ls-<uuid>.staging` that a later stage sweeps after 10 min).
    A folder that is already there must hold every planned file with the
    planned bytes (a crash after staging, before the forget); then nothing is
    written except our own earlier proposal.json, replaced atomically with the
    new `staged_at`. Anything else is refused, nothing written.
    """
    candidate = plan.candidate_dir
    try:
        st = os.lstat(candidate)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise ActionFailed(f"refused: {quote(candidate)} is a symlink; harn-ls does not write through links")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise ActionFailed(f"refused: {quote(candidate)} exists and is not a folder")
    if st is None or not os.listdir(candidate):
        files = {os.path.relpath(f.path, candidate).replace(os.sep, "/"): f.text for f in plan.files}
        atomic_write_dir(ws.root, candidate, files)
        return [f.path for f in plan.files], []
    missing = [f.path for f in plan.files if not f.identical and not f.replaceable]
    if missing:
        raise ActionFailed(f"refused: {quote(candidate)} is an incomplete staging (missing "
                           + ", ".join(quote(m) for m in missing) + "); remove the folder and accept again")
    return _write_files(ws, plan.files)


def _write_files(ws, files: list[PlannedFile]) -> tuple[list[str], list[str]]:
    """(written, unchanged): each planned file written atomically unless its bytes are already there."""
    written, unchanged = [], []
    for f in files:
        if f.identical:
            unchanged.append(f.path)
        else:
            # exclusive: if someone created the file since we looked, refuse rather than overwrite it;
            # only our own earlier proposal.json (replaceable) is replaced
            atomic_write(ws.root, f.path, f.text, exclusive=not f.replaceable)
            written.append(f.path)
    return written, unchanged


def reject_proposal(ws, proposal_id: str, days: int = 14, now=None, *, namespace: str = NAMESPACE) -> dict:
    """Forget the pending record and replace the state with `suppressed_until[id]` = now + days."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_REJECT_DAYS:
        raise ActionFailed(f"refused: days must be a whole number from 1 to {MAX_REJECT_DAYS}")
    t = now_ns(now)
    events_path, prop = _pending_or_refuse(ws, proposal_id, namespace)
    view = _pattern_view(ws, namespace)
    space = _space(ws, namespace)
    ns_name = space.namespace if space is not None else namespace
    now_iso = iso_millis(t)
    until = pl_fmt.suppressed_until_after(t // 1_000_000, days)  # Harn's pl_add_days_iso

    # Merge into the state Harn currently reads, keeping its raw entries as Harn's dict merge would.
    previous = view.state
    raw = previous.record.value if previous.record is not None and isinstance(previous.record.value, dict) else {}
    enabled = raw.get("enabled", previous.enabled)
    if enabled is None:
        enabled = True
    suppressed = dict(raw["suppressed_until"]) if isinstance(raw.get("suppressed_until"), dict) \
        else dict(previous.suppressed_until)
    suppressed[prop.id] = until
    value = {"enabled": enabled, "suppressed_until": suppressed, "updated_at": now_iso}
    value = pl_fmt.pattern_record_value(value, "state")
    state_id = pl_fmt.state_record_id(now_iso, str(uuid.uuid4()))

    key = pl_fmt.pattern_record_key("pending", prop.id)
    events = [
        forget_event(ns_name, {"key": key}, _ids_with_key(space, key), t),
        forget_event(ns_name, {"key": "state"}, _ids_with_key(space, "state"), t),
        pattern_store_event(ns_name, state_id, "state", value, now_iso, "state"),
    ]
    append_lines(confining_root(ws, events_path), events_path, [serde_compact(e) for e in events])
    ws.apply_changes([events_path])
    return {
        "message": f"Rejected {quote(prop.name)}: suppressed until {quote(until)}",
        "id": prop.id,
        "name": prop.name,
        "suppressed_until": until,
        "state_id": state_id,
        "events": events,
        "events_path": events_path,
    }
