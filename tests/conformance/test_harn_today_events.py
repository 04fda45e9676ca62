"""Issue 28 items 4 and 5: Harn's HITL reading rules and malformed event payloads, as Harn has them today.

Harn sources (burin-labs/harn, mirror snapshot e45362cf, 2026-04-30):
* crates/harn-vm/src/stdlib/hitl_read.rs: `prompt_from_payload` (`payload.get("prompt")
  .or_else(action).or_else(reason).and_then(as_str)`: the first key *present* decides, even when
  it is null), `DEFAULT_LIMIT = 500` / `MAX_LIMIT = 5_000`, `read_pending_rows` (newest first by
  requested_at, then event id, `rows.truncate(limit)`);
* crates/harn-vm/src/stdlib/hitl.rs: `approval_quorum_from_request` (`payload.get("quorum" | "n")
  .or_else(payload.approvers_required).or_else(payload.approval_request.approvers_required)
  .and_then(as_u64).unwrap_or(1)`);
* crates/harn-vm/src/event_log/mod.rs: the SQLite backend decodes `payload` / `headers` with
  serde_json when it reads an event; a row that is not JSON fails the read.
"""

from __future__ import annotations

import os

from harn_ls.formats import events as ev_fmt
from harn_ls.formats.event_logs import MAX_BAD_EVENTS, LogLocation, LogView
from harn_ls.formats.hitl import requests as hitl_fmt
from harn_ls.model.workspace import Workspace
from tests.helpers import event_log_writer as W


def _view(path: str) -> LogView:
    v = LogView(LogLocation("run", "sqlite", path, os.path.dirname(path)))
    v.refresh()
    return v


def _question(rid: str, payload: dict, at: str = "2026-05-04T09:00:00Z") -> dict:
    return {"request_id": rid, "kind": "question", "agent": "a", "trace_id": "t", "requested_at": at, "payload": payload}


# ------------------------------------------------------------------------------------------- item 4
def test_prompt_fallback_stops_at_a_present_but_null_prompt(tmp_path):
    """hitl_read.rs `prompt_from_payload`: `get("prompt")` is Some(Null) for `"prompt": null`, so
    `action` is never looked at and the row's prompt is ""."""
    db = str(tmp_path / "events.sqlite")
    conn = W.open_log(db)
    cases = {
        "hitl_question_null": ({"prompt": None, "action": "deploy", "reason": "r"}, ""),
        "hitl_question_empty": ({"prompt": "", "action": "deploy"}, ""),
        "hitl_question_number": ({"prompt": 7, "action": "deploy"}, ""),
        "hitl_question_absent": ({"action": "deploy", "reason": "r"}, "deploy"),
        "hitl_question_reason": ({"action": None, "reason": "r"}, ""),  # action present (null): stops there
        "hitl_question_only_reason": ({"reason": "r"}, "r"),
        "hitl_question_text": ({"prompt": "which env?", "action": "x"}, "which env?"),
    }
    for rid, (payload, _) in cases.items():
        env = _question(rid, payload)
        W.append(conn, "hitl.questions", "hitl.question_asked", env, {"request_id": rid, "trace_id": "t"})
    conn.close()
    v = _view(db)
    assert {rid: v.requests[rid].prompt for rid in cases} == {rid: want for rid, (_, want) in cases.items()}


