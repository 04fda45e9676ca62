"""What Harn's `append_hitl_response` appends, as pure values (harn-formats §N.1, §M.1, §M.2, §H.2.3).

Facts from Harn's source (burin-labs/harn e45362cf, crates/harn-vm/src/stdlib/hitl.rs
`append_hitl_response` / `finalize_hitl_response` / `resolve_approval_state`, stdlib/waitpoint.rs
`complete_waitpoint_on` / `cancel_waitpoint_on` / `append_resume_request`, provenance/mod.rs
`prepare_event_for_append`). No I/O here: `harn_ls.actions.hitl.answer` reads the log and appends.

Key order. Harn serialises every payload through `serde_json::Value`; whether a build keeps insertion
order (`preserve_order`) or sorts keys is not settled (§H.2.3). `shape()` writes either way, and the
writer picks the order the log's own request envelope was written in, so the new rows look like the
rows the same `harn` build would have written. Headers are always sorted (a BTreeMap).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.hitl.requests import TOPIC_BY_KIND, harn_quorum, kind_of_id
from harn_ls.util.json_types import JsonArray, JsonObject, JsonValue

if TYPE_CHECKING:
    from harn_ls.formats.hitl.requests import HitlRequest

PROVENANCE_SCHEMA = "harn-eventlog-provenance-v1"
H_SCHEMA = "harn.provenance.schema"
H_PREV = "harn.provenance.prev_hash"
H_RECORD = "harn.provenance.record_hash"
RESUMES_TOPIC = "waitpoint.resumes"
REQUEST_KIND = {"question": "hitl.question_asked", "approval": "hitl.approval_requested",
                "dual_control": "hitl.dual_control_requested", "escalation": "hitl.escalation_issued"}
APPROVED_KIND = {"approval": "hitl.approval_approved", "dual_control": "hitl.dual_control_approved"}
DENIED_KIND = {"approval": "hitl.approval_denied", "dual_control": "hitl.dual_control_denied"}
MISSING = object()  # "field not set" (omitted), as opposed to JSON null


def response_kind(kind: str) -> str:
    """The response event's kind: `hitl.escalation_accepted` for escalations, even when not accepting."""
    return "hitl.escalation_accepted" if kind == "escalation" else "hitl.response_received"


def topic_for(request_id: str) -> str | None:
    kind = kind_of_id(request_id)
    return TOPIC_BY_KIND[kind] if kind else None


# ----------------------------------------------------------------------------------- key order
def shape(value: JsonValue, order: str) -> JsonValue:
    """`order == "sorted"`: every object's keys sorted (serde_json without preserve_order);
    `"source"`: as built (the order Harn's source inserts them)."""
    if order != "sorted":
        return value
    if isinstance(value, dict):
        return {k: shape(value[k], order) for k in sorted(value)}
    if isinstance(value, list):
        return [shape(v, order) for v in value]
    return value


def order_of(payload_bytes: bytes | str | None) -> str:
    """Which key order a stored object was written in: `sorted` when its top-level keys are sorted
    and not in the struct's order, else `source`. For a request envelope (request_id, kind, agent, …)
    the two differ from the first key on."""
    try:
        obj = orjson.loads(payload_bytes or b"")
    except (orjson.JSONDecodeError, TypeError):
        return "source"
    if isinstance(obj, dict) and len(obj) > 1:
        keys = list(obj)
        if keys == sorted(keys) and keys[0] != "request_id":
            return "sorted"
    return "source"


# ------------------------------------------------------------------------------------ provenance
def record_hash(topic: str, event_id: int, kind: str, payload: JsonValue, headers: JsonObject, occurred_at_ms: int,
                order: str) -> str:
    """`compute_event_record_hash`: sha256 of the compact JSON of {topic, event_id, kind, payload,
    headers without record_hash, occurred_at_ms}; the wrapper's keys in `order`."""
    hdrs = {k: headers[k] for k in sorted(headers) if k != H_RECORD}
    w = {"topic": topic, "event_id": event_id, "kind": kind, "payload": payload, "headers": hdrs,
         "occurred_at_ms": occurred_at_ms}
    if order == "sorted":
        w = {k: w[k] for k in sorted(w)}
    return "sha256:" + hashlib.sha256(serde_compact(w).encode("utf-8")).hexdigest()


def with_provenance(topic: str, event_id: int, kind: str, payload: JsonValue, headers: JsonObject, occurred_at_ms: int,
                    prev_hash: str | None, order: str) -> JsonObject:
    """`prepare_event_for_append`: schema, prev_hash (absent on a topic's first event), record_hash;
    returned sorted (Harn's headers are a BTreeMap)."""
    h = {k: v for k, v in headers.items() if k not in (H_PREV, H_RECORD)}
    h[H_SCHEMA] = PROVENANCE_SCHEMA
    if prev_hash is not None:
        h[H_PREV] = prev_hash
    h[H_RECORD] = record_hash(topic, event_id, kind, payload, h, occurred_at_ms, order)
    return {k: h[k] for k in sorted(h)}


