"""Requests waiting for a human (harn-formats §M.1, §N, §P).

`derive(events, waitpoints, now_ms)` folds the events of the HITL topics and
the latest waitpoint record of each request into one `HitlRequest` per
request id, with the state a viewer should show:

* Harn's own rule (`hitl_pending`, §M.1.5) decides *resolved*: a terminal
  event on the request's topic, matched by `headers.request_id`, else
  `payload.request_id`; events on the legacy `hitl.responses` topic count too.
* The viewer states of §M.1.5 [PROP] refine it: answered / denied /
  cancelled / expired; `overdue` when still pending past its deadline (the
  waiting process probably died before writing `hitl.timeout`, §P.5);
  `rejected-but-hidden` for an escalation "accepted" with `accepted != true`
  (Harn hides it but the VM keeps waiting, §P.4); approvals show "k of n".
* A response whose request envelope is nowhere in the log (wrong state dir,
  §P.3) is an *orphan response*, reported as a problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from harn_ls.formats.events import Event
from harn_ls.formats.harn_time import parse_time_ms
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue

TOPIC_BY_KIND = {
    "question": "hitl.questions",
    "approval": "hitl.approvals",
    "dual_control": "hitl.dual_control",
    "escalation": "hitl.escalations",
}
REQUEST_TOPICS = tuple(TOPIC_BY_KIND.values())
RESPONSES_TOPIC = "hitl.responses"
HITL_TOPICS = REQUEST_TOPICS + (RESPONSES_TOPIC,)
REQUEST_KINDS = {
    "hitl.question_asked": "question",
    "hitl.approval_requested": "approval",
    "hitl.dual_control_requested": "dual_control",
    "hitl.escalation_issued": "escalation",
}
KNOWN_KINDS = set(REQUEST_KINDS) | {
    "hitl.response_received", "hitl.escalation_accepted", "hitl.approval_approved", "hitl.approval_denied",
    "hitl.dual_control_approved", "hitl.dual_control_denied", "hitl.dual_control_executed", "hitl.timeout",
}
WAITPOINT_PREFIX = "waitpoint.state."
DEFAULT_TIMEOUT_MS = 86_400_000

CODE_ORPHAN = "HL-HITL-001"
CODE_UNKNOWN_KIND = "HL-HITL-002"
CODE_BAD_ENVELOPE = "HL-HITL-003"
CODE_REJECTED_HIDDEN = "HL-HITL-004"

_ID_PREFIX = re.compile(r"^hitl_(question|approval|dual_control|escalation)_")


def kind_of_id(request_id: str) -> str | None:
    m = _ID_PREFIX.match(request_id or "")
    return m.group(1) if m else None


def sanitize_topic_component(value: str) -> str:
    """Harn's `sanitize_topic_component`: every char outside [A-Za-z0-9._-] becomes `_`."""
    return "".join(c if (c.isascii() and (c.isalnum() or c in "._-")) else "_" for c in value)


def _request_id(ev: Event) -> str | None:
    rid = ev.headers.get("request_id")
    if isinstance(rid, str) and rid:
        return rid
    if isinstance(ev.payload, dict) and isinstance(rid := ev.payload.get("request_id"), str):
        return rid
    return None


