"""Answering HITL requests (issue 33): the rows equal Harn's `append_hitl_response` (the oracle in
tests/oracles/hitl_respond.py, written from harn-formats §N.1; Harn source burin-labs/harn e45362cf
crates/harn-vm/src/stdlib/hitl.rs:296-324, 816-1026 and stdlib/waitpoint.rs:310-380, 538-560), harn-ls's
fold agrees with Harn's `hitl_pending`, and every refusal of the issue holds."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from harn_ls.actions.hitl import answer as A
from harn_ls.formats import harn_time
from harn_ls.formats.events import make_event
from harn_ls.formats.hitl import requests as hitl_fmt
from harn_ls.formats.hitl import responses as H
from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, render_uri
from harn_ls.render.hitl_choices import hitl_lenses
from harn_ls.render.tree_items import TreeOptions, tree_items
from tests.helpers import event_log_writer as W
from tests.helpers.samples import SAMPLES
from tests.oracles import hitl_respond as OR

SAMPLE = SAMPLES / "constructed" / "events.sqlite"


def rows(path: str) -> dict:
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out: dict = {}
    for topic, eid, kind, payload, headers, occ in c.execute(
            "SELECT topic, event_id, kind, payload, headers, occurred_at_ms FROM events ORDER BY topic, event_id"):
        out.setdefault(topic, []).append({"event_id": eid, "kind": kind, "payload": bytes(payload) if not isinstance(
            payload, str) else payload.encode(), "headers": headers, "occurred_at_ms": occ})
    c.close()
    return out


def new_rows(before: dict, after: dict, written: list) -> list:
    """The rows an answer appended, in the order it appended them (from its report)."""
    out = []
    for w in written:
        r = next(r for r in after[w.topic] if r["event_id"] == w.event_id)
        assert r not in before.get(w.topic, [])
        out.append(dict(r, topic=w.topic))
    return out


def check_against_oracle(path: str, before: dict, res: A.AnswerResult, *, sort: bool = False) -> list:
    after = rows(path)
    got = new_rows(before, after, res.written)
    response = json.loads(got[0]["payload"])
    want = OR.predict(before, response, got, sort=sort)
    assert [(t, e, k) for t, e, k, *_ in want] == [(g["topic"], g["event_id"], g["kind"]) for g in got]
    for (t, e, k, payload, headers, _occ), g in zip(want, got, strict=True):
        assert g["payload"] == payload, (t, e, k)
        assert g["headers"] == headers, (t, e, k)
    # nothing else changed
    for topic, rs in before.items():
        assert after[topic][:len(rs)] == rs
    assert sum(len(v) for v in after.values()) == sum(len(v) for v in before.values()) + len(got)
    return got


def fold(path: str) -> dict[str, hitl_fmt.HitlRequest]:
    evs, wps = [], {}
    for topic, rs in rows(path).items():
        for r in rs:
            ev = make_event(path, topic, r["event_id"], r["kind"], r["payload"], r["headers"], r["occurred_at_ms"])
            if topic in hitl_fmt.HITL_TOPICS:
                evs.append(ev)
            elif topic.startswith(hitl_fmt.WAITPOINT_PREFIX):
                wps[ev.payload["id"]] = ev.payload
    reqs, _ = hitl_fmt.derive(evs, wps, now_ms=0)
    return reqs


def harn_pending(path: str) -> set[str]:
    return OR.pending(rows(path))


@pytest.fixture
def log(tmp_path):
    path = str(tmp_path / "proj" / ".harn" / "events.sqlite")
    os.makedirs(os.path.dirname(path))
    conn = W.open_log(path)
    yield path, conn
    conn.close()


def add_approval(conn, rid, **kw):
    W.waitpoint_open(conn, rid)
    env = W.approval_request(rid, **kw)
    W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))


def add_question(conn, rid, prompt="Which environment?", schema=None):
    W.waitpoint_open(conn, rid, "question")
    env = {"request_id": rid, "kind": "question", "agent": "asker", "trace_id": "trace_q",
           "requested_at": "2026-05-04T09:00:10Z",
           "payload": {"prompt": prompt, "schema": schema, "default": None, "timeout_ms": 86400000}}
    W.append(conn, "hitl.questions", "hitl.question_asked", env, W.request_headers(env))


def add_escalation(conn, rid):
    W.waitpoint_open(conn, rid, "escalation")
    env = {"request_id": rid, "kind": "escalation", "agent": "ops", "trace_id": "trace_e",
           "requested_at": "2026-05-04T09:00:10Z", "payload": {"role": "oncall", "reason": "disk full"}}
    W.append(conn, "hitl.escalations", "hitl.escalation_issued", env, W.request_headers(env))


# ----------------------------------------------------------------------------------- oracle rows
def test_approve_quorum_one_writes_harns_four_rows(log):
    path, conn = log
    add_approval(conn, "hitl_approval_a1")
    W.append(conn, "waitpoint.resumes", "waitpoint.resume", {"waitpoint_id": "other", "requested_at": "x",
                                                              "reason": "waitpoint_changed"})
    before = rows(path)
    assert "hitl_approval_a1" in harn_pending(path)
    res = A.answer(path, "hitl_approval_a1", "approve", reviewer="alice", reason="change window open")
    got = check_against_oracle(path, before, res)
    assert [g["kind"] for g in got] == ["hitl.response_received", "hitl.approval_approved", "waitpoint.state",
                                        "waitpoint.resume"]
    assert res.outcome == "approved"
    rec = json.loads(got[1]["payload"])["record"]
    assert rec["reviewers"] == ["alice"] and rec["reason"] == "change window open"
    assert json.loads(got[2]["payload"])["status"] == "completed"
    assert "hitl_approval_a1" not in harn_pending(path)
    assert fold(path)["hitl_approval_a1"].state == "answered"


def test_quorum_two_counts_then_approves(log):
    path, conn = log
    add_approval(conn, "hitl_approval_q2", reviewers=("alice", "bob"), quorum=2)
    before = rows(path)
    res = A.answer(path, "hitl_approval_q2", "approve", reviewer="alice")
    got = check_against_oracle(path, before, res)
    assert len(got) == 1 and res.outcome == "pending (1 of 2)"
    r = fold(path)["hitl_approval_q2"]
    assert r.state == "pending" and r.approvals == ["alice"] and r.quorum == 2
    assert "hitl_approval_q2" in harn_pending(path)
    with pytest.raises(A.AnswerRefused, match="already approved"):
        A.answer(path, "hitl_approval_q2", "approve", reviewer="alice")
    before = rows(path)
    res = A.answer(path, "hitl_approval_q2", "approve", reviewer="bob", reason="lgtm")
    got = check_against_oracle(path, before, res)
    assert res.outcome == "approved" and len(got) == 4
    assert json.loads(got[1]["payload"])["record"]["reviewers"] == ["alice", "bob"]
    assert fold(path)["hitl_approval_q2"].state == "answered"


def test_deny_with_and_without_reason(log):
    path, conn = log
    add_approval(conn, "hitl_approval_d1")
    before = rows(path)
    res = A.answer(path, "hitl_approval_d1", "deny", reviewer="alice", reason="not in the change window")
    got = check_against_oracle(path, before, res)
    assert [g["kind"] for g in got] == ["hitl.response_received", "hitl.approval_denied", "waitpoint.state",
                                        "waitpoint.resume"]
    assert got[1]["payload"] == (b'{"request_id":"hitl_approval_d1","reviewer":"alice",'
                                 b'"reason":"not in the change window"}')
    assert json.loads(got[2]["payload"])["status"] == "cancelled"
    assert fold(path)["hitl_approval_d1"].state == "denied"
    assert "hitl_approval_d1" not in harn_pending(path)
    add_approval(conn, "hitl_approval_d2")
    before = rows(path)
    res = A.answer(path, "hitl_approval_d2", "deny", reviewer="alice")
    got = check_against_oracle(path, before, res)
    assert got[1]["payload"] == b'{"request_id":"hitl_approval_d2","reviewer":"alice","reason":null}'


def test_answer_question_and_escalations(log):
    path, conn = log
    add_question(conn, "hitl_question_q1")
    before = rows(path)
    res = A.answer(path, "hitl_question_q1", "answer", reviewer="alice", answer_value={"env": "staging"})
    got = check_against_oracle(path, before, res)
    assert json.loads(got[0]["payload"])["answer"] == {"env": "staging"}
    assert json.loads(got[1]["payload"])["value"] == {"env": "staging"}
    assert fold(path)["hitl_question_q1"].state == "answered"
    with pytest.raises(A.AnswerRefused, match="no longer pending|already answered"):
        A.answer(path, "hitl_question_q1", "answer", reviewer="bob", answer_value="prod")

    add_escalation(conn, "hitl_escalation_e1")
    before = rows(path)
    res = A.answer(path, "hitl_escalation_e1", "decline", reviewer="alice", reason="not mine")
    got = check_against_oracle(path, before, res)
    assert [g["kind"] for g in got] == ["hitl.escalation_accepted"] and res.outcome == "declined"
    assert fold(path)["hitl_escalation_e1"].state == "rejected-but-hidden"
    assert "hitl_escalation_e1" not in harn_pending(path)  # Harn hides it, yet the VM waits
    before = rows(path)
    res = A.answer(path, "hitl_escalation_e1", "accept", reviewer="bob")
    got = check_against_oracle(path, before, res)
    assert [g["kind"] for g in got] == ["hitl.escalation_accepted", "waitpoint.state", "waitpoint.resume"]
    assert json.loads(got[1]["payload"])["value"] == {"accepted": True, "reviewer": "bob", "reason": None,
                                                      "responded_at": json.loads(got[0]["payload"])["responded_at"]}
    assert fold(path)["hitl_escalation_e1"].state == "answered"


def test_dual_control_two_of_three(log):
    path, conn = log
    rid = "hitl_dual_control_dc1"
    W.waitpoint_open(conn, rid, "dual_control")
    ar = {"id": rid, "action": "rotate_keys", "args": {"n": 2, "m": 3, "approvers": ["ann", "ben", "cat"]},
          "principal": "", "requested_at": "2026-05-04T09:00:10Z", "deadline": "2999-01-01T00:00:00Z",
          "approvers_required": 2, "evidence_refs": [], "undo_metadata": None, "capabilities_requested": []}
    env = {"request_id": rid, "kind": "dual_control", "agent": "", "trace_id": "trace_dc",
           "requested_at": "2026-05-04T09:00:10Z",
           "payload": {"approval_request": ar, **{k: ar[k] for k in ("id", "args", "principal", "requested_at", "deadline",
                                                                     "approvers_required", "evidence_refs",
                                                                     "undo_metadata", "capabilities_requested")},
                       "n": 2, "m": 3, "action": "rotate_keys", "approvers": ["ann", "ben", "cat"], "deadline_ms": 86400000}}
    W.append(conn, "hitl.dual_control", "hitl.dual_control_requested", env, W.request_headers(env))
    with pytest.raises(A.AnswerRefused, match="not allowed"):
        A.answer(path, rid, "approve", reviewer="dan")
    before = rows(path)
    res = A.answer(path, rid, "approve", reviewer="cat")
    check_against_oracle(path, before, res)
    assert res.outcome == "pending (1 of 2)" and fold(path)[rid].approvals == ["cat"]
    before = rows(path)
    res = A.answer(path, rid, "approve", reviewer="ann", reason="both keys checked")
    got = check_against_oracle(path, before, res)
    assert [g["kind"] for g in got][:2] == ["hitl.response_received", "hitl.dual_control_approved"]
    assert json.loads(got[1]["payload"])["record"]["reviewers"] == ["ann", "cat"]
    assert fold(path)[rid].state == "answered" and rid not in harn_pending(path)


def test_sorted_key_log_gets_sorted_rows(log):
    """A log written by a build without serde_json's preserve_order has sorted keys everywhere;
    the answer follows it (payload and hash wrapper)."""
    path, conn = log
    rid = "hitl_approval_s1"
    W.waitpoint_open(conn, rid)
    env = W.approval_request(rid)
    W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env),
             raw_payload=json.dumps(env, sort_keys=True, separators=(",", ":")).encode())
    # make the stored chain verify in sorted order: rewrite the envelope's hash the sorted way
    (eid, headers, occ) = conn.execute(
        "SELECT event_id, headers, occurred_at_ms FROM events WHERE topic='hitl.approvals'").fetchone()
    h = json.loads(headers)
    h["harn.provenance.record_hash"] = H.record_hash("hitl.approvals", eid, "hitl.approval_requested",
                                                     json.loads(json.dumps(env, sort_keys=True)), h, occ, "sorted")
    conn.execute("UPDATE events SET headers=? WHERE topic='hitl.approvals'", (json.dumps(h, separators=(",", ":")),))
    before = rows(path)
    res = A.answer(path, rid, "approve", reviewer="alice")
    got = check_against_oracle(path, before, res, sort=True)
    assert got[0]["payload"].startswith(b'{"approved":true,"request_id"')


@pytest.mark.skipif(not SAMPLE.is_file(), reason="constructed harn-samples not found")
def test_sample_log_reproduces_the_worked_example(tmp_path):
    """harn-samples' approval B (§M.1.6): remove the rows its answer wrote, answer again as alice,
    and the new rows equal the sample's rows apart from ids, times, hashes (and the moved ids)."""
    path = str(tmp_path / "events.sqlite")
    shutil.copy(SAMPLE, path)  # a file copy: never open the shared sample itself (a reader leaves -wal/-shm)
    if os.path.exists(str(SAMPLE) + "-wal"):
        shutil.copy(str(SAMPLE) + "-wal", path + "-wal")
    rid = "hitl_approval_019df237-6590-789f-8c58-97172ca41e44"
    wpt = "waitpoint.state." + rid
    orig = rows(path)
    c = sqlite3.connect(path)
    c.execute("DELETE FROM events WHERE topic='hitl.approvals' AND event_id IN (2,3)")
    c.execute("DELETE FROM events WHERE topic=? AND event_id=2", (wpt,))
    c.execute("DELETE FROM events WHERE topic='waitpoint.resumes'")
    c.execute("UPDATE topic_heads SET last_id=1 WHERE topic=?", (wpt,))
    c.execute("UPDATE topic_heads SET last_id=0 WHERE topic='waitpoint.resumes'")
    # event 4 chained to 3: re-chain it to 1 so the topic verifies
    (h4, p4, o4) = c.execute(
        "SELECT headers, payload, occurred_at_ms FROM events WHERE topic='hitl.approvals' AND event_id=4").fetchone()
    (h1,) = c.execute("SELECT headers FROM events WHERE topic='hitl.approvals' AND event_id=1").fetchone()
    h = json.loads(h4)
    h["harn.provenance.prev_hash"] = json.loads(h1)["harn.provenance.record_hash"]
    h["harn.provenance.record_hash"] = H.record_hash("hitl.approvals", 4, "hitl.approval_requested", json.loads(p4), h, o4,
                                                     "source")
    c.execute("UPDATE events SET headers=? WHERE topic='hitl.approvals' AND event_id=4", (json.dumps(h, separators=(",", ":")),))
    c.commit()
    c.close()
    before = rows(path)
    res = A.answer(path, rid, "approve", reviewer="alice", reason="change window open")
    got = check_against_oracle(path, before, res)
    def timeless(b):
        return {k: v for k, v in json.loads(b).items() if k not in ("responded_at", "completed_at", "requested_at")}

    assert timeless(got[0]["payload"]) == timeless(orig["hitl.approvals"][1]["payload"])
    assert list(json.loads(got[0]["payload"])) == list(json.loads(orig["hitl.approvals"][1]["payload"]))
    sample_wp = json.loads(orig[wpt][1]["payload"])
    mine_wp = json.loads(got[2]["payload"])
    assert list(mine_wp) == list(sample_wp)
    assert {k: mine_wp[k] for k in ("status", "completed_by", "reason", "metadata", "created_at")} == \
           {k: sample_wp[k] for k in ("status", "completed_by", "reason", "metadata", "created_at")}
    assert list(json.loads(got[3]["payload"])) == list(json.loads(orig["waitpoint.resumes"][0]["payload"]))
    assert json.loads(got[1]["payload"])["record"]["reviewers"] == ["alice"]