def stored_hash(topic: str, event_id: int, kind: str, payload: JsonValue, headers: JsonObject, occurred_at_ms: int,
                order: str) -> str:
    """`event_record_hash_from_headers`: the stored header when present and not blank, else computed."""
    h = headers.get(H_RECORD)
    if isinstance(h, str) and h.strip():
        return h
    return record_hash(topic, event_id, kind, payload, headers, occurred_at_ms, order)


@dataclass
class ChainCheck:
    """Whether a topic's provenance chain verifies, in which hash wrapper order, and what broke;
    `last_id` / `last_hash`: where it ends, to go on from there (`verify_chain(..., after=...)`)."""

    ok: bool
    order: str = "source"  # the wrapper order the topic's hashes verify with
    message: str = ""
    last_id: int = 0
    last_hash: str | None = None


def verify_chain(topic: str, rows: list[tuple[int, str, JsonValue, JsonObject, int]],
                 after: ChainCheck | None = None) -> ChainCheck:
    """Check a topic's provenance chain: every event's record_hash matches its content (in one of the
    two wrapper orders, the same for the whole topic) and its prev_hash is the previous event's hash.
    The first row is the anchor (after a compaction its prev_hash names a deleted event), unless
    `after` — an earlier check of the rows before these — says what the first row must link to.
    `rows`: (event_id, kind, payload, headers, occurred_at_ms) in id order."""
    orders = ["source", "sorted"] if after is None or after.last_hash is None else [after.order]
    prev: str | None = after.last_hash if after is not None else None
    prev_id = after.last_id if after is not None else 0
    for eid, kind, payload, headers, occurred in rows:
        if not isinstance(headers, dict) or headers.get(H_SCHEMA) != PROVENANCE_SCHEMA:
            return ChainCheck(False, message=f"{topic} event {eid} has no provenance headers")
        rec = headers.get(H_RECORD)
        if not isinstance(rec, str):
            return ChainCheck(False, message=f"{topic} event {eid} has no record_hash")
        orders = [o for o in orders if record_hash(topic, eid, kind, payload, headers, occurred, o) == rec]
        if not orders:
            return ChainCheck(False, message=f"{topic} event {eid}: record_hash does not match its content")
        if prev is not None and headers.get(H_PREV) != prev:
            return ChainCheck(False, message=f"{topic} event {eid}: prev_hash is not event "
                                             f"{prev_id}'s record_hash (the chain is broken)")
        prev, prev_id = rec, eid
    return ChainCheck(True, orders[0] if orders else "source", last_id=prev_id, last_hash=prev)


# ------------------------------------------------------------------------------------- payloads
def response_payload(request_id: str, *, answer: JsonValue = MISSING, approved: bool | None = None,
                     accepted: bool | None = None, reviewer: str | None = None, reason: str | None = None,
                     responded_at: str, signature: str | None = None) -> JsonObject:
    """`HitlHostResponse` with unset fields omitted, in struct order."""
    p: JsonObject = {"request_id": request_id}
    if answer is not MISSING and answer is not None:  # Option<JsonValue>: a JSON null is None, omitted
        p["answer"] = answer
    for key, value in (("approved", approved), ("accepted", accepted), ("reviewer", reviewer), ("reason", reason)):
        if value is not None:
            p[key] = value
    p["responded_at"] = responded_at
    if signature is not None:
        p["signature"] = signature
    return p


def approval_signature(request_id: str, reviewer: str, signed_at: str, reason: str | None) -> str:
    """`approval_receipt_signature` (a checksum Harn computes when the host gave none)."""
    material = (f"harn-hitl-approval-v1\nrequest_id:{request_id}\nreviewer:{reviewer}\n"
                f"signed_at:{signed_at}\napproved:true\nreason:{reason or ''}\n")
    return "sha256:" + hashlib.sha256(material.encode("utf-8")).hexdigest()


def _first_present(payload: JsonObject, key: str, nested: str) -> tuple[bool, JsonValue]:
    """Rust's `payload.get(key).or_else(..)`: the first key that is *present* (even as null) wins."""
    if key in payload:
        return True, payload[key]
    ar = payload.get("approval_request")
    if isinstance(ar, dict) and nested in ar:
        return True, ar[nested]
    return False, None