@dataclass
class HitlRequest:
    """A request waiting for (or answered by) a human, rebuilt from the HITL topics."""

    request_id: str
    kind: str  # question approval dual_control escalation
    topic: str
    log: str = ""  # which event log (label)
    event_id: int = 0
    envelope: JsonObject = field(default_factory=dict)
    agent: str = ""
    trace_id: str = ""
    run_id: str = ""
    requested_at: str = ""
    state: str = "pending"  # pending answered denied cancelled expired overdue rejected-but-hidden
    resolved_by: str = ""  # the kind of the event that resolved it (Harn's view)
    resolved_event_id: int = 0
    responses: list[JsonObject] = field(default_factory=list)  # HitlHostResponse payloads, log order
    approvals: list[str] = field(default_factory=list)  # counted approving reviewers
    quorum: int = 1
    reviewers: list[str] = field(default_factory=list)
    deadline_ms: int | None = None
    waitpoint_status: str | None = None
    waitpoint: JsonObject | None = None
    timed_out_at: str = ""
    replays: int = 0  # extra *_requested events for the same id (replayed dispatch, §P.6)
    record: JsonObject | None = None  # ApprovalRecord when approved

    @property
    def payload(self) -> JsonObject:
        p = self.envelope.get("payload")
        return p if isinstance(p, dict) else {}

    @property
    def prompt(self) -> str:
        """Harn's `prompt_from_payload`: the first of `prompt` / `action` / `reason` that is present
        (even as null or "") decides; a non-string value there gives ""."""
        p = self.payload
        for key in ("prompt", "action", "reason"):
            if key in p:
                return p[key] if isinstance(p[key], str) else ""
        return ""

    @property
    def is_waiting(self) -> bool:
        """Shown in *Waiting for you*: pending, overdue or rejected-but-hidden."""
        return self.state in ("pending", "overdue", "rejected-but-hidden")

    def to_json(self) -> JsonObject:
        return {
            "request_id": self.request_id, "kind": self.kind, "topic": self.topic, "log": self.log,
            "event_id": self.event_id, "state": self.state, "agent": self.agent, "trace_id": self.trace_id,
            "run_id": self.run_id or None, "requested_at": self.requested_at, "prompt": self.prompt,
            "reviewers": self.reviewers, "quorum": self.quorum, "approvals": self.approvals,
            "deadline_ms": self.deadline_ms, "waitpoint_status": self.waitpoint_status,
            "resolved_by": self.resolved_by or None, "responses": len(self.responses),
        }


class KindAndPayload(Protocol):
    """An event as `is_terminal` reads it: an Event, or the answer writer's row."""

    @property
    def kind(self) -> str: ...

    @property
    def payload(self) -> JsonValue: ...


def is_terminal(kind: str, ev: KindAndPayload) -> bool:
    """Harn's `hitl_pending` terminal-event table (§M.1.5). `ev`: anything with `kind` and `payload`
    (an Event, or the answer writer's row)."""
    k = ev.kind
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if k == "hitl.timeout":
        return True
    if kind == "question":
        return k == "hitl.response_received"
    if kind == "approval":
        return k in ("hitl.approval_approved", "hitl.approval_denied") or (
            k == "hitl.response_received" and p.get("approved") is False)
    if kind == "dual_control":
        return k in ("hitl.dual_control_approved", "hitl.dual_control_denied", "hitl.dual_control_executed") or (
            k == "hitl.response_received" and p.get("approved") is False)
    if kind == "escalation":
        return k == "hitl.escalation_accepted" or (k == "hitl.response_received" and p.get("accepted") is True)
    return False


