"""Event-log readers, HITL derivation and the other `.harn/` state files over the constructed
samples (expected-state.json is the oracle), hostile and broken inputs, and a live writer."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from harn_ls.formats import events as ev_fmt
from harn_ls.formats import state_files as sf
from harn_ls.formats.event_logs import LogLocation, LogView, discover
from harn_ls.formats.hitl import requests as hitl_fmt
from harn_ls.formats.paths import resolve
from tests.helpers import event_log_writer as W
from tests.helpers.samples import SAMPLES

CONSTRUCTED = SAMPLES / "constructed"
EXPECTED = json.loads((CONSTRUCTED / "expected-state.json").read_text()) if CONSTRUCTED.is_dir() else {}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not CONSTRUCTED.is_dir(), reason="constructed harn-samples not found")


def _view(path: str, backend: str = "sqlite", copy_dir: str | None = None) -> LogView:
    v = LogView(LogLocation("run", backend, path, os.path.dirname(path)), copy_dir=copy_dir)
    v.refresh()
    return v


@pytest.fixture(params=["sqlite", "file"])
def sample_view(request, tmp_path):
    # copies: a mode=ro open must not be able to leave anything beside the samples
    if request.param == "sqlite":
        shutil.copy(CONSTRUCTED / "events.sqlite", tmp_path / "events.sqlite")
        return _view(str(tmp_path / "events.sqlite"))
    shutil.copytree(CONSTRUCTED / "events", tmp_path / "events")
    return _view(str(tmp_path / "events"), "file")


def test_topic_heads_and_consumers_match_oracle(sample_view):
    heads = {t: i.last_id for t, i in sample_view.summary.topics.items()}
    assert heads == EXPECTED["topic_heads"]
    counts = {t: i.count for t, i in sample_view.summary.topics.items()}
    assert counts == EXPECTED["topic_heads"]  # no compaction in the sample: count == head
    cons = {(c.topic, c.consumer_id): (c.cursor, c.lag) for c in sample_view.summary.consumers}
    assert cons == {("trigger.inbox.envelopes", "orchestrator-pump.trigger.inbox.envelopes"): (1, 0),
                    ("waitpoint.resumes", "orchestrator-pump.waitpoint.resumes"): (1, 0)}
    assert sample_view.problems() == []


def test_hitl_pending_resolved_and_waitpoints_match_oracle(sample_view):
    reqs = sample_view.requests
    waiting = sorted(r.request_id for r in hitl_fmt.waiting(reqs))
    assert waiting == sorted(EXPECTED["hitl"]["pending"])
    for rid, kind in EXPECTED["hitl"]["resolved"].items():
        assert reqs[rid].resolved_by == kind
        assert reqs[rid].state == "answered"
        assert reqs[rid].approvals == ["alice"]
    for rid, status in EXPECTED["hitl"]["waitpoint_status"].items():
        assert reqs[rid].waitpoint_status == status
    a = reqs[EXPECTED["ids"]["approval_pending"]]
    assert (a.quorum, a.reviewers, a.approvals) == (2, ["alice", "bob"], [])
    assert a.run_id.startswith("run_")
    # escalations never time out; the sample's approval/question deadlines are in the past -> overdue
    assert reqs[EXPECTED["ids"]["escalation_pending"]].state == "pending"
    assert reqs[EXPECTED["ids"]["approval_pending"]].state == "overdue"
    sample_view._derive(hitl_fmt.parse_time_ms("2026-05-04T09:10:00Z"))
    assert sample_view.requests[EXPECTED["ids"]["approval_pending"]].state == "pending"
    assert sample_view.requests[EXPECTED["ids"]["question_pending"]].state == "pending"


def test_pages_newest_first(sample_view):
    p0 = sample_view.page("hitl.approvals", 0, 3)
    p1 = sample_view.page("hitl.approvals", 1, 3)
    assert [e.id for e in p0] == [4, 3, 2] and [e.id for e in p1] == [1]
    assert p0[0].kind == "hitl.approval_requested" and p0[0].payload["payload"]["quorum"] == 2
    assert sample_view.page("hitl.approvals", 2, 3) == []


def test_sample_sqlite_read_leaves_nothing_behind(tmp_path):
    shutil.copy(CONSTRUCTED / "events.sqlite", tmp_path / "events.sqlite")
    before = sorted(os.listdir(tmp_path))
    v = _view(str(tmp_path / "events.sqlite"))
    v.page("hitl.approvals", 0, 10)
    assert sorted(os.listdir(tmp_path)) == before  # no -wal / -shm created by the viewer


def test_receipt_verifies_and_tampering_fails(tmp_path):
    probs: list = []
    [r] = sf.read_receipts(str(CONSTRUCTED / "receipts"), probs)
    exp = EXPECTED["receipt"]
    assert r.status == "self-signed" and r.errors == [] and probs == []  # Harn verifies it; the key is its own
    assert (r.key_ids, r.receipt_hash, r.event_root_hash) == ([exp["key_id"]], exp["receipt_hash"], exp["event_root_hash"])
    data = json.loads((CONSTRUCTED / exp["file"]).read_text())
    d = tmp_path / "receipts"
    d.mkdir()
    bad_sig = json.loads(json.dumps(data))
    sig = bad_sig["signatures"][0]["signature_base64"]
    bad_sig["signatures"][0]["signature_base64"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    (d / "receipt-badsig.json").write_text(json.dumps(bad_sig, indent=2))
    tampered = json.loads(json.dumps(data))
    tampered["run"]["status"] = "failure"
    (d / "receipt-tampered.json").write_text(json.dumps(tampered, indent=2))
    (d / "receipt-torn.json").write_text('{"schema": "harn-prov')
    probs = []
    got = {os.path.basename(r.path): r for r in sf.read_receipts(str(d), probs)}
    assert {r.status for r in got.values()} == {"failed", "unreadable"}
    badsig = got["receipt-badsig.json"]
    assert badsig.status == "failed" and any("does not verify" in e for e in badsig.errors)
    assert not any("receipt_hash" in e for e in badsig.errors)  # content intact, only the signature is wrong
    tamp = got["receipt-tampered.json"]
    assert any("receipt_hash does not match" in e for e in tamp.errors) and tamp.run_status == "failure"
    assert got["receipt-torn.json"].status == "unreadable"
    assert {p.code for p in probs} == {sf.CODE_RECEIPT_SIG, sf.CODE_RECEIPT}
    assert all(p.path.startswith(str(d)) for p in probs)


def test_store_and_locks_from_sample():
    st = sf.read_store(str(CONSTRUCTED / "store.json"))
    assert st.entries["migration_cursor"] == 41 and st.problems == []
    locks = sf.read_locks(str(CONSTRUCTED))
    assert [(lk.kind, lk.name) for lk in locks] == [("checkpoint", "migrate")]
    assert locks[0].held in (False, None)


def test_checkpoint_lock_held_is_seen(tmp_path):
    import fcntl

    (tmp_path / "checkpoints").mkdir()
    lock = tmp_path / "checkpoints" / "deploy.lock"
    lock.write_bytes(b"")
    # with /proc/locks (Linux) or, without it, the probe (checkpoint locks only): held either way
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert [lk.held for lk in sf.read_locks(str(tmp_path))] == [True]
    finally:
        os.close(fd)
    assert [lk.held for lk in sf.read_locks(str(tmp_path))] == [False]


# ------------------------------------------------------------------------------------------- broken inputs
def test_corrupt_database_is_a_problem(tmp_path):
    db = tmp_path / "events.sqlite"
    db.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    v = _view(str(db))
    assert v.summary.topics == {}
    assert [p.code for p in v.problems()] == [ev_fmt.CODE_OPEN]
    assert v.problems()[0].path == str(db)


def test_view_in_place_of_events_table_is_never_evaluated(tmp_path):
    db = tmp_path / "events.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t(x)")
    conn.execute("CREATE VIEW events AS SELECT 'hitl.approvals' AS topic, 1 AS event_id, 'k' AS kind, "
                 "x AS payload, '{}' AS headers, 0 AS occurred_at_ms FROM t")
    conn.commit()
    conn.close()
    v = _view(str(db))
    assert [p.code for p in v.problems()] == [ev_fmt.CODE_SCHEMA]
    assert "view" in v.problems()[0].message


def test_locked_database_is_a_problem_and_fast(tmp_path):
    db = tmp_path / "events.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(W.DDL)  # rollback-journal mode: an exclusive lock blocks readers
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("INSERT INTO topic_heads VALUES ('x', 1)")
    try:
        t0 = time.monotonic()
        v = _view(str(db))
        assert time.monotonic() - t0 < ev_fmt.BUSY_TIMEOUT_S + 2
        assert [p.code for p in v.problems()] == [ev_fmt.CODE_OPEN]
        assert "locked" in v.problems()[0].message
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def test_malformed_payload_and_unknown_kind_are_problems_rest_served(tmp_path):
    db = tmp_path / "events.sqlite"
    conn = W.open_log(str(db))
    env = W.approval_request("hitl_approval_ok")
    W.waitpoint_open(conn, "hitl_approval_ok")
    W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
    W.append(conn, "hitl.approvals", "hitl.approval_requested", None, {"request_id": "hitl_approval_bad"},
             raw_payload=b'{"request_id": "hitl_approval_bad", ')
    W.append(conn, "hitl.approvals", "hitl.approval_teleported", {"request_id": "hitl_approval_ok"},
             {"request_id": "hitl_approval_ok"})
    conn.close()
    v = _view(str(db))
    assert [r.request_id for r in hitl_fmt.waiting(v.requests)] == ["hitl_approval_ok"]
    codes = sorted(p.code for p in v.problems())
    assert ev_fmt.CODE_PAYLOAD in codes and hitl_fmt.CODE_UNKNOWN_KIND in codes
    bad = next(p for p in v.problems() if p.code == ev_fmt.CODE_PAYLOAD)
    assert "hitl.approvals event 2" in bad.message and bad.path == str(db)
    unk = next(p for p in v.problems() if p.code == hitl_fmt.CODE_UNKNOWN_KIND)
    assert "event 3" in unk.message


def test_newer_schema_marker_is_flagged(tmp_path):
    db = tmp_path / "events.sqlite"
    conn = W.open_log(str(db))
    conn.execute("CREATE TABLE _harn_sqlite_schema_versions(name TEXT PRIMARY KEY, version INTEGER)")
    conn.execute("INSERT INTO _harn_sqlite_schema_versions VALUES ('event_log', 7)")
    W.append(conn, "a.b", "k", {})
    conn.close()
    v = _view(str(db))
    assert "a.b" in v.summary.topics
    assert any(p.code == ev_fmt.CODE_SCHEMA and "newer" in p.message for p in v.problems())


def test_wal_without_shm_is_read_from_a_copy(tmp_path):
    live = tmp_path / "live"
    live.mkdir()
    conn = W.open_log(str(live / "events.sqlite"))
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    W.append(conn, "t.one", "k", {"n": 1})
    W.append(conn, "t.one", "k", {"n": 2})
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(live / "events.sqlite", proj / "events.sqlite")
    shutil.copy(live / "events.sqlite-wal", proj / "events.sqlite-wal")  # crashed writer: -wal, no -shm
    conn.close()
    cache = tmp_path / "cache"
    v = _view(str(proj / "events.sqlite"), copy_dir=str(cache))
    assert v.summary.topics["t.one"].last_id == 2  # rows that live only in the WAL are seen
    assert [p.code for p in v.problems()] == [ev_fmt.CODE_NO_SHM]
    assert sorted(os.listdir(proj)) == ["events.sqlite", "events.sqlite-wal"]  # no -shm created in the project
    assert os.listdir(cache) == []  # the copy is removed after the read
    v2 = _view(str(proj / "events.sqlite"), copy_dir=None)  # no cache folder: refused, not read in place
    assert v2.summary.topics == {} and [p.code for p in v2.problems()] == [ev_fmt.CODE_NO_SHM]
    assert sorted(os.listdir(proj)) == ["events.sqlite", "events.sqlite-wal"]


# --------------------------------------------------------------------------------- HITL corner cases (§P)
def _log_with(tmp_path, fn):
    db = tmp_path / "events.sqlite"
    conn = W.open_log(str(db))
    fn(conn)
    conn.close()
    return _view(str(db))


def test_orphan_response_timeout_rejected_escalation_and_quorum(tmp_path):
    def build(conn):
        # orphan: a response for a request that is not in this log (wrong --state-dir)
        W.append(conn, "hitl.escalations", "hitl.escalation_accepted",
                 {"request_id": "hitl_escalation_elsewhere", "accepted": True, "reviewer": "ops"},
                 {"request_id": "hitl_escalation_elsewhere"})
        # escalation "accepted" with accepted:false -> Harn hides it, the VM keeps waiting
        esc = {"request_id": "hitl_escalation_r", "kind": "escalation", "agent": "", "trace_id": "t",
               "requested_at": "2026-05-04T09:00:00Z", "payload": {"role": "oncall", "reason": "disk full"}}
        W.append(conn, "hitl.escalations", "hitl.escalation_issued", esc, {"request_id": "hitl_escalation_r", "trace_id": "t"})
        W.append(conn, "hitl.escalations", "hitl.escalation_accepted",
                 {"request_id": "hitl_escalation_r", "accepted": False, "reviewer": "bob"}, {"request_id": "hitl_escalation_r"})
        # question with a hitl.timeout -> expired
        q = {"request_id": "hitl_question_t", "kind": "question", "agent": "", "trace_id": "t",
             "requested_at": "2026-05-04T09:00:00Z", "payload": {"prompt": "which env?", "timeout_ms": 1000}}
        W.append(conn, "hitl.questions", "hitl.question_asked", q, {"request_id": "hitl_question_t", "trace_id": "t"})
        W.append(conn, "hitl.questions", "hitl.timeout", {"request_id": "hitl_question_t", "kind": "question",
                 "trace_id": "t", "timed_out_at": "2026-05-04T09:00:01Z"}, {"request_id": "hitl_question_t"})
        # approval quorum 2: one of two approvals so far; a non-listed reviewer does not count
        env = W.approval_request("hitl_approval_q", reviewers=("alice", "bob"), quorum=2)
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
        for who in ("mallory", "alice", "alice"):
            W.append(conn, "hitl.approvals", "hitl.response_received",
                     {"request_id": "hitl_approval_q", "approved": True, "reviewer": who}, {"request_id": "hitl_approval_q"})
        # approval denied through the legacy hitl.responses topic
        env2 = W.approval_request("hitl_approval_d")
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env2, W.request_headers(env2))
        W.append(conn, "hitl.responses", "hitl.response_received",
                 {"request_id": "hitl_approval_d", "approved": False, "reviewer": "alice"}, {"request_id": "hitl_approval_d"})

    v = _log_with(tmp_path, build)
    r = v.requests
    assert r["hitl_escalation_r"].state == "rejected-but-hidden" and r["hitl_escalation_r"].is_waiting
    assert r["hitl_question_t"].state == "expired" and not r["hitl_question_t"].is_waiting
    assert r["hitl_approval_q"].state == "pending" and r["hitl_approval_q"].approvals == ["alice"]
    assert r["hitl_approval_d"].state == "denied" and r["hitl_approval_d"].resolved_by == "hitl.response_received"
    assert "hitl_escalation_elsewhere" not in r
    codes = [p.code for p in v.problems()]
    assert codes.count(hitl_fmt.CODE_ORPHAN) == 1 and codes.count(hitl_fmt.CODE_REJECTED_HIDDEN) == 1
    orphan = next(p for p in v.problems() if p.code == hitl_fmt.CODE_ORPHAN)
    assert "hitl.escalations event 1" in orphan.message


def test_tail_by_id_and_compaction(tmp_path):
    db = tmp_path / "events.sqlite"
    conn = W.open_log(str(db))
    for i in range(3):
        env = W.approval_request(f"hitl_approval_{i}")
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
    v = _view(str(db))
    assert len(v.requests) == 3
    assert v.refresh() is False  # nothing new: nothing changed
    env = W.approval_request("hitl_approval_3")
    W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
    assert v.refresh() is True and len(v.requests) == 4
    # compaction: Harn deletes a prefix; ids are never reused
    conn.execute("DELETE FROM events WHERE topic = 'hitl.approvals' AND event_id <= 2")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    env = W.approval_request("hitl_approval_4")
    W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
    assert v.refresh() is True
    assert sorted(v.requests) == ["hitl_approval_2", "hitl_approval_3", "hitl_approval_4"]
    info = v.summary.topics["hitl.approvals"]
    assert (info.first_id, info.last_id, info.count) == (3, 5, 3)
    conn.close()


def test_file_backend_torn_line_duplicates_and_compaction(tmp_path):
    topics = tmp_path / "events" / "topics"
    topics.mkdir(parents=True)
    f = topics / "hitl.questions.jsonl"

    def line(i, rid):
        env = {"request_id": rid, "kind": "question", "agent": "", "trace_id": "t", "requested_at": "2999-01-01T00:00:00Z",
               "payload": {"prompt": "p", "timeout_ms": 1000}}
        return json.dumps({"id": i, "event": {"kind": "hitl.question_asked", "payload": env, "headers": {"request_id": rid},
                                              "occurred_at_ms": i}}) + "\n"

    f.write_text(line(1, "hitl_question_a") + line(2, "hitl_question_b")[:30])  # torn last line
    v = _view(str(tmp_path / "events"), "file")
    assert sorted(v.requests) == ["hitl_question_a"]
    with open(f, "a") as fh:
        fh.write(line(2, "hitl_question_b")[30:] + line(2, "hitl_question_c"))  # completed + a duplicate id
    assert v.refresh() is True
    assert sorted(v.requests) == ["hitl_question_a", "hitl_question_b", "hitl_question_c"]
    assert any(p.code == ev_fmt.CODE_DUP_ID for p in v.problems())
    tmp = topics / "hitl.questions.jsonl.tmp"
    tmp.write_text(line(2, "hitl_question_c"))
    os.replace(tmp, f)  # compaction: rewrite via .tmp + rename
    assert v.refresh() is True
    assert sorted(v.requests) == ["hitl_question_c"]
    (topics / "bad topic!.jsonl").write_text("")
    (tmp_path / "events" / "consumers").mkdir()
    (tmp_path / "events" / "consumers" / "x__y.json").write_text("{")
    v.refresh()
    assert {ev_fmt.CODE_TOPIC, ev_fmt.CODE_CONSUMER} <= {p.code for p in v.problems()}


def test_discover_lists_all_producers(tmp_path):
    (tmp_path / "harn.toml").write_text("")
    locs = discover(resolve(str(tmp_path), env={}, home=str(tmp_path / "home")).event_logs)
    paths = [os.path.relpath(ln.path, tmp_path) for ln in locs]
    assert paths == [".harn/events.sqlite", ".harn/events", ".harn/orchestrator/events.sqlite", ".harn/orchestrator/events",
                     ".harn/personas/.harn/events.sqlite", ".harn/personas/.harn/events"]
    assert locs[2].state_dir == str(tmp_path / ".harn" / "orchestrator")


# ------------------------------------------------------------------------------------------------ live
def test_reader_tails_a_log_another_process_writes(tmp_path):
    db = tmp_path / "events.sqlite"
    W.open_log(str(db)).close()
    n = 60
    proc = subprocess.Popen([sys.executable, "-m", "tests.helpers.event_log_writer", str(db), str(n), "5"],
                            cwd=REPO, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True,
                            env={**os.environ, "EVENT_LOG_WRITER_HOLD": "1"})
    try:
        v = LogView(LogLocation("run", "sqlite", str(db), str(tmp_path)))
        seen_counts = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            v.refresh()
            seen_counts.append(len(v.requests))
            ids = [e.id for e in v.hitl_events.get("hitl.approvals", [])]
            assert ids == list(range(1, len(ids) + 1))  # committed events only, in order, no holes
            if len(v.requests) == n:
                break
            time.sleep(0.01)
        assert len(v.requests) == n
        assert len(set(seen_counts)) > 2  # it really saw the log grow
        assert all(r.waitpoint_status == "open" for r in v.requests.values())
        assert os.path.exists(str(db) + "-wal")  # the writer is live: read through the WAL, not immutable
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0  # the writer was never blocked into failing
    assert len(proc.stdout.read().split()) == n


def test_recursive_view_as_topic_heads_is_never_evaluated(tmp_path):
    """A cloned repo's events.sqlite whose topic_heads is an endless recursive view: ignored, fast."""
    db = tmp_path / "events.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(W.DDL.replace("CREATE TABLE IF NOT EXISTS topic_heads (topic TEXT PRIMARY KEY, last_id INTEGER NOT NULL);",
                                     "CREATE VIEW topic_heads AS WITH RECURSIVE r(topic, last_id) AS (SELECT 'x', 1 UNION ALL "
                                     "SELECT topic, last_id + 1 FROM r) SELECT topic, last_id FROM r;"))
    conn.execute("INSERT INTO events VALUES ('a.b', 1, 'k', '{}', '{}', 5)")
    conn.commit()
    conn.close()
    t0 = time.monotonic()
    v = _view(str(db))
    assert time.monotonic() - t0 < 3
    assert {t: i.last_id for t, i in v.summary.topics.items()} == {"a.b": 1}  # topics from the events table instead
    assert any(p.code == ev_fmt.CODE_SCHEMA and "view" in p.message for p in v.problems())


