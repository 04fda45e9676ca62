"""What *Accept* would write for a learned-skill proposal (harn-formats §E.3), planned without
writing anything.

Pure: it reads the workspace model and the files already at the targets, validates every
path (single segments, no control characters, inside the project once symlinks are resolved)
and returns the exact bytes. `render/` shows the plan in proposal documents and `?file=`,
`lsp/` offers Compare from it, and `actions/proposals.py` writes it: one plan, three users.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from dataclasses import fields as dc_fields
from typing import TYPE_CHECKING, Any

import orjson

from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats.harn_json import serde_compact, stringify
from harn_ls.formats.harn_time import iso_millis, now_ns
from harn_ls.util.json_types import JsonObject
from harn_ls.util.message_text import defuse, quote
from harn_ls.util.refusal import ActionFailed, ensure_inside
from harn_ls.util.safe_read import ReadRefused, is_under, read_confined

if TYPE_CHECKING:
    from datetime import datetime

    from harn_ls.model.workspace import Workspace

NAMESPACE = pl_fmt.NAMESPACE
DEFAULT_SKILL_ROOT = ".claude/skills"
CRYSTALLIZATION_DIR = (".harn", "crystallization")  # where the newest Harn stages (issue 28); `.burin/` is read-only
CANDIDATE_SCHEMA = "harn.crystallization.authored-candidate.v1"
EXECUTABLE_ENTRYPOINTS = {"harn_workflow": "workflow.harn", "harn_tool": "server.harn", "hybrid": "server.harn"}
MAX_SEGMENT_BYTES = 255
MAX_COMPARE_BYTES = 16 * 1024 * 1024


@dataclass
class PlannedFile:
    """One file Accept would write, and what is already at its path."""

    path: str  # absolute
    text: str
    lang: str  # markdown | harn | json (for fences)
    conflict: bool = False  # something different is already there: Accept refuses
    identical: bool = False  # the same bytes are already there: Accept skips the write
    replaceable: bool = False  # an earlier staging record of this same proposal (proposal.json)


@dataclass
class Plan:
    """Everything one Accept writes: the files, then the forget event that retires the proposal."""

    files: list[PlannedFile]
    forget_predicate: str  # compact JSON, e.g. {"key":"pending:prompt-..."}
    events_path: str
    skill_path: str = ""  # the SKILL.md among `files`
    warning: str = ""  # e.g. a skillRoot outside Harn's pattern-learning roots
    harn_layer: bool = False  # skill root is a Harn loader layer: `short:` was added
    namespace: str = NAMESPACE
    candidate_dir: str = ""  # executable kinds: the folder staged as a whole


# ---------------------------------------------------------------- validation

def check_text(value: str, what: str) -> None:
    """No NUL, line breaks or other control characters in anything that becomes a path."""
    for ch in value:
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise ActionFailed(f"refused: {what} {quote(value)} contains a control character (NUL, newline, ...)")


def check_segment(value: Any, what: str) -> str:
    """A single, harmless path segment (used for proposal ids and pipeline names)."""
    if not isinstance(value, str) or not value:
        raise ActionFailed(f"refused: {what} is empty")
    check_text(value, what)
    if value in (".", "..") or "/" in value or "\\" in value:
        raise ActionFailed(f"refused: {what} {quote(value)} is not a single path segment")
    if len(value.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise ActionFailed(f"refused: {what} is longer than {MAX_SEGMENT_BYTES} bytes")
    return value


def check_skill_name(name: Any) -> str:
    # start-up: the skill writer loads PyYAML (~20 ms); a server start reads only skill_root_warning
    from harn_ls.formats.skills.writer import is_valid_skill_name

    if not isinstance(name, str) or not is_valid_skill_name(name):
        raise ActionFailed(f"HARN-PATTERN-002: refused: skill name {quote(name)} is empty or not its own slug "
                           "([a-z0-9] runs joined by '-'); Harn refuses to write it too")
    return name


def inside_project(ws: Workspace, path: str) -> str:
    """Lexically under the project, then (ensure_inside) still inside with symlinks resolved."""
    root = os.path.abspath(ws.root)
    full = os.path.abspath(path)
    if not is_under(full, root):
        raise ActionFailed(f"refused: {quote(path)} is outside the project {quote(root)}")
    ensure_inside(ws.root, full)
    return full


def namespace_parts(namespace: str) -> list[str]:
    """Memory's namespace rule (§C.1): relative, `/`-separated, `.` dropped, `..` refused."""
    if not isinstance(namespace, str) or not namespace.strip():
        raise ActionFailed("refused: empty memory namespace")
    check_text(namespace, "namespace")
    ns = namespace.strip()
    if ns.startswith(("/", "\\")) or (len(ns) > 1 and ns[1] == ":"):
        raise ActionFailed(f"refused: namespace {quote(namespace)} is absolute")
    parts = [p for p in ns.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ActionFailed(f"refused: namespace {quote(namespace)} would leave the memory root")
    return parts


def confining_root(ws: Workspace, path: str) -> str:
    """A memory log may live under a state root outside the project (HARN_STATE_DIR); confine to that root."""
    for root in (ws.root, ws.paths.pattern_memory_root, ws.paths.memory_root):
        r = os.path.abspath(root)
        if os.path.abspath(path).startswith(r.rstrip(os.sep) + os.sep):
            ensure_inside(r, path)
            return r
    raise ActionFailed(f"refused: {quote(path)} is outside the project and its memory roots")


def pattern_events_path(ws: Workspace, namespace: str = NAMESPACE) -> str:
    if namespace == NAMESPACE:
        return ws.namespace_path(NAMESPACE) or os.path.join(ws.paths.pattern_learning_dir, "events.jsonl")
    return os.path.join(ws.paths.pattern_memory_root, *namespace_parts(namespace), "events.jsonl")


# ---------------------------------------------------------------- planning

def skill_root_dir(ws: Workspace, skill_root: str | None) -> str:
    raw = DEFAULT_SKILL_ROOT if skill_root in (None, "") else skill_root
    if not isinstance(raw, str):
        raise ActionFailed("refused: skillRoot must be a string")
    check_text(raw, "skillRoot")
    if os.path.isabs(raw):
        path = os.path.normpath(raw)
    else:
        parts = raw.replace("\\", "/").split("/")
        if ".." in parts:
            raise ActionFailed(f"refused: skillRoot {quote(raw)} contains '..'")
        path = os.path.join(ws.root, *[p for p in parts if p not in ("", ".")])
    return inside_project(ws, path)


def is_harn_layer(ws: Workspace, root_dir: str) -> bool:
    """`.harn/skills` (or another Harn loader root): Harn's loader needs `short:` there."""
    target = os.path.normpath(root_dir)
    return any(os.path.normpath(r.path) == target for r in ws.paths.skill_roots if r.layer not in ("claude", "burin"))


def namespace_dir(namespace: str) -> list[str]:
    """Harn puts a non-default namespace's skills in a slugified sub-folder, `custom/` when the slug is empty."""
    if namespace == NAMESPACE:
        return []
    return [pl_fmt.skill_namespace_dir(namespace)]


def skill_root_warning(ws: Workspace, skill_root: str | None) -> str:
    """A warning when `skill_root` is not one of Harn's pattern-learning roots (empty string when it is)."""
    try:
        root_dir = os.path.normpath(skill_root_dir(ws, skill_root))
    except ActionFailed as exc:
        return str(exc)
    harn_roots = [os.path.normpath(os.path.join(os.path.realpath(ws.root), *parts)) for parts in pl_fmt.PATTERN_SKILL_ROOTS]
    if os.path.normpath(os.path.realpath(root_dir)) in harn_roots or root_dir in harn_roots:
        return ""
    shown = skill_root if skill_root not in (None, "") else DEFAULT_SKILL_ROOT
    return (f"skillRoot {quote(shown)} is outside Harn's pattern-learning roots (.claude/skills, .burin/skills): "
            "Harn will not see skills here and may propose this one again")


def short_for(prop: pl_fmt.Proposal) -> str:
    # Harn's loader requires a non-empty `short`; the description is the one-liner Harn writes.
    for text in (prop.description, prop.title, prop.name):
        if isinstance(text, str) and text.strip():
            return text
    return prop.name


def existing_state(path: str, text: str) -> tuple[bool, bool]:
    """(conflict, identical) for a planned file against what is on disk."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False, False
    if stat.S_ISLNK(st.st_mode):
        raise ActionFailed(f"refused: {quote(path)} is a symlink; harn-ls does not write through links")
    if not stat.S_ISREG(st.st_mode):
        return True, False
    data = text.encode("utf-8")
    if st.st_size != len(data) or st.st_size > MAX_COMPARE_BYTES:
        return True, False
    try:  # lstat'ed above, but may be swapped for a FIFO since: safe_read never waits on one
        same = read_confined(path, None, MAX_COMPARE_BYTES) == data
    except ReadRefused:
        return True, False
    return (not same), same


def proposal_value(prop: pl_fmt.Proposal) -> JsonObject:
    """The proposal as Harn holds it: the pending record's value (schema, record_kind included)."""
    if prop.record is not None and isinstance(prop.record.value, dict):
        return dict(prop.record.value)
    out: JsonObject = {}
    for f in dc_fields(prop):
        if f.name in ("record", "visible_to_harn"):
            continue
        v = getattr(prop, f.name)
        if v is None or (f.name in ("evidence_ids", "curator_session_id") and not v):
            continue
        out[f.name] = v
    return pl_fmt.pattern_record_value(out, "pending")


def planned_files(ws: Workspace, proposal: pl_fmt.Proposal, skill_root: str | None = None, *,
                  now: int | str | datetime | None = None, namespace: str = NAMESPACE) -> Plan:
    """Exactly what Accept would write, validated; reads only.

    Raises ActionFailed for anything Accept would refuse up front (bad name,
    unsafe id or root, unknown kind, symlinked target).
    """
    prop = proposal
    name = check_skill_name(prop.name.strip(" \t\r\n\x0b\x0c") if isinstance(prop.name, str) else prop.name)  # pl_text
    pid = check_segment(prop.id, "proposal id")
    ns_dir = namespace_dir(namespace)
    events_path = pattern_events_path(ws, namespace)
    predicate = serde_compact({"key": pl_fmt.pattern_record_key("pending", pid)})
    kind = prop.kind or "skill"

    if kind == "skill":
        root_dir = skill_root_dir(ws, skill_root)
        harn_layer = is_harn_layer(ws, root_dir)
        path = inside_project(ws, os.path.join(root_dir, *ns_dir, name, "SKILL.md"))
        text = render_skill(name, prop, short=short_for(prop) if harn_layer else None)
        conflict, identical = existing_state(path, text)
        return Plan([PlannedFile(path, text, "markdown", conflict, identical)], predicate, events_path,
                    skill_path=path, harn_layer=harn_layer, namespace=namespace,
                    warning=skill_root_warning(ws, skill_root))

    if kind not in EXECUTABLE_ENTRYPOINTS:
        raise ActionFailed(f"refused: unknown proposal kind {quote(kind)} (expected skill, harn_tool, harn_workflow or hybrid)")
    artifact = prop.artifact if isinstance(prop.artifact, dict) else {}
    source, test_source = artifact.get("source"), artifact.get("test_source")
    if not isinstance(source, str) or not isinstance(test_source, str):
        raise ActionFailed(f"refused: {quote(kind)} proposal {quote(pid)} has no artifact source/test_source to stage")
    candidate = inside_project(ws, os.path.join(ws.root, *CRYSTALLIZATION_DIR, pid))
    # Harn calls its SKILL.md writer with the candidate dir as project root (§E.3, later version).
    skill_path = inside_project(ws, os.path.join(candidate, ".claude", "skills", *ns_dir, name, "SKILL.md"))
    skill_text = render_skill(name, prop)
    staged_at = iso_millis(now_ns(now))
    record = proposal_value(prop)
    record.update({"schema": CANDIDATE_SCHEMA, "status": "staged", "candidate_dir": candidate, "staged_at": staged_at})
    planned = [
        (os.path.join(candidate, EXECUTABLE_ENTRYPOINTS[kind]), source, "harn"),
        (os.path.join(candidate, "test.harn"), test_source, "harn"),
        (skill_path, skill_text, "markdown"),
    ]
    files = []
    for path, text, lang in planned:
        path = inside_project(ws, path)
        conflict, identical = existing_state(path, text)
        files.append(PlannedFile(path, text, lang, conflict, identical))
    # proposal.json carries staged_at, so it differs on every accept: an earlier staging
    # record of this same proposal is replaced, anything else is a conflict.
    pj_path = inside_project(ws, os.path.join(candidate, "proposal.json"))
    pj_text = stringify(record)
    conflict, identical = existing_state(pj_path, pj_text)
    replaceable = False
    if conflict and is_own_staging_record(pj_path, pid):
        conflict, replaceable = False, True
    files.append(PlannedFile(pj_path, pj_text, "json", conflict, identical, replaceable))
    return Plan(files, predicate, events_path, skill_path=skill_path, namespace=namespace, candidate_dir=candidate)


def render_skill(name: str, prop: pl_fmt.Proposal, short: str | None = None) -> str:
    # start-up: as in check_skill_name
    from harn_ls.formats.skills.writer import render_learned_skill

    try:
        return render_learned_skill(name, prop.description, prop.when_to_use, prop.source, prop.body, short=short)
    except ValueError as exc:
        raise ActionFailed(defuse(str(exc))) from None


def is_own_staging_record(path: str, pid: str) -> bool:
    try:
        value = orjson.loads(read_confined(path, None, MAX_COMPARE_BYTES))
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(value, dict) and value.get("id") == pid and value.get("schema") == CANDIDATE_SCHEMA
