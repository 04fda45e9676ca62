"""Writes event logs the way Harn does (harn-formats §H.2.4), for tests and fixtures only.

Pragmas, DDL and the append transaction follow Harn's SQLite backend: busy_timeout 5 s
before `journal_mode=WAL`, `synchronous=NORMAL`, one `BEGIN IMMEDIATE` per append that
bumps `topic_heads` and inserts the row with the provenance headers. Also runnable as a
script (`python -m tests.helpers.event_log_writer DB N`) so a test can append from
another process while a reader tails.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import time

DDL = """
CREATE TABLE IF NOT EXISTS topic_heads (topic TEXT PRIMARY KEY, last_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    topic TEXT NOT NULL, event_id INTEGER NOT NULL, kind TEXT NOT NULL, payload BLOB NOT NULL,
    headers TEXT NOT NULL, occurred_at_ms INTEGER NOT NULL, PRIMARY KEY (topic, event_id));
CREATE TABLE IF NOT EXISTS consumers (
    topic TEXT NOT NULL, consumer_id TEXT NOT NULL, cursor INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (topic, consumer_id));
"""


def count_opens(monkeypatch) -> list[str]:
    """From here on, the path of every read-only connection harn-ls opens (sqlite_safe.open_readonly), in order:
    a test counts the connections (hence the private snapshots of a live WAL log) a read makes."""
    from harn_ls.formats import sqlite_safe

    opened: list[str] = []
    real_open = sqlite_safe.open_readonly

    def counting_open(*args, **kwargs):
        opened.append(args[0])
        return real_open(*args, **kwargs)

    monkeypatch.setattr(sqlite_safe, "open_readonly", counting_open)
    return opened


def open_log(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(DDL)
    return conn


def _dumps(v) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _record_hash(topic, event_id, kind, payload, headers, occurred) -> str:
    hdrs = {k: headers[k] for k in sorted(headers) if k != "harn.provenance.record_hash"}
    w = {"topic": topic, "event_id": event_id, "kind": kind, "payload": payload, "headers": hdrs, "occurred_at_ms": occurred}
    return "sha256:" + hashlib.sha256(_dumps(w).encode()).hexdigest()


def append(conn: sqlite3.Connection, topic: str, kind: str, payload, headers: dict | None = None,
           occurred_at_ms: int | None = None, raw_payload: bytes | None = None) -> int:
    occurred = int(time.time() * 1000) if occurred_at_ms is None else occurred_at_ms
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT OR IGNORE INTO topic_heads(topic, last_id) VALUES (?, 0)", (topic,))
        conn.execute("UPDATE topic_heads SET last_id = last_id + 1 WHERE topic = ?", (topic,))
        (event_id,) = conn.execute("SELECT last_id FROM topic_heads WHERE topic = ?", (topic,)).fetchone()
        prev = conn.execute("SELECT headers FROM events WHERE topic = ? AND event_id < ? ORDER BY event_id DESC LIMIT 1",
                            (topic, event_id)).fetchone()
        hdrs = dict(headers or {})
        hdrs["harn.provenance.schema"] = "harn-eventlog-provenance-v1"
        if prev is not None:
            hdrs["harn.provenance.prev_hash"] = json.loads(prev[0]).get("harn.provenance.record_hash", "")
        hdrs["harn.provenance.record_hash"] = _record_hash(topic, event_id, kind, payload, hdrs, occurred)
        body = raw_payload if raw_payload is not None else _dumps(payload).encode()
        conn.execute("INSERT INTO events(topic, event_id, kind, payload, headers, occurred_at_ms) VALUES (?,?,?,?,?,?)",
                     (topic, event_id, kind, body, _dumps(dict(sorted(hdrs.items()))), occurred))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return event_id


def ack(conn: sqlite3.Connection, topic: str, consumer: str, cursor: int, at_ms: int) -> None:
    conn.execute("INSERT INTO consumers(topic, consumer_id, cursor, updated_at_ms) VALUES (?,?,?,?) "
                 "ON CONFLICT(topic, consumer_id) DO UPDATE SET cursor = excluded.cursor, "
                 "updated_at_ms = excluded.updated_at_ms", (topic, consumer, cursor, at_ms))


def approval_request(request_id: str, *, reviewers=("alice",), quorum=1, requested_at="2026-05-04T09:00:10Z",
                     deadline="2999-01-01T00:00:00Z", action="deploy web", run_id=None, trace_id="trace_x") -> dict:
    env = {"request_id": request_id, "kind": "approval", "agent": "deployer", "trace_id": trace_id}
    if run_id:
        env["run_id"] = run_id
    env["requested_at"] = requested_at
    env["payload"] = {
        "approval_request": {"id": request_id, "action": action, "args": None, "principal": "deployer",
                             "requested_at": requested_at, "deadline": deadline, "approvers_required": quorum,
                             "evidence_refs": [], "undo_metadata": None, "capabilities_requested": []},
        "action": action, "detail": None, "quorum": quorum, "reviewers": list(reviewers), "deadline_ms": 3600000}
    return env


def request_headers(env: dict) -> dict:
    h = {"request_id": env["request_id"], "trace_id": env["trace_id"]}
    if env.get("run_id"):
        h["run_id"] = env["run_id"]
    return h


def waitpoint_open(conn, request_id: str, kind: str = "approval") -> None:
    append(conn, "waitpoint.state." + request_id, "waitpoint.state",
           {"id": request_id, "status": "open", "created_at": "2026-05-04T09:00:10Z", "completed_at": None,
            "cancelled_at": None, "completed_by": None, "cancelled_by": None, "value": None, "reason": None,
            "metadata": {"kind": kind}}, {"waitpoint_id": request_id})


def _main(argv: list[str]) -> int:
    """`event_log_writer DB N [DELAY_MS]`: append N approval requests (with waitpoints), printing each id."""
    path, n = argv[0], int(argv[1])
    delay = int(argv[2]) / 1000 if len(argv) > 2 else 0.0
    conn = open_log(path)
    for i in range(1, n + 1):
        rid = f"hitl_approval_live-{i:04d}"
        waitpoint_open(conn, rid)
        env = approval_request(rid)
        append(conn, "hitl.approvals", "hitl.approval_requested", env, request_headers(env))
        print(rid, flush=True)
        if delay:
            time.sleep(delay)
    if os.environ.get("EVENT_LOG_WRITER_HOLD"):
        sys.stdin.read()  # keep the connection (and so the -wal) open until told to stop
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