def test_a_wal_without_shm_that_links_out_of_the_project_is_not_read(tmp_path):
    """`events.sqlite-wal` (no -shm) is a link to a sibling `proj-evil`'s WAL: the copy made to read it goes
    through safe_read like every snapshot, so the link is refused and none of proj-evil's rows are shown."""
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    conn = W.open_log(str(evil / "events.sqlite"))
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    W.append(conn, "t.one", "k", {"n": 1})
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(evil / "events.sqlite", proj / "events.sqlite")
    W.append(conn, "t.secret", "k", {"n": 2})  # only in proj-evil's WAL
    (proj / "events.sqlite-wal").symlink_to(evil / "events.sqlite-wal")
    v = LogView(LogLocation("run", "sqlite", str(proj / "events.sqlite"), str(proj)), copy_dir=str(tmp_path / "cache"),
                root=str(proj))
    v.refresh()
    conn.close()
    assert "t.secret" not in v.summary.topics
    assert ev_fmt.CODE_OPEN in [p.code for p in v.problems()]


def test_a_refresh_reads_a_live_wal_log_through_one_snapshot(tmp_path, monkeypatch):
    """Harn's writer is mid-run: the log's rows are in its `-wal` (frames not checkpointed), so each
    connection reads a private copy of the database and its WAL. One refresh (topics, the payload
    check, the HITL tail) opens one connection, hence one copy, not one per query group; the copy
    is gone afterwards and the refresh sees every committed row."""
    proj = tmp_path / "proj"
    proj.mkdir()
    db = proj / "events.sqlite"
    writer = W.open_log(str(db))
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # the rows stay in the -wal
    for i in range(3):
        W.append(writer, "agent.steps", "step", {"n": i})
    W.append(writer, hitl_fmt.REQUEST_TOPICS[0], "hitl.question", {"request_id": "q1", "prompt": "ok?"})
    assert os.path.getsize(str(db) + "-wal") > 0
    opened = W.count_opens(monkeypatch)
    cache = tmp_path / "cache"
    view = LogView(LogLocation("run", "sqlite", str(db), str(proj)), copy_dir=str(cache), root=str(proj))
    try:
        assert view.refresh()
        assert opened == [str(db)]
        assert {t: i.count for t, i in view.summary.topics.items()} == {"agent.steps": 3, hitl_fmt.REQUEST_TOPICS[0]: 1}
        assert len(view.hitl_events[hitl_fmt.REQUEST_TOPICS[0]]) == 1
        W.append(writer, "agent.steps", "step", {"n": 3})
        assert view.refresh()
        assert opened == [str(db)] * 2
        assert view.summary.topics["agent.steps"].count == 4
    finally:
        writer.close()
    assert not cache.exists() or not any(cache.iterdir())  # every snapshot removed with its connection
