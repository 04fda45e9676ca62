"""Read-only readers for Harn's event logs (harn-formats §H.2).

Two backends:
* SQLite (`.harn/events.sqlite`, `.harn/orchestrator/events.sqlite`, …) in WAL
  mode. Every call opens a private read-only connection, runs a few short
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
import os
import re
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable

import orjson

from harn_ls.formats import sqlite_safe
from harn_ls.formats.problems import Problem, Severity

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


@dataclass(slots=True)
class Event:
    topic: str
    id: int
    kind: str
    payload: Any
    headers: dict
    occurred_at_ms: int | None
    problem: Problem | None = None  # payload or headers did not parse


@dataclass(slots=True)
class TopicInfo:
    topic: str
    count: int = 0
    first_id: int = 0
    last_id: int = 0  # topic_heads.last_id (SQLite) or the last id in the file
    latest_ms: int | None = None  # occurred_at_ms of the newest event

    def to_json(self) -> dict:
        return {"topic": self.topic, "count": self.count, "first_id": self.first_id, "last_id": self.last_id,
                "latest_ms": self.latest_ms}


@dataclass(slots=True)
class Consumer:
    topic: str
    consumer_id: str
    cursor: int
    updated_at_ms: int | None
    lag: int = 0  # events after the cursor (head - cursor, never negative)

    def to_json(self) -> dict:
        return {"topic": self.topic, "consumer_id": self.consumer_id, "cursor": self.cursor,
                "updated_at_ms": self.updated_at_ms, "lag": self.lag}


@dataclass(slots=True)
class LogSummary:
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    consumers: list[Consumer] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    schema_version: int | None = None
    ok: bool = True  # False when the log could not be read at all (the previous summary is kept by callers)


def _decode_json(raw: Any) -> Any:
    if isinstance(raw, memoryview):
        raw = bytes(raw)
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not isinstance(raw, (bytes, bytearray)):
        raise ValueError("not text")
    if len(raw) > MAX_PAYLOAD_BYTES:
        return {"harn_ls_note": f"payload of {len(raw)} bytes not shown"}
    return orjson.loads(raw)


def make_event(path: str, topic: str, event_id: int, kind: Any, payload: Any, headers: Any, occurred: Any,
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
# SQLite backend
# =====================================================================================================================
class SqliteEventLog:
    """One `events.sqlite`. Cheap to construct; every method opens and closes its own connection."""

    backend = "sqlite"

    def __init__(self, path: str, copy_dir: str | None = None, root: str | None = None) -> None:
        self.path = path
        self.root = root  # when given, the file's real path must stay inside it
        self.copy_dir = copy_dir  # where a -wal without -shm is copied to be read (outside the project)
        self.exists = os.path.isfile(path)

    # ------------------------------------------------------------ connections
    def _connect(self, problems: list[Problem]) -> tuple[sqlite3.Connection, str | None] | None:
        """A locked-down read-only connection (formats/sqlite_safe.py); a `-wal` without its `-shm`
        is read from a copy in the cache folder, since opening it in place would create the `-shm`."""
        tmp = None
        target = self.path
        if os.path.exists(self.path + "-wal") and not os.path.exists(self.path + "-shm"):
            tmp = self._copy_for_read(problems)
            if tmp is None:
                return None
            target = os.path.join(tmp, "events.sqlite")  # mode=ro there replays the copied WAL
        try:
            conn = sqlite_safe.open_readonly(target, None if tmp else self.root)
        except BaseException:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        return conn, tmp

    def _copy_for_read(self, problems: list[Problem]) -> str | None:
        try:
            size = os.path.getsize(self.path) + os.path.getsize(self.path + "-wal")
        except OSError:
            return None
        if size > MAX_COPY_BYTES or not self.copy_dir:
            problems.append(Problem(self.path, 0, CODE_NO_SHM,
                f"{os.path.basename(self.path)}-wal exists without its -shm file; not read (reading in place would "
                "create -shm inside the project)", Severity.WARNING))
            return None
        os.makedirs(self.copy_dir, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="evcopy-", dir=self.copy_dir)
        try:
            shutil.copyfile(self.path, os.path.join(tmp, "events.sqlite"))
            shutil.copyfile(self.path + "-wal", os.path.join(tmp, "events.sqlite-wal"))
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            return None
        problems.append(Problem(self.path, 0, CODE_NO_SHM,
            f"{os.path.basename(self.path)}-wal exists without its -shm file (a writer crashed?); shown from a copy",
            Severity.INFO))
        return tmp

    def _run(self, problems: list[Problem], fn) -> Any:
        """Open, run `fn(query)`, close. SQLite errors and refusals become a Problem; returns None then."""
        if not os.path.isfile(self.path):
            return None
        opened = None
        try:
            opened = self._connect(problems)
            if opened is None:
                return None
            conn = opened[0]

            def query(sql: str, args: tuple = ()) -> list:
                # every statement: a deadline, a row cap, fully consumed (never a statement left open)
                return sqlite_safe.query(conn, sql, args, QUERY_DEADLINE_S, MAX_ROWS)

            self._check_schema(conn, query, problems)
            return fn(query)
        except _SchemaRefused:
            return None
        except sqlite_safe.SqliteRefused as exc:
            problems.append(Problem(self.path, 0, CODE_OPEN, f"event log not read: {exc}", Severity.ERROR))
            return None
        except sqlite3.Error as exc:
            msg = str(exc)
            hint = ("it may be locked or mid-write — retried on the next change" if "locked" in msg or "busy" in msg
                    else "the database may be corrupt")
            problems.append(Problem(self.path, 0, CODE_OPEN, f"cannot read event log ({msg}); {hint}", Severity.ERROR))
            return None
        finally:
            if opened is not None:
                sqlite_safe.close_quietly(opened[0])
                if opened[1]:
                    shutil.rmtree(opened[1], ignore_errors=True)

    def _check_schema(self, conn, query, problems: list[Problem]) -> None:
        try:
            cols = sqlite_safe.table_columns(conn, "events", QUERY_DEADLINE_S)
        except sqlite_safe.SqliteDeadline:
            raise
        except sqlite_safe.SqliteRefused as exc:
            problems.append(Problem(self.path, 0, CODE_SCHEMA, f"{exc}; not a Harn event log (nothing read)",
                                    Severity.ERROR))
            raise _SchemaRefused() from None
        missing = {"topic", "event_id", "kind", "payload", "headers", "occurred_at_ms"} - set(cols)
        if missing:
            problems.append(Problem(self.path, 0, CODE_SCHEMA, f"table 'events' lacks {', '.join(sorted(missing))}; "
                                    "not a Harn event log (nothing read)", Severity.ERROR))
            raise _SchemaRefused()
        self._tables = {"events"}
        for name in ("topic_heads", "consumers"):
            try:
                sqlite_safe.table_columns(conn, name, QUERY_DEADLINE_S)
                self._tables.add(name)
            except sqlite_safe.SqliteDeadline:
                raise
            except sqlite_safe.SqliteRefused as exc:
                if "no table" not in str(exc):
                    problems.append(Problem(self.path, 0, CODE_SCHEMA, f"{exc}; ignored", Severity.WARNING))
        self.schema_version = None
        if sqlite_safe.object_kind(conn, SCHEMA_MARKER, QUERY_DEADLINE_S) == "table":
            row = query(f"SELECT version FROM main.{SCHEMA_MARKER} WHERE name = 'event_log' LIMIT 1")
            if row and isinstance(row[0][0], int):
                self.schema_version = row[0][0]
                if row[0][0] > KNOWN_SCHEMA_VERSION:
                    problems.append(Problem(self.path, 0, CODE_SCHEMA,
                        f"event log schema version {row[0][0]} is newer than this viewer knows "
                        f"({KNOWN_SCHEMA_VERSION}); unknown schema — shown as far as the known columns go",
                        Severity.WARNING))

    # ------------------------------------------------------------- queries
    def summary(self, known: dict[str, TopicInfo] | None = None) -> LogSummary:
        """Topics (count, ids, latest time) and consumer cursors with lag.

        `known` (the previous summary's topics) lets unchanged topics skip their queries: a topic
        whose `topic_heads.last_id` did not move keeps its numbers."""
        out = LogSummary()

        def fn(query):
            heads: dict[str, int] = {}
            if "topic_heads" in self._tables:
                for topic, last in query("SELECT topic, last_id FROM main.topic_heads LIMIT ?", (MAX_TOPICS,)):
                    if isinstance(topic, str) and isinstance(last, int):
                        heads[topic] = last
            else:
                for (topic,) in query("SELECT DISTINCT topic FROM main.events LIMIT ?", (MAX_TOPICS,)):
                    if isinstance(topic, str):
                        heads[topic] = -1
            if len(heads) >= MAX_TOPICS:
                out.problems.append(Problem(self.path, 0, CODE_SCHEMA, f"more than {MAX_TOPICS} topics; the rest are not shown",
                                            Severity.INFO))
            for topic, last in heads.items():
                if not valid_topic(topic):
                    out.problems.append(Problem(self.path, 0, CODE_TOPIC,
                        f"topic {topic[:80]!r} is not a valid Harn topic name (letters, digits, '.', '_', '-')", Severity.WARNING))
                prev = (known or {}).get(topic)
                if prev is not None and last >= 0 and prev.last_id == last:
                    out.topics[topic] = prev
                    continue
                first = query("SELECT event_id FROM main.events WHERE topic = ? ORDER BY event_id ASC LIMIT 1", (topic,))
                newest = query("SELECT event_id, occurred_at_ms FROM main.events WHERE topic = ? "
                               "ORDER BY event_id DESC LIMIT 1", (topic,))
                info = TopicInfo(topic)
                if first and newest:
                    info.first_id, info.last_id = first[0][0], newest[0][0]
                    # ids are contiguous apart from a compacted prefix (§H.2.4)
                    info.count = max(0, info.last_id - info.first_id + 1)
                    info.latest_ms = newest[0][1] if isinstance(newest[0][1], int) else None
                if last > info.last_id:
                    info.last_id = last
                out.topics[topic] = info
            if "consumers" in self._tables:
                for topic, cid, cursor, updated in query(
                        "SELECT topic, consumer_id, cursor, updated_at_ms FROM main.consumers LIMIT ?", (MAX_CONSUMERS,)):
                    if not isinstance(topic, str) or not isinstance(cid, str) or not isinstance(cursor, int):
                        continue
                    head = out.topics.get(topic)
                    lag = max(0, head.last_id - cursor) if head else 0
                    out.consumers.append(Consumer(topic, cid, cursor, updated if isinstance(updated, int) else None, lag))
            out.schema_version = self.schema_version
            return True

        if self._run(out.problems, fn) is None:
            out.ok = False
        return out

    def read_after(self, topic: str, after_id: int, limit: int = 500, problems: list[Problem] | None = None) -> list[Event]:
        """Events of `topic` with id > after_id, oldest first, at most `limit` (tail by id)."""
        sink = problems if problems is not None else []
        limit = max(1, min(int(limit), PAGE_MAX * 10))
        rows = self._run(sink, lambda q: q(
            "SELECT event_id, kind, payload, headers, occurred_at_ms FROM main.events "
            "WHERE topic = ? AND event_id > ? ORDER BY event_id ASC LIMIT ?", (topic, int(after_id), limit)))
        return self._events(topic, rows or [], sink)

    def read_page(self, topic: str, page: int, size: int, problems: list[Problem] | None = None) -> list[Event]:
        """Page `page` (0 = newest) of `topic`, newest first."""
        sink = problems if problems is not None else []
        size = max(1, min(int(size), PAGE_MAX))
        rows = self._run(sink, lambda q: q(
            "SELECT event_id, kind, payload, headers, occurred_at_ms FROM main.events "
            "WHERE topic = ? ORDER BY event_id DESC LIMIT ? OFFSET ?", (topic, size, max(0, int(page)) * size)))
        return self._events(topic, rows or [], sink)

    def read_last(self, topics: Iterable[str], problems: list[Problem] | None = None) -> dict[str, Event]:
        """The newest event of each topic (one indexed query per topic, one connection)."""
        sink = problems if problems is not None else []
        wanted = list(topics)

        def fn(q):
            out = {}
            for t in wanted:
                rows = q("SELECT event_id, kind, payload, headers, occurred_at_ms FROM main.events "
                         "WHERE topic = ? ORDER BY event_id DESC LIMIT 1", (t,))
                if rows:
                    out[t] = rows[0]
            return out

        rows = self._run(sink, fn) or {}
        result = {}
        for t, row in rows.items():
            evs = self._events(t, [row], sink)
            if evs:
                result[t] = evs[0]
        return result

    def _events(self, topic: str, rows: list, sink: list[Problem]) -> list[Event]:
        out = []
        for event_id, kind, payload, headers, occurred in rows:
            if not isinstance(event_id, int):
                continue
            ev = make_event(self.path, topic, event_id, kind, payload, headers, occurred)
            if ev.problem is not None:
                sink.append(ev.problem)
            out.append(ev)
        return out


class _SchemaRefused(Exception):
    pass


# =====================================================================================================================
# File backend
# =====================================================================================================================
class FileTopic:
    """One `topics/<topic>.jsonl`: tailed by byte offset, with the start offset of every event kept
    (8 bytes an event) so pages can be read newest first without holding the events."""

    CHUNK = 1 << 20

    def __init__(self, path: str, topic: str) -> None:
        self.path = path
        self.topic = topic
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
            fh = open(self.path, "rb")
        except OSError:
            reset = self.count > 0
            self.__init__(self.path, self.topic)
            return reset, []
        new: list[Event] = []
        with fh:
            st = os.fstat(fh.fileno())
            reset = False
            if self._ino is not None:
                head = fh.read(len(self._head))
                if st.st_ino != self._ino or st.st_size < self.read_to or head != self._head:
                    self.__init__(self.path, self.topic)
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
        ev = self._parse(raw, self.line_no)
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

    def _parse(self, raw: bytes, line_no: int) -> Event | None:
        try:
            rec = orjson.loads(raw)
        except (orjson.JSONDecodeError, RecursionError):
            self.problems.append(Problem(self.path, line_no, CODE_LINE,
                "line is not valid JSON; Harn refuses to read this topic until it is fixed", Severity.ERROR))
            return None
        ev = rec.get("event") if isinstance(rec, dict) else None
        eid = rec.get("id") if isinstance(rec, dict) else None
        if not isinstance(ev, dict) or isinstance(eid, bool) or not isinstance(eid, int):
            self.problems.append(Problem(self.path, line_no, CODE_LINE,
                'line is not {"id": <int>, "event": {...}}; Harn refuses to read this topic until it is fixed', Severity.ERROR))
            return None
        event = make_event(self.path, self.topic, eid, ev.get("kind"), ev.get("payload"), ev.get("headers") or {},
                           ev.get("occurred_at_ms"), line=line_no)
        if event.problem is not None:
            self.problems.append(event.problem)
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
            with open(self.path, "rb") as fh:
                for i in idxs:
                    fh.seek(self.offsets[i])
                    raw = fh.readline(MAX_PAYLOAD_BYTES + 4096)
                    if not raw.endswith(b"\n"):
                        continue
                    ev = self._parse_quiet(raw.rstrip(b"\r\n"))
                    if ev is not None:
                        out.append(ev)
        except OSError:
            return out
        return out

    def _parse_quiet(self, raw: bytes) -> Event | None:
        saved = self.problems
        self.problems = []
        try:
            return self._parse(raw, 0)
        finally:
            self.problems = saved


def _read_consumer_file(path: str) -> tuple[Consumer | None, Problem | None]:
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
        value = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError, RecursionError) as exc:
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

    def __init__(self, path: str) -> None:
        self.path = path
        self.topics: dict[str, FileTopic] = {}
        self.problems: list[Problem] = []

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
                ft = self.topics[topic] = FileTopic(fpath, topic)
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
            cons, prob = _read_consumer_file(os.path.join(cdir, name))
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