# ------------------------------------------------------------------------------------ refusals
def test_refuses_file_backend_and_outside_paths(tmp_path):
    with pytest.raises(A.AnswerRefused, match="duplicate|same event id"):
        A.check_target(str(tmp_path), "file", str(tmp_path / ".harn" / "events"), str(tmp_path / ".harn"))
    proj = tmp_path / "proj"
    evil = tmp_path / "proj-evil"
    (proj / ".harn").mkdir(parents=True)
    evil.mkdir()
    (evil / "events.sqlite").write_bytes(b"")
    os.symlink(evil / "events.sqlite", proj / ".harn" / "events.sqlite")
    with pytest.raises(A.ActionFailed, match="outside the project"):
        A.check_target(str(proj), "sqlite", str(proj / ".harn" / "events.sqlite"), str(proj / ".harn"))


def test_refuses_reviewer_not_listed_and_empty_reviewer(log):
    path, conn = log
    add_approval(conn, "hitl_approval_r1", reviewers=("alice", "bob"))
    before = rows(path)
    with pytest.raises(A.AnswerRefused, match="`mallory` is not allowed: this request lists `alice`, `bob`"):
        A.answer(path, "hitl_approval_r1", "approve", reviewer="mallory")
    with pytest.raises(A.AnswerRefused, match="harnState.hitl.reviewer"):
        A.answer(path, "hitl_approval_r1", "approve", reviewer="  ")
    with pytest.raises(A.AnswerRefused, match="does not apply"):
        A.answer(path, "hitl_approval_r1", "answer", reviewer="alice", answer_value=1)
    assert rows(path) == before