def _str_list(v: JsonValue) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def derive(events: Iterable[Event], waitpoints: dict[str, JsonObject] | None = None, now_ms: int | None = None,
           *, log_label: str = "", path: str = "") -> tuple[dict[str, HitlRequest], list[Problem]]:
    """Requests by id, and problems (orphan responses, unknown kinds, bad envelopes).

    `events`: every event of the HITL topics, each topic in id order. `waitpoints`: the latest
    waitpoint record payload by request id (from `waitpoint.state.<id>`)."""
    waitpoints = waitpoints or {}
    requests: dict[str, HitlRequest] = {}
    later: list[Event] = []
    problems: list[Problem] = []
    for ev in events:
        if ev.kind in REQUEST_KINDS:
            env = ev.payload if isinstance(ev.payload, dict) else None
            rid = _request_id(ev)
            if env is None or rid is None:
                problems.append(Problem(path, 0, CODE_BAD_ENVELOPE,
                    f"{ev.topic} event {ev.id} ({ev.kind}): request envelope without a request_id", Severity.WARNING))
                continue
            kind = kind_of_id(rid) or (k if isinstance(k := env.get("kind"), str) else REQUEST_KINDS[ev.kind])
            req = requests.get(rid)
            if req is not None:
                req.replays += 1  # the same request again (replayed dispatch): the latest envelope wins
            else:
                req = requests[rid] = HitlRequest(rid, kind, ev.topic, log=log_label)
            req.event_id = ev.id
            req.envelope = env
            req.agent = a if isinstance(a := env.get("agent"), str) else ""
            req.trace_id = t if isinstance(t := env.get("trace_id"), str) else (ev.headers.get("trace_id") or "")
            req.run_id = r if isinstance(r := env.get("run_id"), str) else (ev.headers.get("run_id") or "")
            req.requested_at = at if isinstance(at := env.get("requested_at"), str) else ""
            p = req.payload
            if kind == "dual_control":
                req.reviewers = _str_list(p.get("approvers"))
            else:
                req.reviewers = _str_list(p.get("reviewers")) or _str_list(p.get("approvers"))
            req.quorum = max(1, harn_quorum(kind, p))  # 0 acts as 1: Harn counts after an approving response
            req.deadline_ms = _deadline_ms(kind, p, req.requested_at)
        else:
            later.append(ev)
    for ev in later:
        rid = _request_id(ev)
        if ev.kind not in KNOWN_KINDS:
            problems.append(Problem(path, 0, CODE_UNKNOWN_KIND,
                f"{ev.topic} event {ev.id}: unknown HITL event kind {ev.kind[:80]!r}; shown as is", Severity.INFO))
            continue
        if rid is None:
            continue
        req = requests.get(rid)
        if req is None:
            if ev.kind in ("hitl.response_received", "hitl.escalation_accepted"):
                problems.append(Problem(path, 0, CODE_ORPHAN,
                    f"{ev.topic} event {ev.id}: response to {rid} whose request is not in this log — answered in the wrong "
                    "state dir? (Harn commits the response before it checks the request, so it stays as an orphan)",
                    Severity.WARNING))
            continue
        if ev.topic == RESPONSES_TOPIC or ev.topic == req.topic:
            _apply(req, ev)
    for rid, req in requests.items():
        wp = waitpoints.get(rid)
        if isinstance(wp, dict):
            req.waitpoint = wp
            req.waitpoint_status = wp.get("status") if isinstance(wp.get("status"), str) else None
        _finish(req, now_ms)
        if req.state == "rejected-but-hidden":
            problems.append(Problem(path, 0, CODE_REJECTED_HIDDEN,
                f"escalation {rid} was answered with accepted != true: Harn hides it from its pending list but the "
                "waiting VM keeps waiting (escalations never time out)", Severity.WARNING))
    return requests, problems


def _deadline_ms(kind: str, p: JsonObject, requested_at: str) -> int | None:
    if kind == "escalation":
        return None  # escalations never time out
    if kind == "question":
        t = p.get("timeout_ms")
        start = parse_time_ms(requested_at)
        if start is None:
            return None
        return start + (t if isinstance(t, int) and not isinstance(t, bool) else DEFAULT_TIMEOUT_MS)
    ar = p.get("approval_request")
    d = parse_time_ms(ar.get("deadline") if isinstance(ar, dict) else None) or parse_time_ms(p.get("deadline"))
    if d is not None:
        return d
    start = parse_time_ms(requested_at)
    t = p.get("deadline_ms")
    if start is not None and isinstance(t, int) and not isinstance(t, bool):
        return start + t
    return None


def _apply(req: HitlRequest, ev: Event) -> None:
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if ev.kind in ("hitl.response_received", "hitl.escalation_accepted"):
        req.responses.append(p)
        reviewer = p.get("reviewer")
        if ev.kind == "hitl.response_received" and req.kind in ("approval", "dual_control") and p.get("approved") is True \
                and isinstance(reviewer, str) and (not req.reviewers or reviewer in req.reviewers) \
                and reviewer not in req.approvals:
            req.approvals.append(reviewer)
    if ev.kind == "hitl.timeout":
        req.timed_out_at = t if isinstance(t := p.get("timed_out_at"), str) else ""
    if ev.kind in ("hitl.approval_approved", "hitl.dual_control_approved") and isinstance(p.get("record"), dict):
        req.record = p["record"]
    if not req.resolved_by and is_terminal(req.kind, ev):
        req.resolved_by = ev.kind
        req.resolved_event_id = ev.id


