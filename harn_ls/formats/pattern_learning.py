"""Pattern learning (`harn.pattern_learning.v1`, harn-formats §E), read-only.

Harn keeps observations, pending proposals and a state record as ordinary
memory records in namespace `project/pattern-learning`. This module projects
already-parsed `MemoryRecord`s (see memory.py) into typed views, the way
Harn's own readers filter them: by tag `pattern_learning:<kind>`, then by
`schema` and `record_kind` (falling back to `kind`). It never calls into
Harn — Harn's read APIs may migrate and write (§E.5).

Harn reads through `memory_summarize`, which clamps to the 200 newest
records per tag, so older records exist on disk but are invisible to Harn;
each view carries `visible_to_harn` so the editor can show that.

Also here: the legacy Burin JSONL streams that Harn imports once (§E.4),
read without writing anything, and the pure id/tag helpers Harn uses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import field
from hashlib import sha256
from typing import TypeVar

from harn_ls.formats.harn_time import date_iso_plus_days
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.memory_record import MemoryRecord
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.rust_text import RUST_WHITESPACE

NAMESPACE = "project/pattern-learning"
SCHEMA = "harn.pattern_learning.v1"
KINDS = ("observation", "pending", "state")
SUMMARIZE_CAP = 200  # memory_summarize clamps `limit` to this; Harn never sees older records
SUPPORT_SORT_BASE = 999999  # Harn sorts pending by str(999999 - support) + ":" + id
MIGRATION_MARKER = ".burin-session-store-migrated-v1.json"
LEGACY_DIR = "session-store"
LEGACY_STREAMS = {
    "observation": "burin.agent_context.pattern_learning.observations.jsonl",
    "pending": "burin.agent_context.pattern_learning.pending.jsonl",
    "state": "burin.agent_context.pattern_learning.state.jsonl",
}

CODE_NOT_OBJECT = "HL-PAT-001"
CODE_WRONG_SCHEMA = "HL-PAT-002"
CODE_WRONG_KIND = "HL-PAT-003"
CODE_BAD_FIELD = "HL-PAT-004"
CODE_NOT_VISIBLE = "HL-PAT-005"
CODE_UNTAGGED = "HL-PAT-006"
CODE_LEGACY = "HL-PAT-007"


# -- pure helpers Harn uses for ids and tags ------------------------------------

def short_hash(text: str) -> str:
    """`pl_short_hash`: first 12 hex of sha256."""
    return sha256(text.encode("utf-8")).hexdigest()[:12]


_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """Lowercase, runs of `[^a-z0-9]` -> '-', trimmed of '-' (skill names, tool names)."""
    return _SLUG_RE.sub("-", text.lower()).strip("-")


def pending_record_id(proposal_id: str, now: str, uuid: str) -> str:
    return f"pending_{proposal_id.replace('-', '_')}_{short_hash(now + ':' + uuid)}"


def state_record_id(now: str, uuid: str) -> str:
    return f"state_{short_hash(now + ':' + uuid)}"


def pattern_record_key(kind: str, record_id: str | None = None) -> str:
    """Memory key: `observation:<id>`, `pending:<id>`, or `state`."""
    return "state" if kind == "state" else f"{kind}:{record_id}"


def pattern_record_value(record: JsonObject, kind: str) -> JsonObject:
    """The stored value: the record plus `schema` and `record_kind`."""
    return {**record, "schema": SCHEMA, "record_kind": kind}


def pattern_tags(kind: str, extra: Iterable[str] = ()) -> list[str]:
    return ["pattern_learning", f"pattern_learning:{kind}", f"schema:{SCHEMA}", *extra]


# -- typed views ----------------------------------------------------------------

@lean_dataclass(slots=True)
class Observation:
    """One pattern-learning observation: a prompt and the tools it used."""

    id: str
    session_id: str = ""
    prompt: str = ""
    tool_sequence: list[str] = field(default_factory=list)
    observed_at: str = ""
    source_id: str = ""
    run_id: str = ""
    evidence_kind: str = ""
    record: MemoryRecord | None = None
    visible_to_harn: bool = True


@lean_dataclass(slots=True)
class Proposal:
    """A learned-skill proposal waiting to be accepted or rejected."""

    id: str
    kind: str = ""
    source: str = ""
    name: str = ""
    title: str = ""
    description: str = ""
    when_to_use: str = ""
    body: str = ""
    support: int = 0
    sample_prompts: list[str] = field(default_factory=list)
    tool_sequence: list[str] = field(default_factory=list)
    created_at: str = ""
    last_seen_at: str = ""
    evidence_ids: list[str] = field(default_factory=list)
    curator_session_id: str = ""
    artifact: JsonObject | None = None
    record: MemoryRecord | None = None
    visible_to_harn: bool = True

@lean_dataclass(slots=True)
class PatternState:
    """Pattern learning's on/off switch and the proposals suppressed until a date."""

    enabled: bool = True
    suppressed_until: dict[str, str] = field(default_factory=dict)
    updated_at: str | None = None
    record: MemoryRecord | None = None
    visible_to_harn: bool = True


