"""Run records (`.harn-runs/<run_id>.json`, harn-formats §G.3) and worker snapshots.

Harn writes a run record as pretty JSON to `<run_id>.json.tmp` and renames it
into place, so a reader normally sees whole files; a half-written file means
the rename fallback (direct write) or a foreign writer, and is reported with
`retry=True`. Records can be large (a transcript of 10 MB is normal), so each
file is read once into bytes and parsed once with orjson; transcript views
share the parsed lists instead of copying them. A record of LAZY_RECORD_BYTES
or more is read in parts (formats/json_raw): its transcript's `events` and
`messages` stay as their JSON text, each element parsed when it is used.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING, cast

import orjson

from harn_ls.formats import json_raw
from harn_ls.formats.problems import Problem, Severity
from harn_ls.formats.transcript_summary import TranscriptSummary
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.safe_read import (
    RUN_RECORD_CAP,
    ReadRefused,
    confinement_problem,
    json_density_problem,
    open_confined,
    read_opened,
    regular_file_size,
)

if TYPE_CHECKING:
    from harn_ls.formats.transcripts import Transcript

RUN_RECORD_TYPE = "run_record"
LLM_TRANSCRIPT_NAME = "llm_transcript.jsonl"
PLAYGROUND_DIR = "playground"
PLAYGROUND_RUN_NAME = "run.json"
MAX_RECORD_BYTES = RUN_RECORD_CAP  # beyond this we refuse rather than freeze the editor (safe_read caps)
# A record this big or bigger is read in parts (`_record_in_parts`): parsed whole, the 14 MB record of
# the bench held ~54 MB at once; in parts its bytes and one transcript event at a time
LAZY_RECORD_BYTES = 1024 * 1024

CODE_UNREADABLE = "HL-RUN-001"
CODE_INVALID_UTF8 = "HL-RUN-002"
CODE_INVALID_JSON = "HL-RUN-003"
CODE_NOT_OBJECT = "HL-RUN-004"
CODE_WRONG_TYPE_TAG = "HL-RUN-005"
CODE_BAD_FIELD = "HL-RUN-006"
CODE_BAD_TRANSCRIPT = "HL-RUN-007"
CODE_TOO_LARGE = "HL-RUN-008"


@lean_dataclass(slots=True)
class RunRecord:
    """A run record (`.harn-runs/<id>.json`) as read, with its problems."""

    id: str
    path: str
    status: str | None = None
    workflow_id: str | None = None
    workflow_name: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    stages: list[JsonObject] = field(default_factory=list)
    usage: JsonObject = field(default_factory=dict)
    # Transcript views (TranscriptSummary when read for a listing)
    transcripts: list[Transcript | TranscriptSummary] = field(default_factory=list)
    llm_transcript_path: str | None = None
    problems: list[Problem] = field(default_factory=list)
    mtime: float | None = None
    size: int | None = None
    task: str | None = None
    parent_run_id: str | None = None
    playground_job: str | None = None  # set for `.harn-runs/playground/<job>/run.json`
    retry: bool = False  # the file looked half-written; read it again after the next change
    data: JsonObject | None = None  # the whole parsed object (shared, not copied)

    @property
    def ok(self) -> bool:
        return self.data is not None


@lean_dataclass(slots=True)
class WorkerSnapshot:
    """A worker's snapshot file: its status and transcript."""

    id: str
    path: str
    status: str | None = None
    transcript: Transcript | None = None
    problems: list[Problem] = field(default_factory=list)
    mtime: float | None = None
    size: int | None = None
    retry: bool = False
    data: JsonObject | None = None


def _stem(path: str) -> str:
    """The file name without its `.json`."""
    name = os.path.basename(path)
    return name[: -len(".json")] if name.endswith(".json") else name


def llm_sidecar_path(record_path: str) -> str:
    """`<dir>/<stem>-llm/llm_transcript.jsonl` — `run.json` in a playground job gives `run-llm/`."""
    return os.path.join(os.path.dirname(record_path), f"{_stem(record_path)}-llm", LLM_TRANSCRIPT_NAME)


