"""The HITL fold (formats/hitl/requests.py `derive`) on small hand-made logs, one rule of harn-formats §M.1.5
each: which responses count towards a quorum, which event resolves a request, and the derived state.
(Each rule is also a mutation of scripts/mutations.py that these tests kill.)"""

from __future__ import annotations

import pytest

from harn_ls.formats.events import Event
from harn_ls.formats.hitl import requests as hitl_fmt

T0 = "2026-05-04T09:00:00Z"
T0_MS = hitl_fmt.parse_time_ms(T0)
RID = {"approval": "hitl_approval_019df237-6590-789f-8c58-97172ca41e44",
       "dual_control": "hitl_dual_control_019df237-6590-789f-8c58-97172ca41e45",
       "question": "hitl_question_019df237-6590-789f-8c58-97172ca41e46",
       "escalation": "hitl_escalation_019df237-6590-789f-8c58-97172ca41e47"}
TOPIC = {"approval": "hitl.approvals", "dual_control": "hitl.dual_control", "question": "hitl.questions",
         "escalation": "hitl.escalations"}
ASKED = {"approval": "hitl.approval_requested", "dual_control": "hitl.dual_control_requested",
         "question": "hitl.question_asked", "escalation": "hitl.escalation_issued"}


def request(kind: str, **payload) -> Event:
    rid = RID[kind]
    env = {"request_id": rid, "kind": kind, "agent": "deployer", "requested_at": T0, "payload": payload}
    return Event(TOPIC[kind], 1, ASKED[kind], env, {"request_id": rid}, T0_MS)


def on_topic(kind: str, eid: int, event_kind: str, **payload) -> Event:
    rid = RID[kind]
    return Event(TOPIC[kind], eid, event_kind, {"request_id": rid, **payload}, {"request_id": rid}, T0_MS + eid)


def response(kind: str, eid: int, **payload) -> Event:
    rid = RID[kind]
    return Event(hitl_fmt.RESPONSES_TOPIC, eid, "hitl.response_received", {"request_id": rid, **payload},
                 {"request_id": rid}, T0_MS + eid)


def fold(*events: Event, now_ms: int | None = None) -> hitl_fmt.HitlRequest:
    requests, _problems = hitl_fmt.derive(events, now_ms=now_ms)
    [req] = requests.values()
    return req


def test_an_approval_counts_each_listed_reviewer_once():
    req = fold(request("approval", action="deploy", reviewers=["alice", "bob"], quorum=2),
               response("approval", 1, reviewer="alice", approved=True),
               response("approval", 2, reviewer="alice", approved=True),  # again: still one
               response("approval", 3, reviewer="mallory", approved=True))  # not a listed reviewer
    assert req.approvals == ["alice"] and req.quorum == 2
    assert req.state == "pending"  # partially approved: 1 of 2


def test_a_response_without_approved_does_not_end_the_request_in_harns_list():
    """Only `approved == false` is terminal (the VM then writes approval_denied itself)."""
    req = fold(request("approval", action="deploy"), response("approval", 1, reviewer="alice", reason="?"))
    assert (req.state, req.resolved_by, req.approvals) == ("pending", "", [])
    denied = fold(request("approval", action="deploy"), response("approval", 1, reviewer="alice", approved=False))
    assert (denied.state, denied.resolved_by) == ("denied", "hitl.response_received")


def test_the_first_terminal_event_resolves_the_request():
    req = fold(request("approval", action="deploy"),
               on_topic("approval", 2, "hitl.approval_denied"),
               on_topic("approval", 3, "hitl.approval_approved", record={"approved": True, "reviewers": ["bob"]}))
    assert (req.state, req.resolved_by, req.resolved_event_id) == ("denied", "hitl.approval_denied", 2)


def test_a_timeout_expires_the_request():
    req = fold(request("question", prompt="which region?"), on_topic("question", 2, "hitl.timeout", timed_out_at=T0))
    assert (req.state, req.resolved_by) == ("expired", "hitl.timeout")


@pytest.mark.parametrize("accepted, state", [(True, "answered"), ("yes", "rejected-but-hidden"),
                                             (1, "rejected-but-hidden"), (False, "rejected-but-hidden")])
def test_only_accepted_true_accepts_an_escalation(accepted, state):
    req = fold(request("escalation", reason="prod is down"),
               on_topic("escalation", 2, "hitl.escalation_accepted", accepted=accepted, reviewer="ops"))
    assert req.state == state


@pytest.mark.parametrize("quorum, expected", [(0, 1), (-2, 1), (True, 1), (3, 3)])
def test_a_quorum_below_one_is_one(quorum, expected):
    assert fold(request("approval", action="deploy", quorum=quorum)).quorum == expected


def test_dual_control_takes_its_approvers_and_n():
    req = fold(request("dual_control", action="rotate keys", approvers=["alice", "bob"], reviewers=["carol"], n=2,
                       quorum=5))
    assert (req.reviewers, req.quorum) == (["alice", "bob"], 2)


def test_overdue_only_after_the_deadline():
    deadline = T0_MS + 60_000
    events = (request("approval", action="deploy", deadline="2026-05-04T09:01:00Z"),)
    assert fold(*events, now_ms=deadline).state == "pending"
    assert fold(*events, now_ms=deadline + 1).state == "overdue"
