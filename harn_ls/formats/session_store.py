"""Read-only view of `.harn/session-store.sqlite` (harn-formats §H.1).

Rules this module keeps:
* never create the database or change the directory: a missing file is just
  "no session store"; connections are `mode=ro` URIs;
* Harn runs the store in WAL mode. A `mode=ro` connection to a WAL database
  whose `-wal` file is absent makes SQLite create (and leave behind) `-wal`
  and `-shm`. When no `-wal` exists there is no live writer and the main file
  holds every committed page, so we open it `immutable=1` instead, which
  touches nothing. When a `-wal` exists a writer is (or was) active and we
  use a normal `mode=ro` connection, which needs the existing `-shm`
  (SQLite creates `-shm` only if it is missing next to an existing `-wal`);
* one short read transaction per call (a long one would block Harn's WAL
  checkpoints), connection closed immediately;
* the schema marker is checked before any other table is trusted; a newer or
  unknown version is a Problem and only columns we know are read.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import orjson

from harn_ls.formats import sqlite_safe
from harn_ls.formats.problems import Problem, Severity
from harn_ls.formats.sqlite_safe import SqlRow, SqlValue
from harn_ls.util.json_types import JsonArray, JsonObject, JsonValue

SCHEMA_NAME = "session_store"
MARKER_TABLE = "_harn_sqlite_schema_versions"
LEGACY_MARKER_TABLE = "schema_version"  # v1/v2
KNOWN_VERSIONS = (1, 2, 3, 4)
LATEST_KNOWN_VERSION = 4

CODE_OPEN = "HL-SESS-001"
CODE_NO_MARKER = "HL-SESS-002"
CODE_NEWER_SCHEMA = "HL-SESS-003"
CODE_QUERY = "HL-SESS-004"
CODE_BAD_JSON = "HL-SESS-005"
CODE_OLD_SCHEMA = "HL-SESS-006"
CODE_REFUSED = "HL-SESS-007"  # a view/virtual table/generated column, a deadline, a non-regular file
CODE_TOO_MANY = "HL-SESS-008"

QUERY_DEADLINE_S = 1.0  # per query: a hostile store yields a problem well within 2 s
MAX_SESSIONS = 5_000
MAX_EVENTS = 5_000

SESSION_COLUMNS = (
    "id", "tenant_id", "persona", "parent_session_id", "title", "cwd", "model", "session_type", "project_scope",
    "usage_input", "usage_output", "usage_cost_usd_micros", "created_at_ms", "created_at", "updated_at_ms",
    "updated_at", "status", "event_count", "last_event_id", "chain_root_hash", "closed_at_ms", "closed_at",
    "soft_deleted_at_ms", "ttl_seconds", "tags_json", "attributes_json", "next_event_id",
)
EVENT_COLUMNS = (
    "session_id", "event_id", "tenant_id", "parent_event_id", "actor", "kind", "custom_kind", "payload_json",
    "tags_json", "headers_json", "ts_ms", "ts", "record_hash", "prev_hash", "signature_json",
)


@dataclass(slots=True)
class Session:
    """One session of the session store."""

    id: str
    tenant_id: str | None = None
    persona: str | None = None
    parent_session_id: str | None = None
    title: str | None = None
    cwd: str | None = None
    model: str | None = None
    session_type: str | None = None
    project_scope: str | None = None
    usage_input: int | None = None
    usage_output: int | None = None
    usage_cost_usd_micros: int | None = None
    created_at_ms: int | None = None
    created_at: str | None = None
    updated_at_ms: int | None = None
    updated_at: str | None = None
    status: str | None = None
    event_count: int | None = None
    last_event_id: int | None = None
    chain_root_hash: str | None = None
    closed_at_ms: int | None = None
    closed_at: str | None = None
    soft_deleted_at_ms: int | None = None
    ttl_seconds: int | None = None
    tags: JsonArray = field(default_factory=list)
    attributes: JsonObject = field(default_factory=dict)
    next_event_id: int | None = None

@dataclass(slots=True)
class SessionEvent:
    """One event of a session in the session store."""

    session_id: str
    event_id: int
    kind: str | None = None
    custom_kind: str | None = None
    actor: SqlValue = None  # (the column as stored)
    tenant_id: str | None = None
    parent_event_id: SqlValue = None
    payload: JsonValue = None
    tags: JsonArray = field(default_factory=list)
    headers: JsonObject = field(default_factory=dict)
    ts_ms: int | None = None
    ts: str | None = None
    record_hash: str | None = None
    prev_hash: str | None = None
    signature: JsonObject | None = None
    problem: Problem | None = None  # payload/tags/headers JSON that did not parse

    @property
    def transcript_event(self) -> JsonObject | None:
        """`payload.transcript_event` when a transcript mirrors into the store (§G.1)."""
        if isinstance(self.payload, dict) and isinstance(self.payload.get("transcript_event"), dict):
            event: JsonObject = self.payload["transcript_event"]
            return event
        return None


@dataclass(slots=True)
class SessionStoreSnapshot:
    """The session store as read: its schema version, sessions and problems."""

    path: str
    exists: bool
    schema_version: int | None
    sessions: list[Session] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    supported: bool = False  # the marker names a version this module was written for


def _connect(path: str) -> sqlite3.Connection:
    return sqlite_safe.open_readonly(path, os.path.dirname(os.path.dirname(os.path.abspath(path))))


def _tables(conn: sqlite3.Connection) -> set[str]:
    # Real tables only: a view (a recursive CTE can run forever) is never evaluated.
    return sqlite_safe.real_tables(conn, QUERY_DEADLINE_S)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return sqlite_safe.table_columns(conn, table, QUERY_DEADLINE_S)


def _q(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = (), max_rows: int = MAX_SESSIONS) -> list[SqlRow]:
    return sqlite_safe.query(conn, sql, params, QUERY_DEADLINE_S, max_rows)


def _missing_table(conn: sqlite3.Connection, name: str, path: str) -> Problem:
    kind = sqlite_safe.object_kind(conn, name, QUERY_DEADLINE_S)
    if kind is None:
        return Problem(path, 0, CODE_QUERY, f"no '{name}' table", Severity.WARNING)
    return Problem(path, 0, CODE_REFUSED, f"'{name}' is a {kind}, not a table; not evaluated (only real tables are read)",
                   Severity.WARNING)


def _schema_version(conn: sqlite3.Connection, tables: set[str], path: str, problems: list[Problem]) -> int | None:
    if MARKER_TABLE in tables:
        rows = _q(conn, f"SELECT version FROM main.{MARKER_TABLE} WHERE name = ?", (SCHEMA_NAME,), 1)
        row = rows[0] if rows else None
        if row is not None and isinstance(row[0], int):
            return row[0]
        problems.append(Problem(path, 0, CODE_NO_MARKER,
            f"{MARKER_TABLE} has no '{SCHEMA_NAME}' row; not a Harn session store (or mid-initialisation)", Severity.WARNING))
        return None
    if LEGACY_MARKER_TABLE in tables:
        rows = _q(conn, f"SELECT MAX(version) FROM main.{LEGACY_MARKER_TABLE}", (), 1)
        row = rows[0] if rows else None
        if row is not None and isinstance(row[0], int):
            return row[0]
    problems.append(Problem(path, 0, CODE_NO_MARKER,
        "no schema marker table; not a Harn session store (or Harn is still creating it)", Severity.WARNING))
    return None


def _json(text: object, default: JsonValue, what: str, errors: list[str]) -> JsonValue:
    if text is None:
        return default
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        errors.append(f"{what} is not text")
        return default
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        errors.append(f"{what} is not valid JSON")
        return default


def _as_int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _as_str(v: object) -> str | None:
    return v if isinstance(v, str) else None


_INT_SESSION_FIELDS = {"usage_input", "usage_output", "usage_cost_usd_micros", "created_at_ms", "updated_at_ms",
                       "event_count", "last_event_id", "closed_at_ms", "soft_deleted_at_ms", "ttl_seconds", "next_event_id"}


def _session_from_row(row: dict[str, SqlValue], path: str, problems: list[Problem]) -> Session:
    errors: list[str] = []
    kwargs: dict[str, Any] = {}  # Session fields by name, each of its own type
    for name, value in row.items():
        if name == "tags_json":
            tags = _json(value, [], "tags_json", errors)
            kwargs["tags"] = tags if isinstance(tags, list) else []
        elif name == "attributes_json":
            attrs = _json(value, {}, "attributes_json", errors)
            kwargs["attributes"] = attrs if isinstance(attrs, dict) else {}
        elif name in _INT_SESSION_FIELDS:
            kwargs[name] = _as_int(value)
        elif name != "id":
            kwargs[name] = _as_str(value)
    session = Session(id=str(row.get("id")), **kwargs)
    if errors:
        problems.append(Problem(path, 0, CODE_BAD_JSON, f"session {session.id}: " + "; ".join(errors), Severity.WARNING))
    return session


def read_session_store(path: str) -> SessionStoreSnapshot:
    """All sessions (newest update first). Never raises, never writes."""
    snap = SessionStoreSnapshot(path=path, exists=os.path.lexists(path), schema_version=None)
    if not snap.exists:
        return snap
    problems = snap.problems
    conn = None
    try:
        conn = _connect(path)
        conn.execute("BEGIN")
        try:
            tables = _tables(conn)
            version = _schema_version(conn, tables, path, problems)
            snap.schema_version = version
            if version is None:
                return snap
            if version > LATEST_KNOWN_VERSION:
                problems.append(Problem(path, 0, CODE_NEWER_SCHEMA,
                    f"session store schema version {version} is newer than this viewer knows ({LATEST_KNOWN_VERSION}); "
                    "showing known columns only, read-only", Severity.WARNING))
            elif version not in KNOWN_VERSIONS:
                problems.append(Problem(path, 0, CODE_OLD_SCHEMA,
                    f"session store schema version {version} is unknown; Harn migrates it on next open", Severity.WARNING))
            else:
                snap.supported = True
            if "sessions" not in tables:
                problems.append(_missing_table(conn, "sessions", path))
                return snap
            present = set(_columns(conn, "sessions"))
            cols = [c for c in SESSION_COLUMNS if c in present]
            if "id" not in cols:
                problems.append(Problem(path, 0, CODE_QUERY, "'sessions' has no 'id' column", Severity.WARNING))
                return snap
            order = "updated_at_ms DESC, id" if "updated_at_ms" in cols else "id"
            rows = _q(conn, f"SELECT {', '.join(cols)} FROM main.sessions ORDER BY {order} LIMIT ?",
                      (MAX_SESSIONS + 1,), MAX_SESSIONS + 1)
            if len(rows) > MAX_SESSIONS:
                problems.append(Problem(path, 0, CODE_TOO_MANY,
                    f"more than {MAX_SESSIONS} sessions; showing the {MAX_SESSIONS} most recently updated",
                    Severity.INFO))
                rows = rows[:MAX_SESSIONS]
            for values in rows:
                snap.sessions.append(_session_from_row(dict(zip(cols, values, strict=True)), path, problems))
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
    except sqlite_safe.SqliteRefused as exc:
        problems.append(Problem(path, 0, CODE_REFUSED, f"session store not read: {exc}", Severity.WARNING))
    except sqlite3.Error as exc:
        problems.append(Problem(path, 0, CODE_OPEN,
            f"cannot read session store ({exc}); it may be mid-write — retried on the next change", Severity.WARNING))
    finally:
        if conn is not None:
            conn.close()
    return snap


def _event_from_row(row: dict[str, SqlValue], path: str) -> SessionEvent:
    errors: list[str] = []
    payload = _json(row.get("payload_json"), None, "payload_json", errors)
    tags = _json(row.get("tags_json"), [], "tags_json", errors)
    headers = _json(row.get("headers_json"), {}, "headers_json", errors)
    signature = _json(row.get("signature_json"), None, "signature_json", errors)
    event = SessionEvent(
        session_id=str(row.get("session_id")), event_id=_as_int(row.get("event_id")) or 0,
        kind=_as_str(row.get("kind")), custom_kind=_as_str(row.get("custom_kind")), actor=row.get("actor"),
        tenant_id=_as_str(row.get("tenant_id")), parent_event_id=row.get("parent_event_id"), payload=payload,
        tags=tags if isinstance(tags, list) else [], headers=headers if isinstance(headers, dict) else {},
        ts_ms=_as_int(row.get("ts_ms")), ts=_as_str(row.get("ts")), record_hash=_as_str(row.get("record_hash")),
        prev_hash=_as_str(row.get("prev_hash")), signature=signature if isinstance(signature, dict) else None,
    )
    if errors:
        event.problem = Problem(path, 0, CODE_BAD_JSON,
            f"session {event.session_id} event {event.event_id}: " + "; ".join(errors), Severity.WARNING)
    return event


def read_session_events(path: str, session_id: str, limit: int = 500,
                        problems: list[Problem] | None = None) -> list[SessionEvent]:
    """The newest `limit` events of one session, oldest first. Never raises; errors go to `problems`."""
    sink = problems if problems is not None else []
    if not os.path.lexists(path) or limit <= 0:
        return []
    conn = None
    out: list[SessionEvent] = []
    try:
        conn = _connect(path)
        conn.execute("BEGIN")
        try:
            tables = _tables(conn)
            version = _schema_version(conn, tables, path, sink)
            if version is None:
                return []
            if "session_events" not in tables:
                missing = _missing_table(conn, "session_events", path)
                if missing.code == CODE_REFUSED:
                    sink.append(missing)
                return []
            present = set(_columns(conn, "session_events"))
            cols = [c for c in EVENT_COLUMNS if c in present]
            if "session_id" not in cols or "event_id" not in cols:
                sink.append(Problem(path, 0, CODE_QUERY, "'session_events' lacks session_id/event_id", Severity.WARNING))
                return []
            limit = min(int(limit), MAX_EVENTS)
            rows = _q(conn,
                f"SELECT {', '.join(cols)} FROM main.session_events WHERE session_id = ? ORDER BY event_id DESC LIMIT ?",
                (session_id, limit), limit)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        for values in reversed(rows):
            event = _event_from_row(dict(zip(cols, values, strict=True)), path)
            if event.problem is not None:
                sink.append(event.problem)
            out.append(event)
    except sqlite_safe.SqliteRefused as exc:
        sink.append(Problem(path, 0, CODE_REFUSED, f"session events not read: {exc}", Severity.WARNING))
    except sqlite3.Error as exc:
        sink.append(Problem(path, 0, CODE_OPEN,
            f"cannot read session events ({exc}); it may be mid-write — retried on the next change", Severity.WARNING))
    finally:
        if conn is not None:
            conn.close()
    return out