def llm_log_places(record_path: str, rid: str | None) -> list[str]:
    """Where the turn log of a run record may be, in the order they are tried: `llm_sidecar_path`,
    then `<id>-llm/` next to the record when its id differs from its file name. An id that would
    lead into another folder (a separator, `..`) gives no second place."""
    places = [llm_sidecar_path(record_path)]
    if rid:
        alt = os.path.join(os.path.dirname(record_path), f"{rid}-llm", LLM_TRANSCRIPT_NAME)
        if alt != places[0] and os.path.basename(os.path.dirname(alt)) == f"{rid}-llm":
            places.append(alt)
    return places


def _sidecar_ok(sidecar: str, record_path: str, problems: list[Problem]) -> bool:
    """The turn log next to a run record: a regular file that stays inside the record's directory
    (a link to /dev/zero or out of the project is reported, never read)."""
    if not os.path.lexists(sidecar):
        return False
    why = confinement_problem(sidecar, os.path.dirname(os.path.abspath(record_path)))
    if why is None and regular_file_size(sidecar) is None:
        why = f"{sidecar} is not a regular file; not read"
    if why is not None:
        problems.append(Problem(sidecar, 0, CODE_UNREADABLE, f"LLM turn log: {why}", Severity.WARNING))
        return False
    return True


def _load_object(path: str, problems: list[Problem], what: str,
                 in_parts: bool = False) -> tuple[JsonObject | None, bool, os.stat_result | None]:
    """Read + parse once, with safe_read's checks (regular file, not a link swapped in, the size
    cap). Returns (object or None, retry, stat). `in_parts`: a run record of LAZY_RECORD_BYTES or
    more keeps its transcript's arrays unparsed (`_record_in_parts`); not a worker snapshot, which
    the model keeps (its arrays would keep the file's bytes alive)."""
    try:
        fd, st = open_confined(path, None, MAX_RECORD_BYTES)
    except ReadRefused as exc:
        code = CODE_TOO_LARGE if exc.kind == "too-large" else CODE_UNREADABLE
        problems.append(Problem(path, 0, code, f"{what} {exc}", Severity.WARNING))
        return None, False, None
    except FileNotFoundError:
        problems.append(Problem(path, 0, CODE_UNREADABLE, f"{what} disappeared before it could be read (renamed or deleted)",
                                Severity.INFO))
        return None, True, None
    except OSError as exc:
        problems.append(Problem(path, 0, CODE_UNREADABLE, f"cannot read {what}: {exc.strerror}", Severity.ERROR))
        return None, False, None
    try:
        raw = read_opened(fd, st, path, MAX_RECORD_BYTES)
    except ReadRefused as exc:
        problems.append(Problem(path, 0, CODE_TOO_LARGE, f"{what} {exc}", Severity.WARNING))
        return None, False, None
    except OSError as exc:
        problems.append(Problem(path, 0, CODE_UNREADABLE, f"cannot read {what}: {exc.strerror}", Severity.ERROR))
        return None, False, None
    finally:
        os.close(fd)
    dense = json_density_problem(raw)
    if dense is not None:
        problems.append(Problem(path, 0, CODE_TOO_LARGE, f"{what} {dense}", Severity.WARNING))
        return None, False, st
    if not raw.strip():
        problems.append(Problem(path, 0, CODE_INVALID_JSON,
            f"{what} is empty — probably caught mid-write; it will be read again when it changes", Severity.WARNING))
        return None, True, st
    if in_parts and len(raw) >= LAZY_RECORD_BYTES:
        parts = _record_in_parts(raw)
        if parts is not None:
            return parts, False, st
    try:
        value: JsonValue = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as uexc:
            problems.append(Problem(path, _line_of(raw, uexc.start), CODE_INVALID_UTF8,
                f"{what} is not valid UTF-8 (byte {uexc.start}); Harn cannot load it either", Severity.ERROR))
            return None, False, st
        # Truncated JSON is what a reader sees while a direct (non-rename) write is in progress.
        problems.append(Problem(path, _line_of(raw, exc.pos), CODE_INVALID_JSON,
            f"{what} is not valid JSON ({exc.msg}); probably half-written — "
            "Harn writes via .tmp + rename, so it will be re-read on the next change", Severity.ERROR))
        return None, True, st
    except RecursionError:
        problems.append(Problem(path, 0, CODE_INVALID_JSON, f"{what} is nested too deeply to parse", Severity.ERROR))
        return None, False, st
    if not isinstance(value, dict):
        problems.append(Problem(path, 0, CODE_NOT_OBJECT,
                                f"{what} is a JSON {type(value).__name__}, not an object; Harn ignores it", Severity.ERROR))
        return None, False, st
    return value, False, st


