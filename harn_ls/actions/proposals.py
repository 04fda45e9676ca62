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

`planned_files` is pure: it only reads, and returns exactly what Accept would write.
"""

from __future__ import annotations

import os
import stat
import uuid
from dataclasses import dataclass, field, fields as dc_fields
from pathlib import Path
from typing import Any

from harn_ls.actions import (
    ActionFailed,
    append_lines,
    atomic_write,
    atomic_write_dir,
    ensure_inside,
    iso_millis,
    now_ns,
    rfc3339_nanos,
    uuid7,
)
from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats.harn_json import serde_compact, stringify
from harn_ls.formats.skills import is_valid_skill_name, render_learned_skill

NAMESPACE = pl_fmt.NAMESPACE
DEFAULT_SKILL_ROOT = ".claude/skills"
CRYSTALLIZATION_DIR = (".burin", "crystallization")
CANDIDATE_SCHEMA = "harn.crystallization.authored-candidate.v1"
EXECUTABLE_ENTRYPOINTS = {"harn_workflow": "workflow.harn", "harn_tool": "server.harn", "hybrid": "server.harn"}
PROVENANCE = {"source": "harn.pattern_learning"}
MAX_SEGMENT_BYTES = 255
MAX_REJECT_DAYS = 36500
_MAX_COMPARE_BYTES = 16 * 1024 * 1024


@dataclass
class PlannedFile:
    path: str  # absolute
    text: str
    lang: str  # markdown | harn | json (for fences)
    conflict: bool = False  # something different is already there: Accept refuses
    identical: bool = False  # the same bytes are already there: Accept skips the write
    replaceable: bool = False  # an earlier staging record of this same proposal (proposal.json)


@dataclass
class Plan:
    files: list[PlannedFile]
    forget_predicate: str  # compact JSON, e.g. {"key":"pending:prompt-..."}
    events_path: str
    skill_path: str = ""  # the SKILL.md among `files`
    warning: str = ""  # e.g. a skillRoot outside Harn's pattern-learning roots
    harn_layer: bool = False  # skill root is a Harn loader layer: `short:` was added
    namespace: str = NAMESPACE
    candidate_dir: str = ""  # executable kinds: the folder staged as a whole


# ---------------------------------------------------------------- validation

def _check_text(value: str, what: str) -> None:
    """No NUL, line breaks or other control characters in anything that becomes a path."""
    for ch in value:
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise ActionFailed(f"refused: {what} {value!r} contains a control character (NUL, newline, ...)")


def _check_segment(value: Any, what: str) -> str:
    """A single, harmless path segment (used for proposal ids and pipeline names)."""
    if not isinstance(value, str) or not value:
        raise ActionFailed(f"refused: {what} is empty")
    _check_text(value, what)
    if value in (".", "..") or "/" in value or "\\" in value:
        raise ActionFailed(f"refused: {what} {value!r} is not a single path segment")
    if len(value.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise ActionFailed(f"refused: {what} is longer than {MAX_SEGMENT_BYTES} bytes")
    return value


def check_skill_name(name: Any) -> str:
    if not isinstance(name, str) or not is_valid_skill_name(name):
        raise ActionFailed(f"HARN-PATTERN-002: refused: skill name {name!r} is empty or not its own slug "
                           "([a-z0-9] runs joined by '-'); Harn refuses to write it too")
    return name


def _inside(ws, path: str) -> str:
    """Lexically under the project, then (ensure_inside) still inside with symlinks resolved."""
    root = os.path.abspath(ws.root)
    full = os.path.abspath(path)
    if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
        raise ActionFailed(f"refused: {path} is outside the project {root}")
    ensure_inside(ws.root, full)
    return full


def _namespace_parts(namespace: str) -> list[str]:
    """Memory's namespace rule (§C.1): relative, `/`-separated, `.` dropped, `..` refused."""
    if not isinstance(namespace, str) or not namespace.strip():
        raise ActionFailed("refused: empty memory namespace")
    _check_text(namespace, "namespace")
    ns = namespace.strip()
    if ns.startswith(("/", "\\")) or (len(ns) > 1 and ns[1] == ":"):
        raise ActionFailed(f"refused: namespace {namespace!r} is absolute")
    parts = [p for p in ns.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ActionFailed(f"refused: namespace {namespace!r} would leave the memory root")
    return parts


def _confine(ws, path: str) -> str:
    """A memory log may live under a state root outside the project (HARN_STATE_DIR); confine to that root."""
    for root in (ws.root, ws.paths.pattern_memory_root, ws.paths.memory_root):
        r = os.path.abspath(root)
        if os.path.abspath(path).startswith(r.rstrip(os.sep) + os.sep):
            ensure_inside(r, path)
            return r
    raise ActionFailed(f"refused: {path} is outside the project and its memory roots")


def pattern_events_path(ws, namespace: str = NAMESPACE) -> str:
    if namespace == NAMESPACE:
        known = ws.namespace_path(NAMESPACE)
        if known:
            return known
        return os.path.join(ws.paths.pattern_learning_dir, "events.jsonl")
    return os.path.join(ws.paths.pattern_memory_root, *_namespace_parts(namespace), "events.jsonl")


# ---------------------------------------------------------------- reading

def _refresh(ws, namespace: str) -> str:
    """Re-read the pattern log before acting: someone (Harn, another editor) may have acted."""
    path = pattern_events_path(ws, namespace)
    ws.apply([path])
    return path


def _pattern_view(ws, namespace: str):
    if namespace == NAMESPACE:
        return ws.pattern or pl_fmt.PatternLearning()
    space = ws.memory.get("/".join(_namespace_parts(namespace)))
    records = space.records() if space is not None else []
    return pl_fmt.project_pattern_learning(records, pattern_events_path(ws, namespace))


def _space(ws, namespace: str):
    return ws.memory.get(namespace if namespace == NAMESPACE else "/".join(_namespace_parts(namespace)))


def _find_pending(ws, proposal_id: str, namespace: str):
    for prop in _pattern_view(ws, namespace).pending:
        if prop.id == proposal_id:
            return prop
    return None


def _suppressed_until(view, proposal_id: str, now_iso: str) -> str | None:
    if pl_fmt.is_suppressed(proposal_id, view.state, now_iso):
        return view.state.suppressed_until.get(proposal_id)
    return None


def list_proposals(ws, include_suppressed: bool = False, now=None, namespace: str = NAMESPACE,
                   skill_root: str | None = None) -> list[dict]:
    """Pending proposals in Harn's order (support desc, id asc); suppressed ones only on request."""
    view = _pattern_view(ws, namespace)
    now_iso = iso_millis(now_ns(now))
    out = []
    for prop in view.pending:
        until = _suppressed_until(view, prop.id, now_iso)
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


# ---------------------------------------------------------------- planning

def _skill_root_dir(ws, skill_root: str | None) -> str:
    raw = DEFAULT_SKILL_ROOT if skill_root in (None, "") else skill_root
    if not isinstance(raw, str):
        raise ActionFailed("refused: skillRoot must be a string")
    _check_text(raw, "skillRoot")
    if os.path.isabs(raw):
        path = os.path.normpath(raw)
    else:
        parts = raw.replace("\\", "/").split("/")
        if ".." in parts:
            raise ActionFailed(f"refused: skillRoot {raw!r} contains '..'")
        path = os.path.join(ws.root, *[p for p in parts if p not in ("", ".")])
    return _inside(ws, path)


def _is_harn_layer(ws, root_dir: str) -> bool:
    """`.harn/skills` (or another Harn loader root): Harn's loader needs `short:` there."""
    target = os.path.normpath(root_dir)
    return any(os.path.normpath(r.path) == target for r in ws.paths.skill_roots if r.layer not in ("claude", "burin"))


def _namespace_dir(namespace: str) -> list[str]:
    """Harn puts a non-default namespace's skills in a slugified sub-folder, `custom/` when the slug is empty."""
    if namespace == NAMESPACE:
        return []
    return [pl_fmt.skill_namespace_dir(namespace)]


def skill_root_warning(ws, skill_root: str | None) -> str:
    """A warning when `skill_root` is not one of Harn's pattern-learning roots (empty string when it is)."""
    try:
        root_dir = os.path.normpath(_skill_root_dir(ws, skill_root))
    except ActionFailed as exc:
        return str(exc)
    harn_roots = [os.path.normpath(os.path.join(os.path.realpath(ws.root), *parts)) for parts in pl_fmt.PATTERN_SKILL_ROOTS]
    if os.path.normpath(os.path.realpath(root_dir)) in harn_roots or root_dir in harn_roots:
        return ""
    shown = skill_root if skill_root not in (None, "") else DEFAULT_SKILL_ROOT
    return (f"skillRoot {shown!r} is outside Harn's pattern-learning roots (.claude/skills, .burin/skills): "
            "Harn will not see skills here and may propose this one again")


def _short_for(prop) -> str:
    # Harn's loader requires a non-empty `short`; the description is the one-liner Harn writes.
    for text in (prop.description, prop.title, prop.name):
        if isinstance(text, str) and text.strip():
            return text
    return prop.name


def _existing_state(path: str, text: str) -> tuple[bool, bool]:
    """(conflict, identical) for a planned file against what is on disk."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False, False
    if stat.S_ISLNK(st.st_mode):
        raise ActionFailed(f"refused: {path} is a symlink; harn-ls does not write through links")
    if not stat.S_ISREG(st.st_mode):
        return True, False
    data = text.encode("utf-8")
    if st.st_size != len(data) or st.st_size > _MAX_COMPARE_BYTES:
        return True, False
    with open(path, "rb") as fh:
        same = fh.read() == data
    return (not same), same


def _proposal_value(prop) -> dict:
    """The proposal as Harn holds it: the pending record's value (schema, record_kind included)."""
    if prop.record is not None and isinstance(prop.record.value, dict):
        return dict(prop.record.value)
    out = {}
    for f in dc_fields(prop):
        if f.name in ("record", "visible_to_harn"):
            continue
        v = getattr(prop, f.name)
        if v is None or (f.name in ("evidence_ids", "curator_session_id") and not v):
            continue
        out[f.name] = v
    return pl_fmt.pattern_record_value(out, "pending")


def planned_files(ws, proposal, skill_root: str | None = None, *, now=None, namespace: str = NAMESPACE) -> Plan:
    """Exactly what Accept would write, validated; reads only.

    Raises ActionFailed for anything Accept would refuse up front (bad name,
    unsafe id or root, unknown kind, symlinked target).
    """
    prop = proposal
    name = check_skill_name(prop.name.strip(" \t\r\n\x0b\x0c") if isinstance(prop.name, str) else prop.name)  # pl_text
    pid = _check_segment(prop.id, "proposal id")
    ns_dir = _namespace_dir(namespace)
    events_path = pattern_events_path(ws, namespace)
    predicate = serde_compact({"key": f"pending:{pid}"})
    kind = prop.kind or "skill"

    if kind == "skill":
        root_dir = _skill_root_dir(ws, skill_root)
        harn_layer = _is_harn_layer(ws, root_dir)
        path = _inside(ws, os.path.join(root_dir, *ns_dir, name, "SKILL.md"))
        text = _render_skill(name, prop, short=_short_for(prop) if harn_layer else None)
        conflict, identical = _existing_state(path, text)
        return Plan([PlannedFile(path, text, "markdown", conflict, identical)], predicate, events_path,
                    skill_path=path, harn_layer=harn_layer, namespace=namespace,
                    warning=skill_root_warning(ws, skill_root))

    if kind not in EXECUTABLE_ENTRYPOINTS:
        raise ActionFailed(f"refused: unknown proposal kind {kind!r} (expected skill, harn_tool, harn_workflow or hybrid)")
    artifact = prop.artifact if isinstance(prop.artifact, dict) else {}
    source, test_source = artifact.get("source"), artifact.get("test_source")
    if not isinstance(source, str) or not isinstance(test_source, str):
        raise ActionFailed(f"refused: {kind} proposal {pid} has no artifact source/test_source to stage")
    candidate = _inside(ws, os.path.join(ws.root, *CRYSTALLIZATION_DIR, pid))
    # Harn calls its SKILL.md writer with the candidate dir as project root (§E.3, later version).
    skill_path = _inside(ws, os.path.join(candidate, ".claude", "skills", *ns_dir, name, "SKILL.md"))
    skill_text = _render_skill(name, prop)
    staged_at = iso_millis(now_ns(now))
    record = _proposal_value(prop)
    record.update({"schema": CANDIDATE_SCHEMA, "status": "staged", "candidate_dir": candidate, "staged_at": staged_at})
    planned = [
        (os.path.join(candidate, EXECUTABLE_ENTRYPOINTS[kind]), source, "harn"),
        (os.path.join(candidate, "test.harn"), test_source, "harn"),
        (skill_path, skill_text, "markdown"),
    ]
    files = []
    for path, text, lang in planned:
        path = _inside(ws, path)
        conflict, identical = _existing_state(path, text)
        files.append(PlannedFile(path, text, lang, conflict, identical))
    # proposal.json carries staged_at, so it differs on every accept: an earlier staging
    # record of this same proposal is replaced, anything else is a conflict.
    pj_path = _inside(ws, os.path.join(candidate, "proposal.json"))
    pj_text = stringify(record)
    conflict, identical = _existing_state(pj_path, pj_text)
    replaceable = False
    if conflict and _is_own_staging_record(pj_path, pid):
        conflict, replaceable = False, True
    files.append(PlannedFile(pj_path, pj_text, "json", conflict, identical, replaceable))
    return Plan(files, predicate, events_path, skill_path=skill_path, namespace=namespace, candidate_dir=candidate)


def _render_skill(name: str, prop, short: str | None = None) -> str:
    try:
        return render_learned_skill(name, prop.description, prop.when_to_use, prop.source, prop.body, short=short)
    except ValueError as exc:
        raise ActionFailed(str(exc)) from None


def _is_own_staging_record(path: str, pid: str) -> bool:
    import orjson

    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_COMPARE_BYTES)
        value = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(value, dict) and value.get("id") == pid and value.get("schema") == CANDIDATE_SCHEMA


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


