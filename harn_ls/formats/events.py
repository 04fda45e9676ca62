"""Read-only readers for Harn's event logs (harn-formats §H.2).

Two backends:
* SQLite (`.harn/events.sqlite`, `.harn/orchestrator/events.sqlite`, …) in WAL
  mode, in formats/events_sqlite.py (loaded only when a project has one).
  Every call opens a private read-only connection, runs a few short
  bounded queries and closes it, so Harn's writer is never blocked and its
  checkpoints are never pinned (§H.2.7 rules 1-4, 6, 7):
  - `mode=ro` URI while a `-wal` exists; `immutable=1` only when there is no
    `-wal` (then no writer is active and the main file holds every commit, and
    a plain `mode=ro` open would create `-wal`/`-shm` inside the project);
  - a `-wal` without its `-shm` is read from a copy in the cache folder
    (opening it in place would create the `-shm` in the project);
  - `PRAGMA trusted_schema=OFF`, `query_only=ON`, a progress-handler deadline
    on every statement, `LIMIT` on every query, statements fully consumed;
  - only real tables are queried (a view named `events` is refused, never
    evaluated); the later schema marker is checked (§H.2.4).
* The file backend (`.harn/events/topics/<topic>.jsonl`,
  `consumers/<topic>__<consumer>.json`), tailed by byte offset with the torn
  last line buffered; a topic file that shrank or was replaced (compaction)
  is read again from the start (§H.2.6).

Nothing here keeps a whole log in memory: summaries are per topic (count,
first/last id, latest time), pages are fetched on demand, and tails hand back
only events after a known id.
"""

from __future__ import annotations

import array
import contextlib
import os
import re
from dataclasses import field

import orjson

from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.safe_read import SMALL_STATE_CAP, open_project_file, read_confined, refusal_text

BUSY_TIMEOUT_S = 1.0
QUERY_DEADLINE_S = 2.0
MAX_TOPICS = 10_000
MAX_ROWS = 20_000  # per statement (every query also has its own LIMIT)
MAX_CONSUMERS = 10_000
PAGE_MAX = 1000
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024  # a bigger payload is shown as a note, not parsed
MAX_COPY_BYTES = 256 * 1024 * 1024  # -wal without -shm: largest log we copy to read
SCHEMA_MARKER = "_harn_sqlite_schema_versions"
KNOWN_SCHEMA_VERSION = 1
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]+$")

CODE_OPEN = "HL-EVT-001"  # cannot open / corrupt / locked
CODE_SCHEMA = "HL-EVT-002"  # missing table, a view in place of a table, unknown schema version
CODE_PAYLOAD = "HL-EVT-003"  # payload / headers not JSON
CODE_TOPIC = "HL-EVT-004"  # invalid topic name
CODE_CONSUMER = "HL-EVT-005"  # unreadable consumer cursor file
CODE_NO_SHM = "HL-EVT-006"  # -wal present, -shm missing
CODE_LINE = "HL-EVT-007"  # file backend line is not a FileRecord
CODE_DUP_ID = "HL-EVT-008"  # file backend: same id twice (two writers)
CODE_UNKNOWN_KIND = "HL-EVT-009"  # kind not known on a known topic


def valid_topic(topic: str) -> bool:
    return bool(topic) and _TOPIC_RE.match(topic) is not None


@lean_dataclass(slots=True)
class Event:
    """One event of an event log topic."""

    topic: str
    id: int
    kind: str
    payload: JsonValue
    headers: JsonObject
    occurred_at_ms: int | None
    problem: Problem | None = None  # payload or headers did not parse


@lean_dataclass(slots=True)
class TopicInfo:
    """One topic of an event log: how many events, which ids, the newest time."""

    topic: str
    count: int = 0
    first_id: int = 0
    last_id: int = 0  # topic_heads.last_id (SQLite) or the last id in the file
    latest_ms: int | None = None  # occurred_at_ms of the newest event

    def to_json(self) -> JsonObject:
        return {"topic": self.topic, "count": self.count, "first_id": self.first_id, "last_id": self.last_id,
                "latest_ms": self.latest_ms}