def test_refuses_when_no_longer_pending(log):
    path, conn = log
    add_approval(conn, "hitl_approval_t1")
    W.append(conn, "hitl.approvals", "hitl.timeout", {"request_id": "hitl_approval_t1", "kind": "approval",
                                                       "trace_id": "trace_x", "timed_out_at": "2026-05-05T09:00:10Z"},
             {"request_id": "hitl_approval_t1", "trace_id": "trace_x"})
    with pytest.raises(A.AnswerRefused, match="expired"):
        A.answer(path, "hitl_approval_t1", "approve", reviewer="alice")
    assert fold(path)["hitl_approval_t1"].state == "expired" and "hitl_approval_t1" not in harn_pending(path)
    add_approval(conn, "hitl_approval_t2")
    A.answer(path, "hitl_approval_t2", "approve", reviewer="alice")
    before = rows(path)
    with pytest.raises(A.AnswerRefused, match="no longer pending: its waitpoint is `completed`"):
        A.answer(path, "hitl_approval_t2", "deny", reviewer="alice")
    with pytest.raises(A.AnswerRefused, match="not in this log|no waitpoint"):
        A.answer(path, "hitl_approval_unknown", "approve", reviewer="alice")
    assert rows(path) == before


def test_refuses_a_broken_provenance_chain(log):
    path, conn = log
    add_approval(conn, "hitl_approval_c1")
    add_approval(conn, "hitl_approval_c2")
    # someone edited the first request's payload after the fact
    conn.execute("UPDATE events SET payload = replace(payload, 'deploy web', 'deploy evil') "
                 "WHERE topic='hitl.approvals' AND event_id=1")
    before = rows(path)
    with pytest.raises(A.AnswerRefused, match="provenance chain does not verify: `hitl.approvals event 1"):
        A.answer(path, "hitl_approval_c2", "approve", reviewer="alice")
    assert rows(path) == before