def _line_of(raw: bytes, pos: int) -> int:
    return raw.count(b"\n", 0, max(0, min(pos, len(raw)))) + 1


def _field(data: JsonObject, name: str, types: tuple[type, ...], problems: list[Problem], path: str) -> JsonValue:
    v = data.get(name)
    if v is None:
        return None
    if isinstance(v, bool) and bool not in types or not isinstance(v, types):
        problems.append(Problem(path, 0, CODE_BAD_FIELD,
            f"{name!r} is {type(v).__name__}, expected {'/'.join(t.__name__ for t in types)}; "
            "Harn's serde reader rejects the record (shown here without the field)", Severity.WARNING))
        return None
    return v


def _timestamp(data: JsonObject, name: str, problems: list[Problem], path: str) -> str | None:
    # Some mirror fields hold epoch seconds; accept numbers and show them as text.
    v = data.get(name)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    text: str | None = _field(data, name, (str,), problems, path)
    return text


def _transcript(value: JsonValue, source: str, path: str, problems: list[Problem], where: str,
                summary: bool = False) -> Transcript | TranscriptSummary | None:
    if value is None:
        return None
    # start-up: the transcript views (~10 ms of classes) load once a record holding a transcript is
    # read from its file; a warm command restores the summaries from the state cache instead
    from harn_ls.formats.transcripts import transcript_from_value, transcript_summary_from_value

    t: Transcript | TranscriptSummary | None
    t_problems: list[Problem]
    if summary:
        found = transcript_summary_from_value(value, source, path=path)
        t, t_problems = found if found is not None else (None, [])
    else:
        t = transcript_from_value(value, source, path=path)
        t_problems = t.problems if t is not None else []
    if t is None:
        problems.append(Problem(path, 0, CODE_BAD_TRANSCRIPT,
            f"{where}transcript is a {type(value).__name__}, not a transcript object; not shown", Severity.WARNING))
        return None
    problems.extend(t_problems)
    return t


def read_run_record(path: str, *, summaries: bool = False) -> RunRecord:
    """Read one run record. Never raises: unreadable/invalid input gives Problems and `data=None`.

    With `summaries`, `transcripts` holds a `TranscriptSummary` per transcript (counts only, the
    same problems) instead of the full views: what a listing needs, without building every event."""
    problems: list[Problem] = []
    data, retry, st = _load_object(path, problems, "run record", in_parts=True)
    return _record_from(path, data, retry, st, problems, summaries)


def _record_in_parts(raw: bytes) -> JsonObject | None:
    """A big record as a whole parse gives it, but its transcript's `events` and `messages` as
    json_raw.RawArray (each element parsed when used; the record keeps `raw` alive, at most
    MAX_RECORD_BYTES). None when anything is refused: the caller parses it whole, which reports
    what is wrong exactly as for any record."""
    try:
        transcript = json_raw.members(raw).get("transcript")
        if transcript is None or not json_raw.starts_with(transcript, b"{"):
            return None  # (nothing big to leave out)
        arrays = {}
        for k, p in json_raw.members(transcript).items():
            if k in ("events", "messages") and json_raw.starts_with(p, b"["):
                items = json_raw.elements(p, raw)
                if items is not None:  # (else too small on average: parsed with the record)
                    arrays[k] = (p, items)
        if not arrays:
            return None
        # the record without the arrays (each the last of its key, as a whole parse keeps it), parsed
        # whole; then each array's elements where they stand: record, transcript, array
        cuts = sorted((json_raw.span(p, raw), k) for k, (p, _items) in arrays.items())
        pieces: list[bytes] = []
        at = 0
        for (start, end), _k in cuts:
            pieces += (raw[at:start], b"[]")
            at = end
        pieces.append(raw[at:])
        data = json_raw.parse(b"".join(pieces))
        if not isinstance(data, dict) or not isinstance(data.get("transcript"), dict):
            return None
        # the events' check parse also tells which a transcript view must look at (formats/transcripts)
        from harn_ls.formats.transcripts import event_clean

        for k, (_p, items) in arrays.items():
            data["transcript"][k] = json_raw.checked_array(items, 3, event_clean if k == "events" else None)
    except json_raw.NotRead:
        return None
    return data


