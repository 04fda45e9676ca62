"""Oracle for Harn's `append_hitl_response`, written from harn-formats §N.1, §M.1.3, §M.2 and §H.2.3/§H.2.4
(not from harn-ls's code). Source: burin-labs/harn e45362cf crates/harn-vm/src/stdlib/hitl.rs
(append_hitl_response 296-324, finalize 816-929, resolve_approval_state 962-1026), stdlib/waitpoint.rs
(complete/cancel 310-380, append_resume_request 538-560), provenance/mod.rs (109-163).

`predict(before, response, actual)` replays what Harn appends for `response` to a log whose rows per
topic are `before`, and returns the rows it would append: (topic, event_id, kind, payload bytes,
headers text, occurred_at_ms). Harn's clock values cannot be predicted, so they are taken from the
`actual` new rows, in order: each row's occurred_at_ms, a waitpoint record's completed_at /
cancelled_at, a resume's requested_at. Everything else — every other payload byte, every header,
both hashes — is computed here.
"""

from __future__ import annotations

import hashlib
import json

TOPICS = {"question": "hitl.questions", "approval": "hitl.approvals", "dual_control": "hitl.dual_control",
          "escalation": "hitl.escalations"}
ASKED = {"question": "hitl.question_asked", "approval": "hitl.approval_requested",
         "dual_control": "hitl.dual_control_requested", "escalation": "hitl.escalation_issued"}


def _js(v, sort) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=sort)


def _kind(rid: str) -> str:
    for k in ("question", "approval", "dual_control", "escalation"):
        if rid.startswith(f"hitl_{k}_"):
            return k
    raise ValueError(rid)


class _Log:
    def __init__(self, before: dict, actual: list, sort: bool):
        self.t = {topic: [dict(r) for r in rows] for topic, rows in before.items()}
        self.actual = list(actual)
        self.out = []
        self.sort = sort

    def rows(self, topic):
        return self.t.get(topic, [])

    def append(self, topic, kind, payload, headers, clock_field=None):
        act = self.actual[len(self.out)]
        if clock_field:  # the one time value Harn read from its clock for this payload
            payload[clock_field] = json.loads(act["payload"])[clock_field]
        occurred = act["occurred_at_ms"]
        rows = self.rows(topic)
        eid = (max(r["event_id"] for r in rows) if rows else 0) + 1
        h = dict(headers)
        h["harn.provenance.schema"] = "harn-eventlog-provenance-v1"
        if rows:
            h["harn.provenance.prev_hash"] = json.loads(rows[-1]["headers"])["harn.provenance.record_hash"]
        wrapper = {"topic": topic, "event_id": eid, "kind": kind, "payload": payload,
                   "headers": dict(sorted(h.items())), "occurred_at_ms": occurred}
        h["harn.provenance.record_hash"] = "sha256:" + hashlib.sha256(_js(wrapper, self.sort).encode()).hexdigest()
        row = {"event_id": eid, "kind": kind, "payload": _js(payload, self.sort).encode(),
               "headers": _js(dict(sorted(h.items())), True), "occurred_at_ms": occurred}
        self.t.setdefault(topic, []).append(row)
        self.out.append((topic, eid, kind, row["payload"], row["headers"], occurred))


def _for(row, rid):
    p = json.loads(row["payload"])
    return json.loads(row["headers"]).get("request_id") == rid or (isinstance(p, dict) and p.get("request_id") == rid)


def _waitpoint(log, rid):
    rows = log.rows("waitpoint.state." + rid)
    return json.loads(rows[-1]["payload"]) if rows else None


def _set_waitpoint(log, rid, status, by, value, reason, metadata, set_value):
    rec = _waitpoint(log, rid)
    if rec is None:
        raise RuntimeError(f"waitpoint.complete: unknown waitpoint '{rid}'")
    if rec["status"] == status:
        return
    fields = ["id", "status", "created_at", "completed_at", "cancelled_at", "completed_by", "cancelled_by",
              "value", "reason", "metadata"]
    new = {f: rec.get(f) for f in fields}
    new["status"] = status
    at = "completed_at" if status == "completed" else "cancelled_at"
    new[at] = None  # filled from the clock
    new["completed_by" if status == "completed" else "cancelled_by"] = by
    if set_value:
        new["value"] = value
    new["reason"] = reason
    if metadata is not None:
        new["metadata"] = metadata
    log.append("waitpoint.state." + rid, "waitpoint.state", new, {"waitpoint_id": rid}, clock_field=at)
    log.append("waitpoint.resumes", "waitpoint.resume",
               {"waitpoint_id": rid, "requested_at": None, "reason": "waitpoint_changed"}, {}, clock_field="requested_at")