@lean_dataclass(slots=True)
class PatternLearning:
    """Everything pattern learning keeps, projected from its memory namespace."""

    observations: list[Observation] = field(default_factory=list)
    pending: list[Proposal] = field(default_factory=list)  # support desc, id asc (Harn's order)
    state: PatternState = field(default_factory=PatternState)
    problems: list[Problem] = field(default_factory=list)
    state_records: list[PatternState] = field(default_factory=list)
    rejected: list[MemoryRecord] = field(default_factory=list)  # records Harn skips (bad schema/kind/fields)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> {"stored": n, "visible": m}


def is_suppressed(proposal_id: str, state: PatternState | None, now_iso: str) -> bool:
    """Harn's rule: suppressed while `suppressed_until[id] > now` as *strings*.

    Mixed timestamp formats compare by characters, exactly as Harn does
    (e.g. '...:00Z' > '...:00.000Z' because 'Z' > '.').
    """
    if state is None:
        return False
    until = state.suppressed_until.get(proposal_id)
    return isinstance(until, str) and until > now_iso


# -- field coercion --------------------------------------------------------------

_STR, _INT, _BOOL, _DICT, _STRLIST = "str", "int", "bool", "dict", "list[str]"

# (field, type, critical). A wrong critical field makes Harn fail or skip the record.
_OBSERVATION_FIELDS = (("id", _STR, True), ("session_id", _STR, False), ("prompt", _STR, True),
                       ("tool_sequence", _STRLIST, False), ("observed_at", _STR, False), ("source_id", _STR, False),
                       ("run_id", _STR, False), ("evidence_kind", _STR, False))
_PROPOSAL_FIELDS = (("id", _STR, True), ("kind", _STR, False), ("source", _STR, False), ("name", _STR, False),
                    ("title", _STR, False), ("description", _STR, False), ("when_to_use", _STR, False),
                    ("body", _STR, False), ("support", _INT, True), ("sample_prompts", _STRLIST, False),
                    ("tool_sequence", _STRLIST, False), ("created_at", _STR, False), ("last_seen_at", _STR, False),
                    ("evidence_ids", _STRLIST, False), ("curator_session_id", _STR, False), ("artifact", _DICT, False))

_CAMEL = {"session_id": ("sessionID", "sessionId"), "tool_sequence": ("toolSequence",), "observed_at": ("observedAt",),
          "when_to_use": ("whenToUse",), "sample_prompts": ("samplePrompts",), "created_at": ("createdAt",),
          "last_seen_at": ("lastSeenAt",), "evidence_ids": ("evidenceIds", "evidenceIDs"),
          "curator_session_id": ("curatorSessionID", "curatorSessionId"), "suppressed_until": ("suppressedUntil",),
          "updated_at": ("updatedAt",), "source_id": ("sourceID", "sourceId"), "run_id": ("runID", "runId"),
          "evidence_kind": ("evidenceKind",)}