def reviewers_of(kind: str, payload: JsonObject) -> list[str]:
    """`approval_reviewers_from_request`: `approvers` (dual control) / `reviewers`, else
    `approval_request.reviewers`; the first present key decides; non-strings dropped."""
    _, v = _first_present(payload, "approvers" if kind == "dual_control" else "reviewers", "reviewers")
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def response_parses(r: JsonValue) -> bool:
    """Whether Harn's `serde_json::from_value::<HitlHostResponse>` accepts a stored response payload
    (Harn's fold fails on the first one that does not)."""
    if not isinstance(r, dict) or not isinstance(r.get("request_id"), str):
        return False
    for key in ("approved", "accepted"):
        if r.get(key) is not None and not isinstance(r.get(key), bool):
            return False
    return all(r.get(k) is None or isinstance(r.get(k), str) for k in ("reviewer", "reason", "responded_at", "signature"))


@dataclass
class Decision:
    """The quorum fold's outcome: `pending`, `approved` (with `record`), `denied` (with `response`), or
    `error` (a stored response Harn cannot read; `response` is it)."""

    outcome: str
    record: JsonObject | None = None
    response: JsonObject | None = None
    approvals: list[str] = field(default_factory=list)  # counted approving reviewers, in order
    ignored: list[str] = field(default_factory=list)  # why responses were not counted (shown to the user)
    last_approved_reason: str | None = None
    quorum: int = 1


def fold_approval(kind: str, request_id: str, payload: JsonObject, responses: list[JsonObject], now: str) -> Decision:
    """`resolve_approval_state`: fold every `hitl.response_received` payload for the request, in log
    order. A reviewer outside a non-empty list is ignored, a repeat of a counted reviewer is ignored;
    `approved: true` counts (when it names a reviewer) and may reach the quorum; anything else that is
    counted (`approved` false or absent) denies."""
    quorum = harn_quorum(kind, payload)
    allowed = set(reviewers_of(kind, payload))
    reviewers: set[str] = set()
    approvals: list[str] = []
    signatures: list[JsonObject] = []
    reason: str | None = None
    approved_at: str | None = None
    ignored: list[str] = []
    for r in responses:
        if not response_parses(r):
            return Decision("error", response=r, approvals=approvals, ignored=ignored, quorum=quorum)
        reviewer = r.get("reviewer") if isinstance(r.get("reviewer"), str) else None
        if reviewer is not None:
            if allowed and reviewer not in allowed:
                ignored.append(f"{reviewer!r} is not a listed reviewer")
                continue
            if reviewer in reviewers:
                ignored.append(f"{reviewer!r} already approved")
                continue
        rr = r.get("reason") if isinstance(r.get("reason"), str) else None
        ra = r.get("responded_at") if isinstance(r.get("responded_at"), str) else None
        if r.get("approved") is True:
            if reviewer is not None:
                signed_at = ra if ra is not None else now
                reviewers.add(reviewer)
                approvals.append(reviewer)
                sig = r.get("signature") if isinstance(r.get("signature"), str) else None
                signatures.append({"reviewer": reviewer, "signed_at": signed_at,
                                   "signature": sig or approval_signature(request_id, reviewer, signed_at, rr)})
            reason, approved_at = rr, ra
            if len(reviewers) >= quorum:
                record = {"approved": True, "reviewers": sorted(reviewers),
                          "approved_at": approved_at if approved_at is not None else now,
                          "reason": reason, "signatures": signatures}
                return Decision("approved", record=record, approvals=approvals, ignored=ignored,
                                last_approved_reason=reason, quorum=quorum)
            continue
        return Decision("denied", response=r, approvals=approvals, ignored=ignored, quorum=quorum)
    return Decision("pending", approvals=approvals, ignored=ignored, last_approved_reason=reason, quorum=quorum)


def approved_payload(request_id: str, record: JsonObject) -> JsonObject:
    return {"request_id": request_id, "record": record}


def denied_payload(request_id: str, response: JsonObject) -> JsonObject:
    """`{request_id, reviewer, reason}` (json! keeps nulls)."""
    return {"request_id": request_id, "reviewer": response.get("reviewer"), "reason": response.get("reason")}


def named_event_headers(request_id: str, trace_id: str) -> JsonObject:
    return {"request_id": request_id, "trace_id": trace_id}


# ------------------------------------------------------------------------------------ waitpoints
_WP_FIELDS = ("id", "status", "created_at", "completed_at", "cancelled_at", "completed_by", "cancelled_by",
              "value", "reason", "metadata")


def waitpoint_record(stored: JsonObject) -> JsonObject | None:
    """A stored `waitpoint.state` payload as Harn deserialises it (`WaitpointRecord`, `#[serde(default)]`):
    the ten known fields, defaults for missing ones; None when it does not deserialise."""
    if not isinstance(stored, dict):
        return None
    rec: JsonObject = {}
    for key in _WP_FIELDS:
        v = stored.get(key)
        if key in ("id", "created_at"):
            if key not in stored:
                v = ""  # missing: the default; a present null does not deserialise
            if not isinstance(v, str):
                return None
        elif key == "status":
            v = "open" if key not in stored else v
            if v not in ("open", "completed", "cancelled"):
                return None
        elif key in ("completed_at", "cancelled_at", "completed_by", "cancelled_by", "reason"):
            if v is not None and not isinstance(v, str):
                return None
        rec[key] = v
    return rec