def test_hitl_pending_returns_at_most_500_rows_by_default(tmp_path):
    """hitl_read.rs DEFAULT_LIMIT = 500: `hitl_pending()` lists the newest 500 (by requested_at, then
    event id); harn-ls lists them all and says Harn's view stops at 500."""
    db = str(tmp_path / ".harn" / "events.sqlite")
    os.makedirs(os.path.dirname(db))
    (tmp_path / "harn.toml").write_text("")
    conn = W.open_log(db)
    for i in range(503):
        at = f"2026-05-04T{9 + i // 3600:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z"
        env = _question(f"hitl_question_{i:04d}", {"prompt": f"q{i}"}, at)
        W.append(conn, "hitl.questions", "hitl.question_asked", env, {"request_id": env["request_id"], "trace_id": "t"})
    # one answered: not pending for Harn either
    W.append(conn, "hitl.questions", "hitl.response_received", {"request_id": "hitl_question_0502", "answer": "x"},
             {"request_id": "hitl_question_0502"})
    conn.close()
    v = _view(db)
    rows = hitl_fmt.harn_pending(v.requests)
    assert hitl_fmt.HARN_PENDING_LIMIT == 500 and len(rows) == 500
    assert rows[0].request_id == "hitl_question_0501"  # newest unanswered first
    assert rows[-1].request_id == "hitl_question_0002"  # 0000 and 0001 fall off, as in Harn
    assert len(hitl_fmt.harn_pending(v.requests, limit=5000)) == 502
    ws = Workspace.load(str(tmp_path))
    assert len(ws.event_logs.waiting()) == 502  # harn-ls still shows every waiting request
    assert ws.event_logs.harn_pending_cut() == [("run", 502, 500)]
    from harn_ls.render import state_docs
    from harn_ls.render.uri import RenderSettings, parse_uri
    doc = state_docs.hitl_index(ws, parse_uri("harn-state:/hitl.md"), RenderSettings())
    assert "returns only the newest 500 by default" in doc and "502 requests" in doc


def test_quorum_reads_top_level_approvers_required_before_approval_request(tmp_path):
    """hitl.rs `approval_quorum_from_request`: quorum (or n) → top-level approvers_required →
    approval_request.approvers_required; the first key present decides, a non-integer gives 1."""
    db = str(tmp_path / "events.sqlite")
    conn = W.open_log(db)

    def approval(rid, payload):
        env = {"request_id": rid, "kind": "approval", "agent": "a", "trace_id": "t",
               "requested_at": "2026-05-04T09:00:00Z", "payload": payload}
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env, {"request_id": rid, "trace_id": "t"})

    approval("hitl_approval_top", {"approvers_required": 3, "approval_request": {"approvers_required": 2}})
    approval("hitl_approval_nested", {"approval_request": {"approvers_required": 2}})
    approval("hitl_approval_quorum", {"quorum": 4, "approvers_required": 3, "approval_request": {"approvers_required": 2}})
    approval("hitl_approval_nullq", {"quorum": None, "approvers_required": 3})  # present null: 1
    approval("hitl_approval_strtop", {"approvers_required": "3", "approval_request": {"approvers_required": 2}})
    env = {"request_id": "hitl_dual_control_d", "kind": "dual_control", "agent": "a", "trace_id": "t",
           "requested_at": "2026-05-04T09:00:00Z",
           "payload": {"n": 2, "quorum": 9, "approvers_required": 3, "approvers": ["a", "b", "c"]}}
    W.append(conn, "hitl.dual_control", "hitl.dual_control_requested", env, {"request_id": "hitl_dual_control_d"})
    conn.close()
    q = {rid: r.quorum for rid, r in _view(db).requests.items()}
    assert q == {"hitl_approval_top": 3, "hitl_approval_nested": 2, "hitl_approval_quorum": 4,
                 "hitl_approval_nullq": 1, "hitl_approval_strtop": 1, "hitl_dual_control_d": 2}