def _type_ok(value: JsonValue, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _DICT:
        return isinstance(value, dict)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _lookup(value: JsonObject, name: str, camel: bool) -> tuple[bool, JsonValue]:
    if name in value:
        return True, value[name]
    if camel:
        for alias in _CAMEL.get(name, ()):
            if alias in value:
                return True, value[alias]
    return False, None


def _coerce(value: JsonObject, spec: tuple[tuple[str, str, bool], ...], camel: bool
            ) -> tuple[JsonObject, list[str], list[str]]:
    """Known fields with correct types; returns (fields, bad critical names, bad other names)."""
    out: JsonObject = {}
    bad_critical: list[str] = []
    bad_other: list[str] = []
    for name, kind, critical in spec:
        present, v = _lookup(value, name, camel)
        if not present or (v is None and not critical):
            continue
        if _type_ok(v, kind):
            out[name] = list(v) if kind == _STRLIST else v
        elif critical:
            bad_critical.append(f"{name} ({type(v).__name__}, expected {kind})")
        else:
            bad_other.append(f"{name} ({type(v).__name__}, expected {kind})")
    for name, _kind, critical in spec:
        if critical and name not in out and not any(b.startswith(name + " ") for b in bad_critical):
            bad_critical.append(f"{name} (missing)")
    return out, bad_critical, bad_other


def _state_from(value: JsonObject, camel: bool, where: str, path: str, line: int, problems: list[Problem],
                record: MemoryRecord | None) -> PatternState:
    state = PatternState(record=record)
    present, enabled = _lookup(value, "enabled", camel)
    if present and enabled is not None:
        if isinstance(enabled, bool):
            state.enabled = enabled
        else:
            problems.append(Problem(path, line, CODE_BAD_FIELD,
                f"{where}: 'enabled' is {type(enabled).__name__}, not bool; shown as enabled (Harn's default)", Severity.WARNING))
    present, until = _lookup(value, "suppressed_until", camel)
    if present and until is not None:
        if isinstance(until, dict):
            bad = [k for k, v in until.items() if not isinstance(v, str)]
            state.suppressed_until = {k: v for k, v in until.items() if isinstance(v, str)}
            if bad:
                problems.append(Problem(path, line, CODE_BAD_FIELD,
                    f"{where}: suppressed_until entries for {', '.join(bad)} are not timestamp strings; "
                    "Harn's string compare never treats them as suppressed", Severity.WARNING))
        else:
            problems.append(Problem(path, line, CODE_BAD_FIELD,
                f"{where}: 'suppressed_until' is {type(until).__name__}, not an object; nothing is suppressed", Severity.WARNING))
    present, updated = _lookup(value, "updated_at", camel)
    if present and updated is not None:
        if isinstance(updated, str):
            state.updated_at = updated
        else:
            problems.append(Problem(path, line, CODE_BAD_FIELD,
                f"{where}: 'updated_at' is {type(updated).__name__}, not a string", Severity.WARNING))
    return state


_View = TypeVar("_View", Observation, Proposal)
_VIEW_FIELDS = {Observation: _OBSERVATION_FIELDS, Proposal: _PROPOSAL_FIELDS}


def _view_from(cls: type[_View], value: JsonObject, camel: bool, record: MemoryRecord | None = None
               ) -> tuple[_View | None, list[str], list[str]]:
    """(the view, its bad critical fields, its bad other fields); no view when a critical one is bad."""
    fields, bad_critical, bad_other = _coerce(value, _VIEW_FIELDS[cls], camel)
    return (None if bad_critical else cls(record=record, **fields)), bad_critical, bad_other


def sort_pending(proposals: list[Proposal]) -> list[Proposal]:
    # Harn's own key; equals "support desc, id asc" for 0 <= support <= 999999
    return sorted(proposals, key=lambda p: f"{SUPPORT_SORT_BASE - p.support}:{p.id}")


# -- projection of memory records --------------------------------------------------

def _tagged_kind(record: MemoryRecord) -> str | None:
    for kind in KINDS:
        if f"pattern_learning:{kind}" in record.tags:
            return kind
    return None


def project_pattern_learning(records: list[MemoryRecord], path: str = "") -> PatternLearning:
    """Typed view of the active records of the pattern-learning namespace (in file order)."""
    out = PatternLearning()
    problems = out.problems
    by_kind: dict[str, list[MemoryRecord]] = {k: [] for k in KINDS}
    for record in records:
        kind = _tagged_kind(record)
        if kind is None:
            value = record.value
            if isinstance(value, dict) and value.get("schema") == SCHEMA:
                problems.append(Problem(path, record.line_no, CODE_UNTAGGED,
                    f"record {record.id} has schema {SCHEMA} but no pattern_learning:<kind> tag; Harn never reads it",
                    Severity.INFO))
            continue
        by_kind[kind].append(record)

    for kind in KINDS:
        group = sorted(by_kind[kind], key=lambda r: r.seq)
        visible_from = max(0, len(group) - SUMMARIZE_CAP)
        out.counts[kind] = {"stored": len(group), "visible": len(group) - visible_from}
        if visible_from:
            problems.append(Problem(path, group[visible_from - 1].line_no, CODE_NOT_VISIBLE,
                f"{visible_from} older {kind} record(s) are on disk but invisible to Harn "
                f"(memory_summarize returns at most {SUMMARIZE_CAP} per kind)", Severity.INFO))
        for index, record in enumerate(group):
            _project_one(out, kind, record, index >= visible_from, path)

    out.pending = sort_pending(out.pending)
    # Harn picks among the states it can see: greatest updated_at as a string; ties -> later record.
    visible_states = [st for st in out.state_records if st.visible_to_harn]
    if visible_states:
        out.state = max(visible_states, key=lambda st: (st.updated_at or "", st.record.seq if st.record else -1))
    return out


def _project_one(out: PatternLearning, kind: str, record: MemoryRecord, visible: bool, path: str) -> None:
    problems = out.problems
    line = record.line_no
    where = f"{kind} record {record.id}"
    value = record.value
    if not isinstance(value, dict):
        problems.append(Problem(path, line, CODE_NOT_OBJECT,
            f"{where}: value is a {type(value).__name__}, not an object; Harn skips it", Severity.WARNING))
        out.rejected.append(record)
        return
    if value.get("schema") != SCHEMA:
        problems.append(Problem(path, line, CODE_WRONG_SCHEMA,
            f"{where}: schema is {value.get('schema')!r}, not {SCHEMA!r}; Harn skips it", Severity.WARNING))
        out.rejected.append(record)
        return
    record_kind = value.get("record_kind", value.get("kind"))
    if record_kind != kind:
        problems.append(Problem(path, line, CODE_WRONG_KIND,
            f"{where}: record_kind is {record_kind!r} but the tag says {kind!r}; Harn skips it", Severity.WARNING))
        out.rejected.append(record)
        return
    if kind == "state":
        state = _state_from(value, False, where, path, line, problems, record)
        state.visible_to_harn = visible
        out.state_records.append(state)
        return
    item: Observation | Proposal | None
    if kind == "observation":
        item, bad_critical, bad_other = _view_from(Observation, value, False, record)
    else:
        item, bad_critical, bad_other = _view_from(Proposal, value, False, record)
    if bad_other:
        problems.append(Problem(path, line, CODE_BAD_FIELD,
            f"{where}: wrong-typed field(s) {', '.join(bad_other)}; shown empty", Severity.WARNING))
    if item is None:
        problems.append(Problem(path, line, CODE_BAD_FIELD,
            f"{where}: unusable field(s) {', '.join(bad_critical)}; Harn's pattern-learning calls fail or skip it",
            Severity.ERROR))
        out.rejected.append(record)
        return
    item.visible_to_harn = visible
    if isinstance(item, Observation):  # (kind == "observation")
        out.observations.append(item)
    else:
        out.pending.append(item)



# -- legacy Burin streams (§E.4), read-only ------------------------------------------

@lean_dataclass(slots=True)
class LegacyImport:
    """What Harn's migration would import, after replaying every mutation in order."""

    observations: list[Observation] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)  # Harn's pending order
    state: PatternState | None = None
    problems: list[Problem] = field(default_factory=list)
    generated_at: str | None = None  # pending value's generatedAt
    paths: dict[str, str] = field(default_factory=dict)  # kind -> stream path that was read


