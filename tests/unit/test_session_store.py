"""Read-only session store access (harn-formats §H.1)."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harn_ls.formats.session_store import read_session_events, read_session_store  # noqa: E402
from tests.helpers.session_store_fixture import create_session_store_fixture, event_record_hash  # noqa: E402

SESSIONS = [
    {"id": "sess-a", "title": "Fix flaky test", "persona": "review_captain", "model": "gpt-x", "usage_input": 1200,
     "usage_output": 300, "usage_cost_usd_micros": 4500, "tags": ["ci", "flaky"], "attributes": {"branch": "main"},
     "events": [
         {"kind": "message", "actor": "user", "payload": {"text": "why is test_x flaky?"}},
         {"kind": "tool_call", "actor": "assistant", "payload": {"name": "read_file", "args": {"path": "x.py"}}},
         {"kind": "message", "actor": "assistant",
          "payload": {"transcript_event": {"kind": "message", "role": "assistant", "text": "Race in setup."}}},
     ]},
    {"id": "sess-b", "title": "Old session", "status": "closed", "session_type": "subagent",
     "parent_session_id": "sess-a", "created_at_ms": 1_700_000_000_000},
]


def listing(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def make(tmp_path: Path, **kw) -> Path:
    state = tmp_path / ".harn"
    state.mkdir(exist_ok=True)
    path = state / "session-store.sqlite"
    create_session_store_fixture(str(path), kw.pop("sessions", SESSIONS), **kw)
    return path


def test_v4_snapshot_and_directory_untouched(tmp_path):
    path = make(tmp_path)
    before = listing(path.parent)
    assert before == ["session-store.sqlite"]  # the fixture closed cleanly: no -wal/-shm left
    snap = read_session_store(str(path))
    assert listing(path.parent) == before
    assert (snap.exists, snap.schema_version, snap.supported, snap.problems) == (True, 4, True, [])
    assert [s.id for s in snap.sessions] == ["sess-a", "sess-b"]  # most recently updated first
    a, b = snap.sessions
    assert (a.title, a.persona, a.tags, a.attributes, a.event_count, a.last_event_id) == (
        "Fix flaky test", "review_captain", ["ci", "flaky"], {"branch": "main"}, 3, 3)
    assert a.usage_cost_usd_micros / 1_000_000 == 0.0045 and a.created_at.endswith("Z")
    assert (b.status, b.session_type, b.parent_session_id, b.event_count) == ("closed", "subagent", "sess-a", 0)
    events = read_session_events(str(path), "sess-a")
    assert listing(path.parent) == before
    assert [e.event_id for e in events] == [1, 2, 3]
    assert [e.kind for e in events] == ["message", "tool_call", "message"]
    assert events[0].payload == {"text": "why is test_x flaky?"} and events[0].prev_hash is None
    assert events[1].prev_hash == events[0].record_hash and events[2].prev_hash == events[1].record_hash
    assert events[0].record_hash == a.chain_root_hash and events[0].record_hash.startswith("sha256:")
    assert events[2].transcript_event["text"] == "Race in setup." and events[0].transcript_event is None


def test_events_limit_returns_newest_oldest_first(tmp_path):
    path = make(tmp_path, sessions=[{"id": "s", "events": [{"kind": "message", "payload": {"n": i}} for i in range(10)]}])
    events = read_session_events(str(path), "s", limit=3)
    assert [e.event_id for e in events] == [8, 9, 10]
    assert read_session_events(str(path), "nope") == []
    assert read_session_events(str(path), "s", limit=0) == []


def test_reading_while_harn_has_it_open(tmp_path):
    path = make(tmp_path)
    writer = sqlite3.connect(str(path))  # stands in for a live Harn process (WAL, -wal/-shm present)
    try:
        writer.execute("INSERT INTO sessions(id, created_at_ms, created_at, updated_at_ms, updated_at) "
                       "VALUES ('sess-live', 1, 'x', 9999999999999, 'y')")
        writer.commit()
        before = listing(path.parent)
        assert "session-store.sqlite-wal" in before
        snap = read_session_store(str(path))
        assert listing(path.parent) == before
        assert snap.sessions[0].id == "sess-live"  # committed-but-uncheckpointed rows are visible
    finally:
        writer.close()


def test_rollback_journal_db_untouched(tmp_path):
    path = make(tmp_path, wal=False)
    before = listing(path.parent)
    assert read_session_store(str(path)).supported
    assert listing(path.parent) == before


def test_missing_store_is_not_created(tmp_path):
    path = tmp_path / ".harn" / "session-store.sqlite"
    snap = read_session_store(str(path))
    assert (snap.exists, snap.sessions, snap.problems) == (False, [], [])
    assert read_session_events(str(path), "x") == []
    assert not path.parent.exists()


def test_newer_schema_version_is_problem_not_crash(tmp_path):
    path = make(tmp_path, version=99)
    snap = read_session_store(str(path))
    assert snap.schema_version == 99 and not snap.supported
    assert [p.code for p in snap.problems] == ["HL-SESS-003"]
    assert "newer" in snap.problems[0].message
    assert [s.id for s in snap.sessions] == ["sess-a", "sess-b"]  # known columns, best effort


def test_legacy_v2_marker(tmp_path):
    path = make(tmp_path, version=2, legacy_marker=True)
    snap = read_session_store(str(path))
    assert (snap.schema_version, snap.supported, snap.problems) == (2, True, [])


def test_no_marker_and_garbage_file(tmp_path):
    (tmp_path / ".harn").mkdir()
    plain = tmp_path / ".harn" / "session-store.sqlite"
    conn = sqlite3.connect(str(plain))
    conn.execute("CREATE TABLE sessions(id TEXT)")
    conn.commit()
    conn.close()
    snap = read_session_store(str(plain))
    assert snap.schema_version is None and [p.code for p in snap.problems] == ["HL-SESS-002"] and snap.sessions == []
    plain.write_bytes(b"this is not a database at all" * 100)
    snap = read_session_store(str(plain))
    assert [p.code for p in snap.problems] == ["HL-SESS-001"]
    assert read_session_events(str(plain), "x") == []


def test_bad_json_columns(tmp_path):
    path = make(tmp_path, sessions=[{"id": "s", "tags_json": "[oops", "events": [
        {"kind": "custom", "custom_kind": "note", "payload_json": "{broken"}]}])
    snap = read_session_store(str(path))
    assert snap.sessions[0].tags == [] and [p.code for p in snap.problems] == ["HL-SESS-005"]
    problems: list = []
    (event,) = read_session_events(str(path), "s", problems=problems)
    assert event.payload is None and event.custom_kind == "note"
    assert event.problem is not None and problems == [event.problem]


def test_more_sessions_than_the_cap_keeps_the_newest_and_says_so(tmp_path, monkeypatch):
    from harn_ls.formats import session_store

    monkeypatch.setattr(session_store, "MAX_SESSIONS", 1)
    snap = read_session_store(str(make(tmp_path)))
    assert [s.id for s in snap.sessions] == ["sess-a"]  # the most recently updated
    assert [(p.code, p.severity.value) for p in snap.problems] == [("HL-SESS-008", "info")]
    assert snap.problems[0].message == "more than 1 sessions; showing the 1 most recently updated"


def test_hash_helper_matches_chain_rule():
    ev = {"event_id": 1, "kind": "message", "payload": {"b": 1, "a": 2}, "ts_ms": 5}
    h1 = event_record_hash("s", ev, None)
    h2 = event_record_hash("s", {**ev, "payload": {"a": 2, "b": 1}}, None)
    assert h1 == h2 and h1 != event_record_hash("s", ev, h1)