def test_fold_matches_harn_reviewer_lists_repeats_and_absent_approved():
    payload = {"quorum": 2, "reviewers": ["alice", "bob", "carol"]}
    def r(**kw):
        return dict({"request_id": "hitl_approval_x", "responded_at": "t"}, **kw)

    d = H.fold_approval("approval", "hitl_approval_x", payload,
                        [r(approved=True, reviewer="alice"), r(approved=True, reviewer="alice"),
                         r(approved=False, reviewer="mallory"), r(approved=True, reviewer="bob")], "now")
    assert d.outcome == "approved" and d.record["reviewers"] == ["alice", "bob"]
    d = H.fold_approval("approval", "hitl_approval_x", payload, [r(reviewer="carol")], "now")
    assert d.outcome == "denied"  # `approved` absent counts as a denial
    assert hitl_fmt.harn_quorum("approval", {"approvers_required": 3, "approval_request": {"approvers_required": 2}}) == 3
    assert hitl_fmt.harn_quorum("dual_control", {"n": 2, "quorum": 5}) == 2
    assert hitl_fmt.harn_quorum("approval", {"quorum": None, "approvers_required": 4}) == 1  # present null stops the chain
    assert "answer" not in H.response_payload("hitl_question_x", answer=None, responded_at="t")  # null is unset
    assert H.waitpoint_record({"id": None, "status": "open"}) is None  # Harn skips a record it cannot read
    assert H.waitpoint_record({"id": "w"})["status"] == "open" and H.waitpoint_record({"id": "w"})["created_at"] == ""
    assert harn_time.rfc3339_time(1_777_885_295_000_640_019) == "2026-05-04T09:01:35.000640019Z"
    assert harn_time.rfc3339_time(1_777_885_295_000_000_000) == "2026-05-04T09:01:35Z"
    assert harn_time.rfc3339_time(1_777_885_295_500_000_000) == "2026-05-04T09:01:35.5Z"