def completed(record: JsonObject, *, value: JsonValue, actor: str | None, reason: str | None, metadata: JsonValue,
              now: str) -> JsonObject:
    """`complete_waitpoint_on`'s new record (the caller checked it is open)."""
    r = dict(record)
    r.update(status="completed", completed_at=now, completed_by=actor, value=value, reason=reason)
    if metadata is not None:
        r["metadata"] = metadata
    return r


def cancelled(record: JsonObject, *, actor: str | None, reason: str | None, metadata: JsonValue, now: str) -> JsonObject:
    """`cancel_waitpoint_on`'s new record (the caller checked it is open)."""
    r = dict(record)
    r.update(status="cancelled", cancelled_at=now, cancelled_by=actor, reason=reason)
    if metadata is not None:
        r["metadata"] = metadata
    return r


def resume_payload(waitpoint_id: str, now: str) -> JsonObject:
    """`append_resume_request`: what an outside responder appends on `waitpoint.resumes`."""
    return {"waitpoint_id": waitpoint_id, "requested_at": now, "reason": "waitpoint_changed"}


def escalation_value(response: JsonObject) -> JsonObject:
    return {"accepted": True, "reviewer": response.get("reviewer"), "reason": response.get("reason"),
            "responded_at": response.get("responded_at")}


def needs_finish(req: HitlRequest) -> bool:
    """A response is in the log but its finalize never ran (a crash, or Harn failing after the append,
    §P.3): the waitpoint is still open although the responses already decide the request. `req` is a
    `formats.hitl.HitlRequest`. The waiting run keeps waiting until the finalize rows are appended."""
    if req.waitpoint_status != "open" or not req.responses or req.state == "expired":
        return False
    if req.kind == "question":
        return True
    if req.kind == "escalation":
        return any(r.get("accepted") is True for r in req.responses)
    if req.resolved_by in (APPROVED_KIND.get(req.kind), DENIED_KIND.get(req.kind)):
        return True  # the decision is logged, the waitpoint is not
    return fold_approval(req.kind, req.request_id, req.payload, req.responses, "").outcome in ("approved", "denied")


def choices(schema: JsonValue) -> JsonArray:
    """The allowed answers a question's JSON Schema names (`enum`, or `oneOf`/`anyOf` of `const`), capped."""
    if not isinstance(schema, dict):
        return []
    if isinstance(enum := schema.get("enum"), list):
        return enum[:200]
    for key in ("oneOf", "anyOf"):
        alts = schema.get(key)
        if isinstance(alts, list) and alts and all(isinstance(a, dict) and "const" in a for a in alts):
            return [a["const"] for a in alts][:200]
    return []


def coerce_answer(schema: JsonValue, text: str) -> JsonValue:
    """A typed answer from what a person typed: text for a string (or untyped) schema, else JSON
    (a number, true/false, an object); a choice list's value as it appears there."""
    for c in choices(schema):
        if c == text or (not isinstance(c, str) and orjson.dumps(c).decode() == text.strip()):
            return c
    t = schema.get("type") if isinstance(schema, dict) else None
    if t in (None, "string") or (isinstance(t, list) and "string" in t):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ValueError(f"the question expects {t}; {text[:80]!r} is not JSON") from None


def actions_for(req: HitlRequest) -> list[str]:
    """The answers that apply to a request now (what the editor and `hitl list` offer)."""
    if needs_finish(req):
        return ["finish"]
    if not req.is_waiting:
        return []
    return {"approval": ["approve", "deny"], "dual_control": ["approve", "deny"], "question": ["answer"],
            "escalation": ["accept"] if req.state == "rejected-but-hidden" else ["accept", "decline"]}[req.kind]


def choice_labels(req: HitlRequest) -> list[str]:
    """A question's choices as one-line labels for a pick list (index = `choice` of answerHitl)."""
    if req.kind != "question":
        return []
    return [c if isinstance(c, str) else serde_compact(c) for c in choices(req.payload.get("schema"))][:200]


def clean_reviewer(reviewer: str | None) -> str | None:
    """The reviewer name an answer records (trimmed), or None when it cannot be one: empty, over 200
    characters, or holding a control character (DEL included). The one rule of both answer paths."""
    r = (reviewer or "").strip()
    if not r or len(r) > 200 or any(ord(c) < 32 or ord(c) == 127 for c in r):
        return None
    return r
