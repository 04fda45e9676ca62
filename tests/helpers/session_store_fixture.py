"""Build a Harn-shaped `.harn/session-store.sqlite` (schema v4, harn-formats §H.1) for tests and the sample project.

Test-only: the language server itself never writes a session store.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

_SCHEMA_V4 = """
CREATE TABLE _harn_sqlite_schema_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL CHECK(version > 0));
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, tenant_id TEXT, persona TEXT, parent_session_id TEXT, title TEXT, cwd TEXT, model TEXT,
    session_type TEXT NOT NULL DEFAULT 'user', project_scope TEXT,
    usage_input INTEGER NOT NULL DEFAULT 0, usage_output INTEGER NOT NULL DEFAULT 0,
    usage_cost_usd_micros INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at_ms INTEGER NOT NULL, updated_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open', event_count INTEGER NOT NULL DEFAULT 0, last_event_id INTEGER,
    chain_root_hash TEXT, closed_at_ms INTEGER, closed_at TEXT, soft_deleted_at_ms INTEGER, ttl_seconds INTEGER,
    tags_json TEXT NOT NULL DEFAULT '[]', attributes_json TEXT NOT NULL DEFAULT '{}',
    next_event_id INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX sessions_tenant_created ON sessions(tenant_id, created_at_ms);
CREATE INDEX sessions_status ON sessions(status);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_scope_updated ON sessions(project_scope, updated_at_ms);
CREATE TABLE session_events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, event_id INTEGER NOT NULL,
    tenant_id TEXT, parent_event_id INTEGER, actor TEXT, kind TEXT NOT NULL, custom_kind TEXT,
    payload_json TEXT NOT NULL, tags_json TEXT NOT NULL DEFAULT '[]', headers_json TEXT NOT NULL DEFAULT '{}',
    ts_ms INTEGER NOT NULL, ts TEXT NOT NULL, record_hash TEXT NOT NULL, prev_hash TEXT, signature_json TEXT,
    PRIMARY KEY (session_id, event_id)
);
CREATE INDEX session_events_session_ts ON session_events(session_id, ts_ms);
CREATE VIRTUAL TABLE session_events_fts USING fts5(
    session_id UNINDEXED, event_id UNINDEXED, tenant_id UNINDEXED, project_scope UNINDEXED, text,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE session_event_vectors (session_id TEXT NOT NULL, event_id INTEGER NOT NULL, backend TEXT NOT NULL,
    dim INTEGER NOT NULL, embedding BLOB NOT NULL, PRIMARY KEY (session_id, event_id, backend));
CREATE TABLE session_imports (source_id TEXT PRIMARY KEY, source_digest TEXT, session_id TEXT, event_count INTEGER);
CREATE TABLE session_tags (session_id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (session_id, tag));
CREATE INDEX session_tags_tag ON session_tags(tag, session_id);
CREATE TABLE session_snapshots (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, captured_at_ms INTEGER,
    captured_at TEXT, body_json TEXT);
"""


def _iso(ms: int) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_record_hash(session_id: str, event: dict, prev_hash: str | None) -> str:
    """`sha256:` + SHA-256 of canonical JSON of the event fields (§H.1 hash chain)."""
    body = {"schema": "harn.session.event.v1", "session_id": session_id, "event_id": event["event_id"],
            "tenant_id": event.get("tenant_id"), "parent_event_id": event.get("parent_event_id"),
            "actor": event.get("actor"), "kind": event["kind"], "payload": event.get("payload"),
            "tags": event.get("tags", []), "headers": event.get("headers", {}), "ts_ms": event["ts_ms"],
            "prev_hash": prev_hash}
    return "sha256:" + hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()


def create_session_store_fixture(path: str, sessions: Iterable[dict], *, version: int = 4,
                                 legacy_marker: bool = False, wal: bool = True) -> str:
    """Create a fresh session store at `path` holding `sessions`.

    Each session dict: `id` plus any `sessions` column (tags/attributes as Python values) and an optional
    `events` list of dicts `{kind, payload, actor?, custom_kind?, tags?, headers?, ts_ms?, payload_json?}`
    (`payload_json` writes raw text, for broken-data tests). `version` sets the marker row;
    `legacy_marker` uses the v1/v2 `schema_version` table instead.
    """
    if os.path.exists(path):
        os.remove(path)
    conn = sqlite3.connect(path)
    try:
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA_V4)
        if legacy_marker:
            conn.execute("DROP TABLE _harn_sqlite_schema_versions")
            conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY)")
            conn.execute("INSERT INTO schema_version(version) VALUES (?)", (version,))
        else:
            conn.execute("INSERT INTO _harn_sqlite_schema_versions(name, version) VALUES ('session_store', ?)", (version,))
        base_ms = 1_776_649_991_070
        for n, session in enumerate(sessions):
            sid = session["id"]
            created = session.get("created_at_ms", base_ms + n * 1000)
            events = list(session.get("events", []))
            row = {"id": sid, "session_type": "user", "status": "open", "created_at_ms": created,
                   "created_at": _iso(created), "updated_at_ms": created, "updated_at": _iso(created)}
            for key, value in session.items():
                if key in ("events", "tags", "attributes"):
                    continue
                row[key] = value
            row["tags_json"] = session.get("tags_json", json.dumps(session.get("tags", [])))
            row["attributes_json"] = session.get("attributes_json", json.dumps(session.get("attributes", {})))
            prev = None
            event_rows = []
            for i, ev in enumerate(events, start=1):
                ev = {"event_id": i, "ts_ms": created + i, **ev}
                record_hash = event_record_hash(sid, ev, prev)
                event_rows.append((sid, ev["event_id"], ev.get("tenant_id"), ev.get("parent_event_id"), ev.get("actor"),
                                   ev["kind"], ev.get("custom_kind"),
                                   ev.get("payload_json", json.dumps(ev.get("payload"), sort_keys=True)),
                                   json.dumps(ev.get("tags", [])), json.dumps(ev.get("headers", {})),
                                   ev["ts_ms"], _iso(ev["ts_ms"]), record_hash, prev, None))
                prev = record_hash
            row.setdefault("event_count", len(event_rows))
            row.setdefault("next_event_id", len(event_rows) + 1)
            if event_rows:
                row.setdefault("last_event_id", len(event_rows))
                row.setdefault("chain_root_hash", event_rows[0][12])
                row["updated_at_ms"] = session.get("updated_at_ms", event_rows[-1][10])
                row["updated_at"] = _iso(row["updated_at_ms"])
            cols = list(row)
            conn.execute(f"INSERT INTO sessions({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                         [row[c] for c in cols])
            conn.executemany("INSERT INTO session_events VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", event_rows)
            for tag in session.get("tags", []):
                conn.execute("INSERT OR IGNORE INTO session_tags VALUES (?, ?)", (sid, tag))
        conn.commit()
    finally:
        conn.close()  # last connection closed: SQLite checkpoints and removes -wal/-shm
    return path