@lean_dataclass(slots=True)
class Consumer:
    """A consumer's cursor on one topic, and how far behind the head it is."""

    topic: str
    consumer_id: str
    cursor: int
    updated_at_ms: int | None
    lag: int = 0  # events after the cursor (head - cursor, never negative)

    def to_json(self) -> JsonObject:
        return {"topic": self.topic, "consumer_id": self.consumer_id, "cursor": self.cursor,
                "updated_at_ms": self.updated_at_ms, "lag": self.lag}


@lean_dataclass(slots=True)
class LogSummary:
    """An event log's topics and consumers, or why it could not be read."""

    topics: dict[str, TopicInfo] = field(default_factory=dict)
    consumers: list[Consumer] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    schema_version: int | None = None
    # the log holds idempotency keys (one indexed row probed; the count is taken only when shown)
    has_idempotency_keys: bool = False
    ok: bool = True  # False when the log could not be read at all (the previous summary is kept by callers)


def _decode_json(raw: object) -> JsonValue:
    if isinstance(raw, memoryview):
        raw = bytes(raw)
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not isinstance(raw, (bytes, bytearray)):
        raise ValueError("not text")
    if len(raw) > MAX_PAYLOAD_BYTES:
        return {"harn_ls_note": f"payload of {len(raw)} bytes not shown"}
    return orjson.loads(raw)


def make_event(path: str, topic: str, event_id: int, kind: object, payload: object, headers: object, occurred: object,
               *, line: int = 0) -> Event:
    """An Event from raw stored values; malformed parts become a Problem on the event."""
    errors = []
    if not isinstance(kind, str):
        errors.append("kind is not text")
        kind = str(kind)
    if isinstance(payload, (bytes, bytearray, memoryview, str)):
        try:
            payload = _decode_json(payload)
        except (ValueError, orjson.JSONDecodeError, RecursionError):
            errors.append("payload is not valid JSON")
            payload = None
    if isinstance(headers, (bytes, str)):
        try:
            headers = _decode_json(headers)
        except (ValueError, orjson.JSONDecodeError, RecursionError):
            errors.append("headers are not valid JSON")
            headers = {}
    if not isinstance(headers, dict):
        if headers is not None:
            errors.append("headers are not an object")
        headers = {}
    if isinstance(occurred, bool) or not isinstance(occurred, int):
        occurred = None
    ev = Event(topic, int(event_id), kind, payload, headers, occurred)
    if errors:
        ev.problem = Problem(path, line, CODE_PAYLOAD, f"topic {topic} event {event_id}: " + "; ".join(errors) +
                             " (Harn fails to read this event)", Severity.ERROR)
    return ev