def _sorted_json(value: Any) -> Any:
    """Harn dicts are BTreeMaps: keys sorted at every level."""
    if isinstance(value, dict):
        return {k: _sorted_json(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_json(v) for v in value]
    return value


def pattern_store_event(namespace: str, record_id: str, key: str, value: dict, stored_at: str, kind: str) -> dict:
    """`pl_store_record`'s memory `store` event: text = compact value, tags sorted (§C.2, §E.1)."""
    value = _sorted_json(value)
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
    _check_segment(proposal_id, "proposal id")
    events_path = _refresh(ws, namespace)
    prop = _find_pending(ws, proposal_id, namespace)
    if prop is None:
        raise ActionFailed(f"refused: proposal {proposal_id} is no longer pending "
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
        raise ActionFailed("refused: a different file already exists at " + ", ".join(conflicts)
                           + "; compare it with the proposal instead")
    written, unchanged = [], []
    if plan.candidate_dir:
        written, unchanged = _stage_candidate(ws, plan)
    else:
        for f in plan.files:
            if f.identical:
                unchanged.append(f.path)
                continue
            # exclusive: if someone created the file since we looked, refuse rather than overwrite it
            atomic_write(ws.root, f.path, f.text, exclusive=not f.replaceable)
            written.append(f.path)
    space = _space(ws, namespace)
    ns_name = space.namespace if space is not None else namespace
    event = forget_event(ns_name, {"key": f"pending:{prop.id}"}, _ids_with_key(space, f"pending:{prop.id}"), t)
    append_lines(_confine(ws, events_path), events_path, [serde_compact(event)])
    ws.apply(written + [events_path])
    rel = os.path.relpath(plan.skill_path, ws.root).replace(os.sep, "/")
    what = "staged under " + os.path.relpath(os.path.dirname(plan.files[0].path), ws.root).replace(os.sep, "/") \
        if prop.kind in EXECUTABLE_ENTRYPOINTS else f"wrote {rel}"
    return {
        "message": f"Accepted {prop.name}: {what}" + (" (files already identical)" if not written else ""),
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
        raise ActionFailed(f"refused: {candidate} is a symlink; harn-ls does not write through links")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise ActionFailed(f"refused: {candidate} exists and is not a folder")
    if st is None or not os.listdir(candidate):
        files = {os.path.relpath(f.path, candidate).replace(os.sep, "/"): f.text for f in plan.files}
        atomic_write_dir(ws.root, candidate, files)
        return [f.path for f in plan.files], []
    missing = [f.path for f in plan.files if not f.identical and not f.replaceable]
    if missing:
        raise ActionFailed(f"refused: {candidate} is an incomplete staging (missing " + ", ".join(missing)
                           + "); remove the folder and accept again")
    written, unchanged = [], []
    for f in plan.files:
        if f.identical:
            unchanged.append(f.path)
        else:  # our own earlier proposal.json: the folder stays complete across this replace
            atomic_write(ws.root, f.path, f.text)
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

    events = [
        forget_event(ns_name, {"key": f"pending:{prop.id}"}, _ids_with_key(space, f"pending:{prop.id}"), t),
        forget_event(ns_name, {"key": "state"}, _ids_with_key(space, "state"), t),
        pattern_store_event(ns_name, state_id, "state", value, now_iso, "state"),
    ]
    append_lines(_confine(ws, events_path), events_path, [serde_compact(e) for e in events])
    ws.apply([events_path])
    return {
        "message": f"Rejected {prop.name}: suppressed until {until}",
        "id": prop.id,
        "name": prop.name,
        "suppressed_until": until,
        "state_id": state_id,
        "events": events,
        "events_path": events_path,
    }