def predict(before: dict, response: dict, actual: list, *, sort: bool = False) -> list:
    rid = response["request_id"]
    kind = _kind(rid)
    topic = TOPICS[kind]
    log = _Log(before, actual, sort)
    log.append(topic, "hitl.escalation_accepted" if kind == "escalation" else "hitl.response_received",
               dict(response), {"request_id": rid})
    wp = _waitpoint(log, rid)
    if wp is not None and wp["status"] != "open":
        return log.out
    if kind == "question":
        _set_waitpoint(log, rid, "completed", response.get("reviewer"), response.get("answer"),
                       response.get("reason"), response.get("metadata"), True)
    elif kind == "escalation":
        if response.get("accepted") is True:
            _set_waitpoint(log, rid, "completed", response.get("reviewer"),
                           {"accepted": True, "reviewer": response.get("reviewer"), "reason": response.get("reason"),
                            "responded_at": response.get("responded_at")}, response.get("reason"),
                           response.get("metadata"), True)
    else:
        env = next(json.loads(r["payload"]) for r in log.rows(topic) if r["kind"] == ASKED[kind] and _for(r, rid))
        p = env["payload"]
        q = p.get("n" if kind == "dual_control" else "quorum", p.get("approvers_required",
                  (p.get("approval_request") or {}).get("approvers_required", 1)))
        allowed = p.get("approvers" if kind == "dual_control" else "reviewers") or []
        counted, sigs, reason, at = [], [], None, None
        for r in log.rows(topic):
            if r["kind"] != "hitl.response_received" or not _for(r, rid):
                continue
            resp = json.loads(r["payload"])
            who = resp.get("reviewer")
            if who is not None and ((allowed and who not in allowed) or who in counted):
                continue
            if resp.get("approved") is True:
                if who is not None:
                    counted.append(who)
                    material = (f"harn-hitl-approval-v1\nrequest_id:{rid}\nreviewer:{who}\n"
                                f"signed_at:{resp['responded_at']}\napproved:true\nreason:{resp.get('reason') or ''}\n")
                    sigs.append({"reviewer": who, "signed_at": resp["responded_at"],
                                 "signature": "sha256:" + hashlib.sha256(material.encode()).hexdigest()})
                reason, at = resp.get("reason"), resp.get("responded_at")
                if len(counted) >= q:
                    record = {"approved": True, "reviewers": sorted(set(counted)), "approved_at": at,
                              "reason": reason, "signatures": sigs}
                    log.append(topic, f"hitl.{kind}_approved", {"request_id": rid, "record": record},
                               {"request_id": rid, "trace_id": env["trace_id"]})
                    _set_waitpoint(log, rid, "completed", response.get("reviewer"), record, reason,
                                   response.get("metadata"), True)
                    return log.out
                continue
            log.append(topic, f"hitl.{kind}_denied",
                       {"request_id": rid, "reviewer": resp.get("reviewer"), "reason": resp.get("reason")},
                       {"request_id": rid, "trace_id": env["trace_id"]})
            _set_waitpoint(log, rid, "cancelled", resp.get("reviewer"), None, resp.get("reason"),
                           resp.get("metadata"), False)
            return log.out
    return log.out


def pending(rows_by_topic: dict) -> set[str]:
    """Harn's `hitl_pending` (§M.1.5): request ids with no terminal event on their topic (or on the
    legacy hitl.responses topic)."""
    out = set()
    for kind, topic in TOPICS.items():
        rows = rows_by_topic.get(topic, [])
        for r in rows:
            if r["kind"] != ASKED[kind]:
                continue
            rid = json.loads(r["payload"])["request_id"]
            done = False
            for e in rows + rows_by_topic.get("hitl.responses", []):
                if not _for(e, rid):
                    continue
                p = json.loads(e["payload"])
                k = e["kind"]
                if k == "hitl.timeout" \
                        or (kind == "question" and k == "hitl.response_received") \
                        or (kind in ("approval", "dual_control")
                            and (k in (f"hitl.{kind}_approved", f"hitl.{kind}_denied", "hitl.dual_control_executed")
                                 or (k == "hitl.response_received" and p.get("approved") is False))) \
                        or (kind == "escalation" and (k == "hitl.escalation_accepted"
                                                      or (k == "hitl.response_received" and p.get("accepted") is True))):
                    done = True
            if not done:
                out.add(rid)
    return out