# ------------------------------------------------------------------------------------------- item 5
def test_malformed_payload_on_any_topic_is_a_problem_with_topic_and_event_id(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    db = str(proj / ".harn" / "events.sqlite")
    conn = W.open_log(db)
    W.append(conn, "agent.transcript.run1", "turn", {"n": 1})
    W.append(conn, "agent.transcript.run1", "turn", None, raw_payload=b'{"n": 2,')
    W.append(conn, "agent.transcript.run1", "turn", {"n": 3})
    W.append(conn, "trigger.inbox", "fire", {"ok": True})
    ws = Workspace.load(str(proj))
    probs = [p for p in ws.problems() if p.code == ev_fmt.CODE_PAYLOAD]
    assert [p.message for p in probs] == [
        "topic agent.transcript.run1 event 2: payload is not valid JSON (Harn fails to read this event)"]
    assert probs[0].path == db
    from harn_ls.render.inspect import inspect_json
    data = inspect_json(ws)
    assert any("agent.transcript.run1 event 2" in p["message"] for p in data["problems"])
    # a later bad row on another topic is found by the next refresh (only the new events are scanned)
    W.append(conn, "trigger.inbox", "fire", None, raw_payload=b"\xff\xfe")
    conn.close()
    ws.apply_changes([db])
    msgs = sorted(p.message for p in ws.problems() if p.code == ev_fmt.CODE_PAYLOAD)
    assert msgs == ["topic agent.transcript.run1 event 2: payload is not valid JSON (Harn fails to read this event)",
                    "topic trigger.inbox event 2: payload is not valid JSON (Harn fails to read this event)"]


def test_malformed_payloads_are_capped_per_topic(tmp_path):
    db = str(tmp_path / "events.sqlite")
    conn = W.open_log(db)
    for _ in range(MAX_BAD_EVENTS + 5):
        W.append(conn, "t.bad", "k", None, raw_payload=b"not json")
    conn.close()
    v = _view(db)
    bad = v.payload_problems["t.bad"]
    assert len(bad) == MAX_BAD_EVENTS + 1 and "only the first 20" in bad[-1].message
    assert "event 1:" in bad[0].message and f"event {MAX_BAD_EVENTS}:" in bad[MAX_BAD_EVENTS - 1].message


def _bulk(db: str, topic: str, n: int, bad: set[int]) -> None:
    """n events on `topic` (ids 1..n) in one transaction; the ids in `bad` carry a payload that is not JSON."""
    conn = W.open_log(db)
    conn.execute("BEGIN")
    for i in range(1, n + 1):
        body = b'{"n": ' if i in bad else f'{{"n": {i}}}'.encode()
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?)", (topic, i, "k", body, "{}", i))
    conn.execute("INSERT OR REPLACE INTO topic_heads VALUES (?, ?)", (topic, n))
    conn.execute("COMMIT")
    conn.close()


def test_payload_check_is_bounded_window_then_budget(tmp_path):
    """A topic first seen: its newest PAYLOAD_WINDOW events; then at most PAYLOAD_BUDGET events a refresh,
    the rest taken up at the next refresh."""
    from harn_ls.formats import event_logs as EL

    db = str(tmp_path / "events.sqlite")
    _bulk(db, "a.old", EL.PAYLOAD_WINDOW + 100, bad={1, EL.PAYLOAD_WINDOW + 50})
    _bulk(db, "b.big", EL.PAYLOAD_WINDOW, bad={EL.PAYLOAD_WINDOW})
    _bulk(db, "c.big", EL.PAYLOAD_WINDOW, bad={EL.PAYLOAD_WINDOW})
    v = _view(db)
    msgs = lambda: sorted(p.message.split(":")[0] for ps in v.payload_problems.values() for p in ps)  # noqa: E731
    # a.old: event 1 is older than the window (not checked); budget spent on a.old (20k) and 10k of b.big
    assert msgs() == [f"topic a.old event {EL.PAYLOAD_WINDOW + 50}"]
    assert v._payload_pending == {"b.big", "c.big"}
    v.refresh()  # nothing changed in the log: the pending topics are finished
    assert msgs() == [f"topic a.old event {EL.PAYLOAD_WINDOW + 50}", f"topic b.big event {EL.PAYLOAD_WINDOW}",
                      f"topic c.big event {EL.PAYLOAD_WINDOW}"]
    assert v._payload_pending == set()