# =====================================================================================================================
# File backend
# =====================================================================================================================
class FileTopic:
    """One `topics/<topic>.jsonl`: tailed by byte offset, with the start offset of every event kept
    (8 bytes an event) so pages can be read newest first without holding the events."""

    CHUNK = 1 << 20

    def __init__(self, path: str, topic: str, root: str | None = None) -> None:
        self.path = path
        self.topic = topic
        self.root = root
        self.offsets = array.array("q")
        self.ids = array.array("q")
        self.latest_ms: int | None = None
        self.read_to = 0
        self._ino: int | None = None
        self._head = b""
        self.problems: list[Problem] = []
        self.torn = 0
        self.line_no = 0
        self._seen_dup = False

    @property
    def count(self) -> int:
        return len(self.offsets)

    def info(self) -> TopicInfo:
        n = len(self.ids)
        return TopicInfo(self.topic, n, self.ids[0] if n else 0, max(self.ids[-1], 0) if n else 0, self.latest_ms)

    def refresh(self) -> tuple[bool, list[Event]]:
        """Read what was appended. Returns (reset, new events). `reset`: the file shrank or was replaced
        (compaction) and everything was read again."""
        try:
            fh = open_project_file(self.path, self.root)
        except OSError as exc:
            reset = self.count > 0
            FileTopic.__init__(self, self.path, self.topic, self.root)
            if not isinstance(exc, FileNotFoundError):
                self.problems.append(Problem(self.path, 0, CODE_LINE, f"topic log {refusal_text(exc)}", Severity.ERROR))
            return reset, []
        new: list[Event] = []
        with fh:
            st = os.fstat(fh.fileno())
            reset = False
            if self._ino is not None:
                head = fh.read(len(self._head))
                if st.st_ino != self._ino or st.st_size < self.read_to or head != self._head:
                    FileTopic.__init__(self, self.path, self.topic, self.root)
                    reset = True
            self._ino = st.st_ino
            fh.seek(0)
            self._head = fh.read(64)
            fh.seek(self.read_to)
            carry = b""
            base = self.read_to
            while True:
                chunk = fh.read(self.CHUNK)
                if not chunk:
                    break
                data = carry + chunk
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = data
                    if len(carry) > 64 * 1024 * 1024:
                        break  # not a log line any more; stop rather than buffer without bound
                    continue
                start = 0
                while start <= cut:
                    nl = data.index(b"\n", start)
                    self._line(data[start:nl], base + start, new)
                    start = nl + 1
                base += cut + 1
                carry = data[cut + 1:]
            self.read_to = base
            self.torn = len(carry)
        return reset, new

    def _line(self, raw: bytes, offset: int, new: list[Event]) -> None:
        self.line_no += 1
        if not raw.strip():
            return
        ev = self._parse(raw, self.line_no, self.problems)
        if ev is None:
            return
        if self.ids and ev.id <= self.ids[-1] and not self._seen_dup:
            self._seen_dup = True
            self.problems.append(Problem(self.path, self.line_no, CODE_DUP_ID,
                f"event id {ev.id} is not above the previous id {self.ids[-1]}: two processes appended to this file-backend "
                "log (§H.2.6); events are shown in file order", Severity.WARNING))
        self.offsets.append(offset)
        self.ids.append(ev.id)
        if ev.occurred_at_ms is not None:
            self.latest_ms = ev.occurred_at_ms
        new.append(ev)

    def _parse(self, raw: bytes, line_no: int, problems: list[Problem]) -> Event | None:
        try:
            rec = orjson.loads(raw)
        except (orjson.JSONDecodeError, RecursionError):
            problems.append(Problem(self.path, line_no, CODE_LINE,
                "line is not valid JSON; Harn refuses to read this topic until it is fixed", Severity.ERROR))
            return None
        ev = rec.get("event") if isinstance(rec, dict) else None
        eid = rec.get("id") if isinstance(rec, dict) else None
        if not isinstance(ev, dict) or isinstance(eid, bool) or not isinstance(eid, int):
            problems.append(Problem(self.path, line_no, CODE_LINE,
                'line is not {"id": <int>, "event": {...}}; Harn refuses to read this topic until it is fixed', Severity.ERROR))
            return None
        event = make_event(self.path, self.topic, eid, ev.get("kind"), ev.get("payload"), ev.get("headers") or {},
                           ev.get("occurred_at_ms"), line=line_no)
        if event.problem is not None:
            problems.append(event.problem)
        return event

    def page(self, page: int, size: int) -> list[Event]:
        """Newest first, re-read from the file by offset."""
        size = max(1, min(int(size), PAGE_MAX))
        end = len(self.offsets) - max(0, int(page)) * size
        if end <= 0:
            return []
        idxs = range(end - 1, max(0, end - size) - 1, -1)
        out: list[Event] = []
        try:
            with open_project_file(self.path, self.root) as fh:
                for i in idxs:
                    fh.seek(self.offsets[i])
                    raw = fh.readline(MAX_PAYLOAD_BYTES + 4096)
                    if not raw.endswith(b"\n"):
                        continue
                    ev = self._parse(raw.rstrip(b"\r\n"), 0, [])  # (its problems were reported when it was tailed)
                    if ev is not None:
                        out.append(ev)
        except OSError:
            return out
        return out