def legacy_stream_paths(state_root: str) -> dict[str, str]:
    """Existing legacy streams, kind -> path (kinds: observation, pending, state)."""
    base = os.path.join(state_root, LEGACY_DIR)
    out = {}
    for kind, name in LEGACY_STREAMS.items():
        candidate = os.path.join(base, name)
        if os.path.isfile(candidate):
            out[kind] = candidate
    return out


def migration_marker_path(pattern_dir: str) -> str:
    """`<memory_root>/<namespace>/.burin-session-store-migrated-v1.json`; its presence = migrated."""
    return os.path.join(pattern_dir, MIGRATION_MARKER)


def needs_migration(state_root: str, pattern_dir: str) -> bool:
    """Legacy streams exist and no marker yet: Harn's next mutating call would import them."""
    return bool(legacy_stream_paths(state_root)) and not os.path.exists(migration_marker_path(pattern_dir))


def _payloads(path: str, problems: list[Problem]) -> list[tuple[int, JsonObject]]:
    tail = JsonlTail(path)
    out: list[tuple[int, JsonObject]] = []
    for line in tail.read_new().lines:
        if line.problem is not None:
            problems.append(line.problem)
            continue
        value: JsonObject = line.value  # type: ignore[assignment]  # a line without a problem holds its object
        payload = value.get("payload")
        if not isinstance(payload, dict):
            problems.append(Problem(path, line.line_no, CODE_LEGACY,
                "legacy line has no object 'payload'; the migration ignores it", Severity.WARNING))
            continue
        out.append((line.line_no, payload))
    torn = tail.torn_problem()
    if torn is not None:
        problems.append(torn)
    return out