def test_finish_completes_an_orphan_response(log):
    """A response committed without its finalize (a crash): harn-ls's fold shows what Harn shows, and
    finish() appends what Harn's next finalize would."""
    path, conn = log
    add_approval(conn, "hitl_approval_o1")
    before = rows(path)

    class Crash(Exception):
        pass

    def crash():
        raise Crash()

    with pytest.raises(Crash):
        A.answer(path, "hitl_approval_o1", "approve", reviewer="alice", after_response=crash)
    after = rows(path)
    assert len(after["hitl.approvals"]) == len(before["hitl.approvals"]) + 1
    r = fold(path)["hitl_approval_o1"]
    assert r.state == "pending" and r.approvals == ["alice"]
    assert "hitl_approval_o1" in harn_pending(path)
    assert H.needs_finish(r)
    # the view offers Finish: the tree item and the document's lens
    ws = Workspace.load(os.path.dirname(os.path.dirname(path)), cache=False)
    [item] = [i for i in tree_items(ws, "runs", "hitl", TreeOptions(open_command="t.open", page_size=200))
              if i["id"] == "hitl:hitl_approval_o1"]
    assert item["contextValue"] == "hitlRequest.unfinished" and "not finished" in item["description"]
    assert [v.title for v in hitl_lenses(ws, "hitl_approval_o1")] == ["Finish the answer already given"]
    doc = render_uri(ws, "harn-state:/hitl/hitl_approval_o1.md", RenderSettings())
    assert "never finished" in doc and "**Finish**" in doc
    # a second "deny" on the orphan is told to finish instead, and writes nothing
    with pytest.raises(A.AnswerRefused, match="finish it instead"):
        A.answer(path, "hitl_approval_o1", "deny", reviewer="alice")
    res = A.finish(path, "hitl_approval_o1")
    assert [w.kind for w in res.written] == ["hitl.approval_approved", "waitpoint.state", "waitpoint.resume"]
    assert fold(path)["hitl_approval_o1"].state == "answered"
    with pytest.raises(A.AnswerRefused, match="already finished"):
        A.finish(path, "hitl_approval_o1")