def _finish(req: HitlRequest, now_ms: int | None) -> None:
    k = req.resolved_by
    wp = req.waitpoint_status
    if k == "hitl.timeout":
        req.state = "expired"
    elif k in ("hitl.approval_approved", "hitl.dual_control_approved", "hitl.dual_control_executed"):
        req.state = "answered"
    elif k in ("hitl.approval_denied", "hitl.dual_control_denied"):
        req.state = "denied"
    elif k == "hitl.response_received":  # (terminal for an approval only with approved == false)
        req.state = "answered" if req.kind in ("question", "escalation") else "denied"
    elif k == "hitl.escalation_accepted":
        accepted = any(r.get("accepted") is True for r in req.responses)
        req.state = "answered" if accepted or wp == "completed" else "rejected-but-hidden"
    elif wp == "completed":
        req.state = "answered"
    elif wp == "cancelled":
        reason = (req.waitpoint or {}).get("reason")
        req.state = "cancelled" if reason == "upstream_cancelled" else "denied"
    else:
        req.state = "pending"
        if now_ms is not None and req.deadline_ms is not None and now_ms > req.deadline_ms:
            req.state = "overdue"


def harn_quorum(kind: str, p: JsonObject) -> int:
    """Harn's `approval_quorum_from_request`: the first key present of `n` (dual control) or `quorum`,
    then top-level `approvers_required`, then `approval_request.approvers_required`, decides; a value
    that is not a non-negative integer gives 1 (`as_u64().unwrap_or(1)`)."""
    ar = p.get("approval_request")
    for holder, key in ((p, "n" if kind == "dual_control" else "quorum"), (p, "approvers_required"),
                        (ar if isinstance(ar, dict) else {}, "approvers_required")):
        if key in holder:
            n = holder[key]
            return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 1
    return 1


HARN_PENDING_LIMIT = 500  # hitl_read.rs DEFAULT_LIMIT: `hitl_pending()` without a `limit` returns at most this many


def harn_pending(requests: dict[str, HitlRequest], limit: int = HARN_PENDING_LIMIT) -> list[HitlRequest]:
    """What Harn's `hitl_pending()` returns: requests without a terminal event, newest first by
    `requested_at` then event id, cut to `limit` (default 500, as Harn)."""
    out = [r for r in requests.values() if not r.resolved_by]
    out.sort(key=lambda r: (parse_time_ms(r.requested_at) or 0, r.event_id), reverse=True)
    return out[:limit]


def waiting(requests: dict[str, HitlRequest]) -> list[HitlRequest]:
    """Requests still waiting for a human, newest first (by requested_at, then event id)."""
    out = [r for r in requests.values() if r.is_waiting]
    out.sort(key=lambda r: (parse_time_ms(r.requested_at) or 0, r.event_id), reverse=True)
    return out


def how_to_answer(req: HitlRequest, state_dir_hint: str) -> list[str]:
    """Plain-text lines (no Markdown) saying how a human answers this request (§N)."""
    rid = req.request_id
    if req.kind == "escalation":
        return [
            "Resume it from the editor (Harn State: Resume escalation), or run:",
            f"harn orchestrator resume {rid} --reviewer <you> --state-dir {state_dir_hint}",
            "This appends hitl.escalation_accepted and completes the waitpoint; the waiting VM continues.",
        ]
    if req.kind == "question":
        return [
            "Harn's CLI cannot give an answer (harn orchestrator resume would answer null).",
            "Answer through the host running the agent (ACP or MCP) with JSON-RPC harn.hitl.respond:",
            '{"request_id": "' + rid + '", "answer": <your answer>, "reviewer": "<you>"}',
        ]
    return [
        "Harn's CLI cannot approve (harn orchestrator resume would record a denial).",
        "Approve through the host running the agent (ACP or MCP) with JSON-RPC harn.hitl.respond:",
        '{"request_id": "' + rid + '", "approved": true, "reviewer": "<you>", "reason": "<why>"}',
        "Use \"approved\": false to deny. Each listed reviewer answers once; quorum decides.",
    ]
