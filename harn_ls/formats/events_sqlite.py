"""The SQLite backend of the event-log readers (formats/events.py holds the events, the file
backend and the codes and caps both use). Its own module so that sqlite3 and the
hardened connection code load only when a project has an `events.sqlite`: most `inspect` and
server runs never meet one.

Every call opens a private read-only connection, runs a few short bounded queries and closes
it, so Harn's writer is never blocked and its checkpoints are never pinned (§H.2.7). A caller
that makes several calls in a row (a refresh) makes them in one `session()`: one connection, so
a log whose `-wal` holds frames is copied into one private snapshot, not one per call, and every
call of the session sees the same committed state. Between statements no read transaction is held.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

from harn_ls.formats import sqlite_safe
from harn_ls.formats.events import (
    CODE_NO_SHM,
    CODE_OPEN,
    CODE_SCHEMA,
    CODE_TOPIC,
    KNOWN_SCHEMA_VERSION,
    MAX_CONSUMERS,
    MAX_COPY_BYTES,
    MAX_ROWS,
    MAX_TOPICS,
    PAGE_MAX,
    QUERY_DEADLINE_S,
    SCHEMA_MARKER,
    Consumer,
    Event,
    LogSummary,
    TopicInfo,
    make_event,
    valid_topic,
)
from harn_ls.formats.problems import Problem, Severity
from harn_ls.formats.sqlite_safe import SqlRow

_T = TypeVar("_T")
_SELECT = "SELECT event_id, kind, payload, headers, occurred_at_ms FROM main.events WHERE topic = ?"  # (_events reads these)


class _Query(Protocol):
    """One SELECT on the open log: with its deadline and row cap, fully consumed."""

    def __call__(self, sql: str, args: tuple[object, ...] = ()) -> list[SqlRow]: ...


class _Session:
    """The connection a `session()` shares: opened by its first call (`tried`); None when that call
    could not open it or refused its schema (and reported why)."""

    __slots__ = ("tried", "conn")

    def __init__(self) -> None:
        self.tried = False
        self.conn: sqlite3.Connection | None = None


class SqliteEventLog:
    """One `events.sqlite`. Cheap to construct; every method opens and closes its own connection."""

    backend = "sqlite"

    def __init__(self, path: str, copy_dir: str | None = None, root: str | None = None) -> None:
        self.path = path
        self.root = root  # when given, the file's real path must stay inside it
        self.copy_dir = copy_dir  # where a -wal without -shm is copied to be read (outside the project)
        self.exists = os.path.isfile(path)
        self._session: _Session | None = None  # inside `session()`

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Every call inside the block shares one connection, opened by the first and closed at the
        end (a nested session is the outer one's)."""
        if self._session is not None:
            yield
            return
        self._session = session = _Session()
        try:
            yield
        finally:
            self._session = None
            sqlite_safe.close_quietly(session.conn)

    # ------------------------------------------------------------ connections
    def _connect(self, problems: list[Problem]) -> sqlite3.Connection | None:
        """A locked-down read-only connection (formats/sqlite_safe.py). A `-wal` without its `-shm` (a
        writer crashed?) is read from sqlite_safe's private snapshot in the cache folder, as any `-wal`
        with frames is: opening it in place would create the `-shm` inside the project."""
        if os.path.exists(self.path + "-wal") and not os.path.exists(self.path + "-shm"):
            try:
                size = os.path.getsize(self.path) + os.path.getsize(self.path + "-wal")
            except OSError:
                return None
            if size > MAX_COPY_BYTES or not self.copy_dir:
                problems.append(Problem(self.path, 0, CODE_NO_SHM,
                    f"{os.path.basename(self.path)}-wal exists without its -shm file; not read (reading in place would "
                    "create -shm inside the project)", Severity.WARNING))
                return None
            problems.append(Problem(self.path, 0, CODE_NO_SHM,
                f"{os.path.basename(self.path)}-wal exists without its -shm file (a writer crashed?); shown from a copy",
                Severity.INFO))
        return sqlite_safe.open_readonly(self.path, self.root, self.copy_dir)

    def _run(self, problems: list[Problem], fn: Callable[[_Query], _T]) -> _T | None:
        """`fn(query)` on a connection of its own (opened, then closed) or the session's. SQLite errors
        and refusals become a Problem; returns None then."""
        session = self._session
        if session is not None and session.tried:  # (the first call of the session reported any failure)
            conn = session.conn
        elif not os.path.isfile(self.path):
            return None
        else:
            conn = self._open(problems)
            if session is not None:
                session.tried, session.conn = True, conn  # (closed when the session ends)
        if conn is None:
            return None
        try:
            return self._reported(problems, lambda: fn(self._queries(conn)))
        finally:
            if session is None:
                sqlite_safe.close_quietly(conn)

    def _open(self, problems: list[Problem]) -> sqlite3.Connection | None:
        """A connection whose schema passed `_check_schema`, or None (the reason is a Problem)."""
        conn = None

        def checked() -> sqlite3.Connection | None:
            nonlocal conn
            conn = self._connect(problems)
            if conn is not None:
                self._check_schema(conn, self._queries(conn), problems)
            return conn

        try:
            opened = self._reported(problems, checked)
        except _SchemaRefused:
            opened = None
        if opened is None:
            sqlite_safe.close_quietly(conn)
        return opened

    @staticmethod
    def _queries(conn: sqlite3.Connection) -> _Query:
        def query(sql: str, args: tuple[object, ...] = ()) -> list[SqlRow]:
            # every statement: a deadline, a row cap, fully consumed (never a statement left open)
            return sqlite_safe.query(conn, sql, args, QUERY_DEADLINE_S, MAX_ROWS)

        return query

    def _reported(self, problems: list[Problem], work: Callable[[], _T]) -> _T | None:
        """`work()`, or None with a Problem when SQLite failed or sqlite_safe refused."""
        try:
            return work()
        except sqlite_safe.SqliteRefused as exc:
            problems.append(Problem(self.path, 0, CODE_OPEN, f"event log not read: {exc}", Severity.ERROR))
        except sqlite3.Error as exc:
            self._sqlite_problem(problems, exc)
        return None

    def _sqlite_problem(self, problems: list[Problem], exc: sqlite3.Error) -> None:
        msg = str(exc)
        hint = ("it may be locked or mid-write — retried on the next change" if "locked" in msg or "busy" in msg
                else "the database may be corrupt")
        problems.append(Problem(self.path, 0, CODE_OPEN, f"cannot read event log ({msg}); {hint}", Severity.ERROR))

    def _check_schema(self, conn: sqlite3.Connection, query: _Query, problems: list[Problem]) -> None:
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
        for name in ("topic_heads", "consumers", "event_idempotency_keys"):
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

        def fn(query: _Query) -> bool:
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
                        f"topic {topic[:80]!r} is not a valid Harn topic name (letters, digits, '.', '_', '-')",
                        Severity.WARNING))
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
            if "event_idempotency_keys" in self._tables:
                out.has_idempotency_keys = bool(query("SELECT 1 FROM main.event_idempotency_keys LIMIT 1"))
            out.schema_version = self.schema_version
            return True

        if self._run(out.problems, fn) is None:
            out.ok = False
        return out

    def read_after(self, topic: str, after_id: int, limit: int = 500, problems: list[Problem] | None = None) -> list[Event]:
        """Events of `topic` with id > after_id, oldest first, at most `limit` (tail by id)."""
        sink = problems if problems is not None else []
        limit = max(1, min(int(limit), PAGE_MAX * 10))
        rows = self._run(sink, lambda q: q(_SELECT + " AND event_id > ? ORDER BY event_id ASC LIMIT ?",
                                           (topic, int(after_id), limit)))
        return self._events(topic, rows or [], sink)

    def malformed(self, topic: str, after_id: int, up_to: int, limit: int,
                  problems: list[Problem] | None = None) -> list[Problem] | None:
        """Problems of the events of `topic` in (after_id, up_to] whose payload or headers are not JSON
        (Harn's reader fails on them), at most `limit`. SQLite's own `json_valid` finds the candidates
        without moving the payloads into Python; each is then decoded by `make_event` for the message."""
        sink = problems if problems is not None else []
        rows = self._run(sink, lambda q: q(
            _SELECT + " AND event_id > ? AND event_id <= ? AND "
            "(json_valid(CAST(payload AS TEXT)) = 0 OR json_valid(CAST(headers AS TEXT)) = 0) "
            "ORDER BY event_id ASC LIMIT ?", (topic, int(after_id), int(up_to), max(1, int(limit)))))
        if rows is None:
            return None  # not read (locked, refused): checked again next time
        found: list[Problem] = []
        self._events(topic, rows, found)
        return found

    def read_page(self, topic: str, page: int, size: int, problems: list[Problem] | None = None) -> list[Event]:
        """Page `page` (0 = newest) of `topic`, newest first."""
        sink = problems if problems is not None else []
        size = max(1, min(int(size), PAGE_MAX))
        rows = self._run(sink, lambda q: q(_SELECT + " ORDER BY event_id DESC LIMIT ? OFFSET ?",
                                           (topic, size, max(0, int(page)) * size)))
        return self._events(topic, rows or [], sink)

    def read_last(self, topics: Iterable[str], problems: list[Problem] | None = None) -> dict[str, Event]:
        """The newest event of each topic (one indexed query per topic, one connection)."""
        sink = problems if problems is not None else []
        wanted = list(topics)

        def fn(q: _Query) -> dict[str, SqlRow]:
            return {t: rows[0] for t in wanted if (rows := q(_SELECT + " ORDER BY event_id DESC LIMIT 1", (t,)))}

        rows = self._run(sink, fn) or {}
        return {t: evs[0] for t, row in rows.items() if (evs := self._events(t, [row], sink))}

    def idempotency_rows(self) -> int | None:
        """Rows of `event_idempotency_keys` (§H.2.4), None without that table or when the log is not read (the
        log's summary reports why)."""
        def fn(query: _Query) -> int | None:
            if "event_idempotency_keys" not in self._tables:
                return None
            count = query("SELECT COUNT(*) FROM main.event_idempotency_keys")[0][0]
            return count if isinstance(count, int) else None

        return self._run([], fn)

    def _events(self, topic: str, rows: list[SqlRow], sink: list[Problem]) -> list[Event]:
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