def test_cli_answers_with_the_schema_type_and_choices(log, capsys, monkeypatch):
    from harn_ls.cli import main as cli

    monkeypatch.setenv("HARN_LS_CACHE", "off")
    path, conn = log
    proj = os.path.dirname(os.path.dirname(path))
    add_question(conn, "hitl_question_n1", schema={"type": "integer"})
    add_question(conn, "hitl_question_c2", prompt="Pick", schema={"enum": ["staging", "prod"]})
    # the integer question: "forty" is refused with the reason (exit 1), "42" is the number 42
    assert cli.main(["hitl", proj, "answer", "hitl_question_n1", "forty", "--reviewer", "alice"]) == 1
    assert "expects integer" in capsys.readouterr().err
    assert cli.main(["hitl", proj, "answer", "hitl_question_n1", "42", "--reviewer", "alice"]) == 0
    assert "answered" in capsys.readouterr().out
    assert cli.main(["hitl", proj, "list", "--json"]) == 0
    listed = {r["request_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert "hitl_question_n1" not in listed
    assert listed["hitl_question_c2"]["choices"] == ["staging", "prod"] and listed["hitl_question_c2"]["actions"] == ["answer"]
    assert cli.main(["hitl", proj, "answer", "hitl_question_c2", "prod", "--reviewer", "alice", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "answered" and [w["kind"] for w in out["written"]] == [
        "hitl.response_received", "waitpoint.state", "waitpoint.resume"]
    answers = [json.loads(r["payload"])["answer"] for r in rows(path)["hitl.questions"] if r["kind"] == "hitl.response_received"]
    assert answers == [42, "prod"]


def test_refuses_a_log_whose_schema_runs_sql_on_our_insert(log):
    """A cloned repository's events.sqlite with a trigger on `events` (here: one that would write a 2 GB
    blob on every insert): Harn's schema has no trigger, so nothing is written and the log is as it was."""
    path, conn = log
    add_approval(conn, "hitl_approval_trig")
    conn.execute("CREATE TABLE IF NOT EXISTS junk (b BLOB)")
    conn.execute("CREATE TRIGGER fill AFTER INSERT ON events BEGIN INSERT INTO junk VALUES (zeroblob(2000000000)); END")
    before = rows(path)
    with pytest.raises(A.AnswerRefused, match="has triggers .*fill.*not writing"):
        A.answer(path, "hitl_approval_trig", "approve", reviewer="alice")
    assert rows(path) == before


def test_an_answer_reads_the_request_and_waitpoint_topics_once(log, monkeypatch):
    """An approval reads the request's topic and its waitpoint's from the start once (the chain check);
    the checks under the write lock, the fold and the finalize steps read only the events appended
    since. The rows stay Harn's."""
    path, conn = log
    for i in range(30):  # other requests on the same topic: the topic is longer than the request
        add_approval(conn, f"hitl_approval_o{i}")
    add_approval(conn, "hitl_approval_a1")
    before = rows(path)
    traced: list[str] = []
    real_connect = A._connect

    def tracing_connect(p):
        c = real_connect(p)
        c.set_trace_callback(traced.append)  # (expanded SQL: the bound topic and event id are in the text)
        return c

    monkeypatch.setattr(A, "_connect", tracing_connect)
    res = A.answer(path, "hitl_approval_a1", "approve", reviewer="alice")
    check_against_oracle(path, before, res)
    assert res.outcome == "approved"

    def whole_reads(topic: str) -> int:
        return sum(1 for sql in traced if sql.startswith(A._SELECT.split("?")[0]) and f"topic = '{topic}'" in sql
                   and "event_id > 0 " in sql)

    assert whole_reads("hitl.approvals") == 1
    assert whole_reads("waitpoint.state.hitl_approval_a1") == 1
    # each later read of a held topic is one statement: the events since and the topic's first id together
    assert [sql for sql in traced if sql.startswith("SELECT MIN(event_id) FROM events")] == []
    assert any("topic = 'waitpoint.state.hitl_approval_a1' AND e.event_id > " in sql and "event_id > 0 " not in sql
               for sql in traced)  # the finalize re-read what was appended since, under the lock


def test_a_topic_grown_past_the_cap_under_the_lock_is_refused(log, monkeypatch):
    """The request's topic is read under the cap before the write lock; requests appended meanwhile push it
    past MAX_TOPIC_ROWS: the read under the lock (only the events since) refuses it with the cap's one
    message, and nothing is written."""
    path, conn = log
    add_approval(conn, "hitl_approval_c1")
    monkeypatch.setattr(A, "MAX_TOPIC_ROWS", 3)
    real_chains = A._chains

    def chains_then_more_requests(topics, rid):
        out = real_chains(topics, rid)
        for i in range(3):  # another agent asks meanwhile
            add_approval(conn, f"hitl_approval_late{i}")
        return out

    monkeypatch.setattr(A, "_chains", chains_then_more_requests)
    with pytest.raises(A.AnswerRefused, match=r"^topic `hitl.approvals` has more than 3 events; not folding it$"):
        A.answer(path, "hitl_approval_c1", "approve", reviewer="alice")
    after = rows(path)
    assert [r["kind"] for r in after["hitl.approvals"]] == ["hitl.approval_requested"] * 4  # no response appended
    assert "waitpoint.resumes" not in after