def _read_consumer_file(path: str, root: str | None = None) -> tuple[Consumer | None, Problem | None]:
    try:
        data = read_confined(path, root, SMALL_STATE_CAP)  # a symlink to /dev/stdin or a FIFO: refused, never waited on
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, Problem(path, 0, CODE_CONSUMER, f"consumer cursor file {refusal_text(exc)}", Severity.WARNING)
    try:
        value = orjson.loads(data)
    except (orjson.JSONDecodeError, RecursionError) as exc:
        return None, Problem(path, 0, CODE_CONSUMER, f"consumer cursor file unreadable ({type(exc).__name__}); "
                                                     "Harn's pump fails to start on it", Severity.WARNING)
    if not isinstance(value, dict) or not isinstance(value.get("topic"), str) \
            or not isinstance(value.get("consumer_id"), str) or not isinstance(value.get("cursor"), int):
        return None, Problem(path, 0, CODE_CONSUMER, "consumer cursor file lacks topic/consumer_id/cursor", Severity.WARNING)
    upd = value.get("updated_at_ms")
    return Consumer(value["topic"], value["consumer_id"], value["cursor"], upd if isinstance(upd, int) else None), None


class FileEventLog:
    """A file-backend event directory (`.harn/events/`)."""

    backend = "file"

    def __init__(self, path: str, root: str | None = None) -> None:
        self.path = path
        self.root = root  # when given, every file read must stay inside it (safe_read)
        self.topics: dict[str, FileTopic] = {}
        self.problems: list[Problem] = []

    def session(self) -> contextlib.nullcontext[None]:
        """(The SQLite backend's `session`: files need none, every read is its own.)"""
        return contextlib.nullcontext()

    @property
    def exists(self) -> bool:
        return os.path.isdir(os.path.join(self.path, "topics"))

    def refresh(self) -> dict[str, tuple[bool, list[Event]]]:
        """Tail every topic file; returns {topic: (reset, new events)} for topics that changed."""
        self.problems = []
        tdir = os.path.join(self.path, "topics")
        try:
            names = sorted(os.listdir(tdir))[:MAX_TOPICS]
        except OSError:
            names = []
        seen = set()
        changed: dict[str, tuple[bool, list[Event]]] = {}
        for name in names:
            if not name.endswith(".jsonl") or name.startswith("."):
                continue
            topic = name[: -len(".jsonl")]
            fpath = os.path.join(tdir, name)
            if os.path.islink(fpath) or not os.path.isfile(fpath):
                continue
            if not valid_topic(topic):
                self.problems.append(Problem(fpath, 0, CODE_TOPIC,
                    f"{name}: not a valid Harn topic name; Harn's topics() fails on this directory", Severity.WARNING))
                continue
            seen.add(topic)
            ft = self.topics.get(topic)
            if ft is None:
                ft = self.topics[topic] = FileTopic(fpath, topic, self.root)
            reset, new = ft.refresh()
            if reset or new:
                changed[topic] = (reset, new)
        for topic in [t for t in self.topics if t not in seen]:
            del self.topics[topic]
            changed[topic] = (True, [])
        return changed

    def summary(self) -> LogSummary:
        out = LogSummary()
        for topic, ft in self.topics.items():
            out.topics[topic] = ft.info()
            out.problems.extend(ft.problems)
        out.problems.extend(self.problems)
        cdir = os.path.join(self.path, "consumers")
        try:
            names = sorted(os.listdir(cdir))[:MAX_CONSUMERS]
        except OSError:
            names = []
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            cons, prob = _read_consumer_file(os.path.join(cdir, name), self.root)
            if prob is not None:
                out.problems.append(prob)
            if cons is not None:
                head = out.topics.get(cons.topic)
                cons.lag = max(0, head.last_id - cons.cursor) if head else 0
                out.consumers.append(cons)
        return out

    def read_page(self, topic: str, page: int, size: int, problems: list[Problem] | None = None) -> list[Event]:
        ft = self.topics.get(topic)
        return ft.page(page, size) if ft is not None else []

    def read_after(self, topic: str, after_id: int, limit: int = 500, problems: list[Problem] | None = None) -> list[Event]:
        ft = self.topics.get(topic)
        if ft is None:
            return []
        out = []
        for i in range(len(ft.ids)):
            if ft.ids[i] > after_id:
                ev = ft.page(len(ft.ids) - 1 - i, 1)
                out.extend(ev)
                if len(out) >= limit:
                    break
        return out