def _legacy_problem(problems: list[Problem], path: str, line: int, message: str, severity: Severity = Severity.WARNING) -> None:
    problems.append(Problem(path, line, CODE_LEGACY, message, severity))


def _legacy_observation(raw: JsonValue, path: str, line: int, problems: list[Problem]) -> Observation | None:
    if not isinstance(raw, dict):
        _legacy_problem(problems, path, line, "observation record is not an object; skipped")
        return None
    if not isinstance(raw.get("id"), str):
        # Harn would mint a fresh uuid; we keep it under an empty id so it can still be shown.
        raw = {**raw, "id": ""}
    obs, bad_critical, bad_other = _view_from(Observation, raw, True)
    if bad_other:
        _legacy_problem(problems, path, line, f"observation {raw.get('id')!r}: wrong-typed field(s) {', '.join(bad_other)}")
    if obs is None:
        _legacy_problem(problems, path, line, f"observation unusable: {', '.join(bad_critical)}; skipped", Severity.ERROR)
    return obs


def read_legacy_streams(state_root: str) -> LegacyImport:
    """Replay the legacy Burin streams (camelCase or snake_case). Pure: reads only."""
    result = LegacyImport()
    problems = result.problems
    paths = legacy_stream_paths(state_root)
    result.paths = dict(paths)

    if "observation" in paths:
        path = paths["observation"]
        observations: dict[str, Observation] = {}
        anonymous: list[Observation] = []

        def upsert(raw: JsonValue, line: int) -> None:
            obs = _legacy_observation(raw, paths["observation"], line, problems)
            if obs is not None and obs.id:
                observations[obs.id] = obs
            elif obs is not None:
                anonymous.append(obs)

        for line, payload in _payloads(path, problems):
            op = payload.get("operation")
            if op == "upsert":
                upsert(payload.get("record"), line)
            elif op == "delete":
                rid = payload.get("id")
                if not isinstance(rid, str):
                    _legacy_problem(problems, path, line, "delete without a string id; ignored")
                else:
                    observations.pop(rid, None)
            elif op == "replace":
                records = payload.get("records")
                if not isinstance(records, list):
                    _legacy_problem(problems, path, line, "replace without a 'records' list; ignored")
                    continue
                observations.clear()
                anonymous.clear()
                for raw in records:
                    upsert(raw, line)
            elif op == "clear":
                observations.clear()
                anonymous.clear()
            else:
                _legacy_problem(problems, path, line, f"unknown operation {op!r} in a collection stream; ignored")
        result.observations = list(observations.values()) + anonymous

    for kind in ("pending", "state"):
        if kind not in paths:
            continue
        path = paths[kind]
        current: JsonObject | None = None
        current_line = 0
        for line, payload in _payloads(path, problems):
            op = payload.get("operation")
            if op == "replace":
                value = payload.get("value")
                if not isinstance(value, dict):
                    _legacy_problem(problems, path, line, "replace without an object 'value'; ignored")
                    continue
                current, current_line = value, line
            elif op == "clear":
                current = None
            else:
                _legacy_problem(problems, path, line, f"unknown operation {op!r} in a value stream; ignored")
        if current is None:
            continue
        if kind == "state":
            result.state = _state_from(current, True, "legacy state", path, current_line, problems, None)
            continue
        generated = current.get("generatedAt", current.get("generated_at"))
        result.generated_at = generated if isinstance(generated, str) else None
        raw_list = current.get("proposals")
        if not isinstance(raw_list, list):
            _legacy_problem(problems, path, current_line, "pending value has no 'proposals' list; nothing to import")
            continue
        for index, raw in enumerate(raw_list):
            if not isinstance(raw, dict):
                _legacy_problem(problems, path, current_line, f"proposals[{index}] is not an object; skipped")
                continue
            prop, bad_critical, bad_other = _view_from(Proposal, raw, True)
            if bad_other:
                _legacy_problem(problems, path, current_line, f"proposals[{index}]: wrong-typed field(s) {', '.join(bad_other)}")
            if prop is None:
                _legacy_problem(problems, path, current_line,
                                f"proposals[{index}] unusable: {', '.join(bad_critical)}; skipped", Severity.ERROR)
                continue
            result.proposals.append(prop)
        result.proposals = sort_pending(result.proposals)
    return result