def _record_from(path: str, data: JsonObject | None, retry: bool, st: os.stat_result | None, problems: list[Problem],
                 summaries: bool) -> RunRecord:
    name = os.path.basename(path)
    playground_job = None
    if name == PLAYGROUND_RUN_NAME and os.path.basename(os.path.dirname(os.path.dirname(path))) == PLAYGROUND_DIR:
        playground_job = os.path.basename(os.path.dirname(path))
    record = RunRecord(id=playground_job or _stem(path), path=path, problems=problems, retry=retry, playground_job=playground_job,
                       mtime=st.st_mtime if st else None, size=st.st_size if st else None)
    sidecar = llm_sidecar_path(path)
    if _sidecar_ok(sidecar, path, problems):
        record.llm_transcript_path = sidecar
    if data is None:
        return record
    record.data = data
    kind = data.get("_type")
    if kind is not None and kind != RUN_RECORD_TYPE:
        problems.append(Problem(path, 0, CODE_WRONG_TYPE_TAG,
            f"_type is {kind!r}, not 'run_record'; read as a run record anyway", Severity.WARNING))
    rid = _field(data, "id", (str,), problems, path)
    if rid:
        record.id = rid
        if record.llm_transcript_path is None:
            for alt in llm_log_places(path, rid)[1:]:
                if _sidecar_ok(alt, path, problems):
                    record.llm_transcript_path = alt
    record.status = _field(data, "status", (str,), problems, path)
    record.workflow_id = _field(data, "workflow_id", (str,), problems, path)
    record.workflow_name = _field(data, "workflow_name", (str,), problems, path)
    record.task = _field(data, "task", (str,), problems, path)
    record.parent_run_id = _field(data, "parent_run_id", (str,), problems, path)
    record.started_at = _timestamp(data, "started_at", problems, path)
    record.finished_at = _timestamp(data, "finished_at", problems, path)
    record.usage = _field(data, "usage", (dict,), problems, path) or {}
    stages = _field(data, "stages", (list,), problems, path) or []
    source = f"run:{record.id}"
    top = _transcript(data.get("transcript"), source, path, problems, "", summaries)
    if top is not None:
        record.transcripts.append(top)
    for index, stage in enumerate(stages):
        if not isinstance(stage, dict):
            problems.append(Problem(path, 0, CODE_BAD_FIELD, f"stages[{index}] is not an object; skipped", Severity.WARNING))
            continue
        record.stages.append(stage)
        sid = stage.get("id") if isinstance(stage.get("id"), str) else str(index)
        t = _transcript(stage.get("transcript"), f"{source}/stage:{sid}", path, problems, f"stage {sid}: ", summaries)
        if t is not None:
            record.transcripts.append(t)
    return record


def read_worker_snapshot(path: str) -> WorkerSnapshot:
    """Read `.harn/workers/<worker_id>.json`. Field names other than `transcript` are best effort."""
    problems: list[Problem] = []
    data, retry, st = _load_object(path, problems, "worker snapshot")
    snap = WorkerSnapshot(id=_stem(path), path=path, problems=problems, retry=retry,
                          mtime=st.st_mtime if st else None, size=st.st_size if st else None)
    if data is None:
        return snap
    snap.data = data
    for key in ("id", "worker_id"):
        v = data.get(key)
        if isinstance(v, str) and v:
            snap.id = v
            break
    snap.status = _field(data, "status", (str,), problems, path)
    # (not a summary: a full Transcript view)
    snap.transcript = cast("Transcript | None", _transcript(data.get("transcript"), path, path, problems, ""))
    return snap