# -- Harn's own writers and readers, transcribed (pattern_knowledge.harn @0526ba57) ---------

DEFAULT_SUPPRESSION_DAYS = 14
PATTERN_SKILL_ROOTS = ((".claude", "skills"), (".burin", "skills"))  # pl_skill_roots; Harn writes the first


def skill_namespace_dir(namespace: str) -> str:
    """`pl_skill_namespace_dir`: the slug of the namespace, `custom` when that slug is empty."""
    slug = slugify(" ".join(namespace.split()))
    return slug or "custom"


def suppressed_until_after(now_ms: int, days: int = DEFAULT_SUPPRESSION_DAYS) -> str:
    """`pl_add_days_iso(pl_now(), days)`: `pl_now()` is `clock.date_iso()`, then Harn's datetime
    builtins add the days and print chrono's `to_rfc3339()` (`harn_time.date_iso_plus_days`)."""
    return date_iso_plus_days(now_ms, days)


def yaml_scalar(value: str | None) -> str:
    """`pl_yaml_scalar`: double quotes around the text with only `\\` and `"` escaped."""
    return '"' + (value or "").replace("\\", "\\\\").replace('"', '\\"') + '"'


_WS_CLASS = "[" + "".join(f"\\u{ord(c):04x}" for c in RUST_WHITESPACE) + "]"
# Patterns, not compiled objects: re compiles (and caches) each on first use, so the ~2 ms of
# compiling them is not paid by every process that imports this module only to read a project.
_WS_RUN = _WS_CLASS + "+"
# Harn's PEM rule is `BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----` (lazy).
# As one backtracking regex it is quadratic: every BEGIN without an END scans to the end of the text
# (a 648 KB prompt of BEGIN lines took ~30 s). `_redact_pem` finds the same matches in one pass: the
# header is searched alone, then the first footer after it (what the lazy body stops at); once no footer
# follows a header, none follows any later header either.
_PEM_BEGIN = r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
_PEM_END = r"-----END [A-Z ]*PRIVATE KEY-----"
_SECRET_VALUE = (r"(?i)\b(api[_-]?key|token|secret|password|credential)\b"
                 + _WS_CLASS + "*[:=]" + _WS_CLASS + "*" + "[^" + _WS_CLASS[1:-1] + "]+")


def pl_text(value: JsonValue) -> str:
    """`pl_text`: the value's text, trimmed, every whitespace run collapsed to one space (None -> "")."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return re.sub(_WS_RUN, " ", text.strip(RUST_WHITESPACE))


def redact_prompt(prompt: JsonValue) -> str:
    """`pl_redact_sensitive(pl_text(prompt))`: PEM private-key blocks, then `token=...`-style values."""
    text = _redact_pem(pl_text(prompt))
    return re.sub(_SECRET_VALUE, lambda m: f"{m.group(1)}=<redacted>", text)


def _redact_pem(text: str) -> str:
    """Every PEM private-key block (leftmost first, each to the first footer after its header)
    replaced by `<redacted-private-key>`: the matches of Harn's lazy rule, in linear time."""
    begin, end = re.compile(_PEM_BEGIN), re.compile(_PEM_END)
    out: list[str] = []
    pos = 0
    while True:
        head = begin.search(text, pos)
        if head is None:
            break
        foot = end.search(text, head.end())
        if foot is None:
            break
        out.append(text[pos:head.start()])
        out.append("<redacted-private-key>")
        pos = foot.end()
    out.append(text[pos:])
    return "".join(out)
