"""Answer a HITL request by appending what Harn's `append_hitl_response` appends (harn-formats §N.1, §N.5).

Why a direct append and not Harn: Harn has no command that approves or answers (`harn orchestrator
resume` records a denial or a null answer, §N.2/§P.2), and `harn.hitl.respond` exists only on an
ACP/MCP host that talks JSON-RPC over the stdio of the editor that started it (§N.3) — nothing on
disk says such a host is running or how to reach it, so harn-ls cannot hand the response to one.
It therefore appends to the very SQLite log the waiting process polls (every 100 ms for `harn run`,
250 ms for the orchestrator's sweeper), with the rows and transactions Harn's function makes:

1. the response event (`hitl.response_received`, or `hitl.escalation_accepted` for escalations) on
   the request's topic, headers `{request_id}` + provenance — one `BEGIN IMMEDIATE` transaction that
   also re-checks, under the write lock, that the request is still open;
2. finalize, each append its own transaction: for approvals the quorum fold over all responses and
   `hitl.*_approved` / `hitl.*_denied`; the waitpoint record completed or cancelled on
   `waitpoint.state.<id>`; `waitpoint.resume` on `waitpoint.resumes`.

Refused: the file backend (two writers duplicate ids, §H.2.6), a log whose provenance chain on the
request's topic does not verify, a request no longer open, a reviewer outside the request's list.
A crash between 1 and 2 leaves the response committed but unfinalized, exactly as when Harn fails
there (§P.3); `finish()` runs step 2 alone.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from harn_ls.actions import ActionFailed, ensure_inside
from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.harn_time import now_ns, rfc3339_time
from harn_ls.formats.hitl import responses as H
from harn_ls.formats.hitl.requests import (
    RESPONSES_TOPIC,
    TOPIC_BY_KIND,
    WAITPOINT_PREFIX,
    harn_quorum,
    is_terminal,
    kind_of_id,
    sanitize_topic_component,
)
from harn_ls.formats.sqlite_safe import SqlRow, limit_schema
from harn_ls.util.message_text import defuse, quote
from harn_ls.util.safe_read import reader_root

BUSY_TIMEOUT_MS = 5000  # Harn's
MAX_ANSWER_CHARS = 65_536
MAX_TOPIC_ROWS = 200_000  # Harn folds the whole topic; beyond this we refuse rather than read without a cap
PATH_NAME = "direct append to the event log (harn.hitl.respond host not reachable: §N.3)"
ACTIONS = ("approve", "deny", "answer", "accept", "decline")
ACTION_KINDS = {"approve": ("approval", "dual_control"), "deny": ("approval", "dual_control"),
                "answer": ("question",), "accept": ("escalation",), "decline": ("escalation",)}


class AnswerRefused(ActionFailed):
    """Refused before anything was written (or, for `finish`, nothing left to do)."""


@dataclass
class Written:
    """One event an answer appended."""

    topic: str
    event_id: int
    kind: str


@dataclass
class AnswerResult:
    """What an answer did: the outcome, the path used (a direct append) and the events appended."""

    request_id: str
    action: str
    reviewer: str | None
    log_path: str
    path_used: str = PATH_NAME
    outcome: str = ""  # answered / approved / denied / pending (k of n) / declined
    written: list[Written] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict:
        return {"request_id": self.request_id, "action": self.action, "reviewer": self.reviewer,
                "log": self.log_path, "path": self.path_used, "outcome": self.outcome,
                "written": [asdict(w) for w in self.written], "note": self.note}


# ------------------------------------------------------------------------------------- the log
def _connect(path: str) -> sqlite3.Connection:
    if not os.path.isfile(path):
        raise AnswerRefused(f"no event log at {quote(path)}")
    # No journal_mode change, no VACUUM: Harn owns the file's settings (§H.2.7 rule 7); it is WAL already.
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        limit_schema(conn)  # the project's file: its schema runs nothing but innocuous SQL, no huge value
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous = NORMAL")  # per connection, as Harn's own (§H.2.4); the file is not changed
        try:
            marker = conn.execute("SELECT version FROM _harn_sqlite_schema_versions WHERE name = 'event_log'").fetchall()
        except sqlite3.OperationalError:
            marker = []
        if marker and isinstance(marker[0][0], int) and marker[0][0] > 1:
            raise AnswerRefused(f"event log schema version {quote(marker[0][0])} is newer than harn-ls knows; not writing")
        schema = conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'trigger')").fetchall()
        tables = {name for kind, name in schema if kind == "table"}
        if not {"events", "topic_heads"} <= tables:
            raise AnswerRefused(f"{quote(path)} is not a Harn event log (no events/topic_heads tables)")
        if triggers := [name for kind, name in schema if kind == "trigger"]:
            # Harn's schema has none: a trigger would run the project's SQL on our insert
            raise AnswerRefused(f"{quote(path)} has triggers ({quote(', '.join(map(str, triggers)))}), which a Harn "
                                "event log never has; not writing")
    except BaseException:
        conn.close()
        raise
    return conn


@dataclass
class Row:
    """One stored event: its raw payload bytes (for the key order) and the parsed values."""

    event_id: int
    kind: str
    raw: bytes
    payload: Any
    headers: dict
    occurred_at_ms: int


_SELECT = "SELECT event_id, kind, payload, headers, occurred_at_ms FROM events WHERE topic = ?"


def _rows(conn, topic: str, *, tail: int | None = None, after_id: int = 0, rid: str | None = None) -> list[Row]:
    """A topic's events in id order: all, the last `tail`, those after `after_id`, or (with `rid`)
    only those whose payload or headers contain the request id as serde_json writes it — a cheap
    pre-filter; `_matches` then decides exactly, as Harn's `event_matches_request` does."""
    if tail is not None:
        return _parsed(topic, conn.execute(_SELECT + " ORDER BY event_id DESC LIMIT ?", (topic, tail)).fetchall()[::-1])
    sql, args = _SELECT + " AND event_id > ?", [topic, after_id]
    if rid is not None:
        needle = serde_compact(rid)[1:-1]
        sql += " AND (instr(payload, ?) > 0 OR instr(headers, ?) > 0)"
        args += [needle.encode("utf-8"), needle]
    return _parsed(topic, conn.execute(sql + " ORDER BY event_id LIMIT ?", (*args, MAX_TOPIC_ROWS + 1)).fetchall(), 0)


def _parsed(topic: str, got: list[SqlRow], held: int | None = None) -> list[Row]:
    """Stored rows (event_id, kind, payload, headers, occurred_at_ms) as Rows. `held`: how many of the topic's
    events the caller holds already; with them, more than MAX_TOPIC_ROWS is refused."""
    if held is not None and held + len(got) > MAX_TOPIC_ROWS:
        raise AnswerRefused(f"topic {quote(topic)} has more than {MAX_TOPIC_ROWS} events; not folding it")
    out = []
    for eid, kind, payload, headers, occurred in got:
        raw = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
        try:
            p = orjson.loads(raw)
            h = orjson.loads(headers)
        except (orjson.JSONDecodeError, TypeError):
            raise AnswerRefused(
                f"{quote(topic)} event {quote(eid)} is not valid JSON; Harn could not read this topic either") from None
        out.append(Row(eid, kind, raw, p, h if isinstance(h, dict) else {}, occurred))
    return out


# one statement: the topic's first event id (a compaction since the last read moved it) beside every event
# after the last one held (none: one row of NULLs); both are index searches
_AFTER_HELD = ("SELECT m.first, e.event_id, e.kind, e.payload, e.headers, e.occurred_at_ms "
               "FROM (SELECT MIN(event_id) AS first FROM events WHERE topic = ?) AS m "
               "LEFT JOIN events AS e ON e.topic = ? AND e.event_id > ? ORDER BY e.event_id LIMIT ?")


class _Topics:
    """The events of the request's topic and of its waitpoint's, each read from the log once per answer:
    a later read (under the write lock, after an append) fetches only the events after the last one held.
    A topic whose first event is no longer the one held (compacted meanwhile) is read again whole."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.held: dict[str, list[Row]] = {}

    def rows(self, topic: str) -> list[Row]:
        have = self.held.get(topic)
        if have:
            got = self.conn.execute(_AFTER_HELD, (topic, topic, have[-1].event_id, MAX_TOPIC_ROWS + 1 - len(have)))
            first, *new = got.fetchall()
            if first[0] == have[0].event_id:
                have += _parsed(topic, [r[1:] for r in [first, *new] if r[1] is not None], len(have))
                return have
        have = self.held[topic] = _rows(self.conn, topic)
        return have


def _check_chain(topic: str, rows: list[Row], after: H.ChainCheck | None = None) -> H.ChainCheck:
    chk = H.verify_chain(topic, [(r.event_id, r.kind, r.payload, r.headers, r.occurred_at_ms) for r in rows], after)
    if not chk.ok:
        raise AnswerRefused(f"the provenance chain does not verify: {quote(chk.message)}; not appending to a log "
                            "whose history cannot be trusted")
    return chk


def _chains(topics: _Topics, rid: str) -> dict[str, H.ChainCheck]:
    """Verify, before taking the write lock, the chains of the topics an answer appends to: the
    request's topic and its waitpoint's (whole), waitpoint.resumes (its last 200 events). Reading
    needs no lock in WAL mode, so Harn's writers are not held up by a long topic."""
    out = {t: _check_chain(t, topics.rows(t)) for t in (H.topic_for(rid), _waitpoint_topic(rid)) if t is not None}
    out[H.RESUMES_TOPIC] = _check_chain(H.RESUMES_TOPIC, _rows(topics.conn, H.RESUMES_TOPIC, tail=200))
    return out


def _chains_still_hold(topics: _Topics, chains: dict[str, H.ChainCheck]) -> None:
    """Under the write lock: the events appended since `_chains` read each topic link on."""
    for topic, chk in chains.items():
        new = ([r for r in topics.rows(topic) if r.event_id > chk.last_id] if topic != H.RESUMES_TOPIC
               else _rows(topics.conn, topic, after_id=chk.last_id))
        chains[topic] = _check_chain(topic, new, chk)


def _txn(conn, fn: Callable[[], Any]) -> Any:
    """Run `fn` inside one `BEGIN IMMEDIATE` transaction (Harn's append transaction, §H.2.4): it may
    read, refuse (raise: nothing is written) or insert; committed when it returns."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        out = fn()
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return out


def _insert(conn, topic: str, kind: str, payload: Any, headers: dict, order: str, wrapper: str) -> int:
    """The statements of one Harn append (inside `_txn`): bump topic_heads, chain to the previous
    event's hash, insert. `order`: payload key order; `wrapper`: the hash wrapper's key order."""
    occurred = time.time_ns() // 1_000_000  # LogEvent::new: when the event value is built
    conn.execute("INSERT OR IGNORE INTO topic_heads(topic, last_id) VALUES (?, 0)", (topic,))
    conn.execute("UPDATE topic_heads SET last_id = last_id + 1 WHERE topic = ?", (topic,))
    (event_id,) = conn.execute("SELECT last_id FROM topic_heads WHERE topic = ?", (topic,)).fetchone()
    prev = conn.execute(_SELECT + " AND event_id < ? ORDER BY event_id DESC LIMIT 1", (topic, event_id)).fetchall()
    prev_hash = None
    if prev:
        peid, pkind, ppayload, pheaders, pocc = prev[0]
        praw = ppayload.encode("utf-8") if isinstance(ppayload, str) else bytes(ppayload)
        prev_hash = H.stored_hash(topic, peid, pkind, orjson.loads(praw), orjson.loads(pheaders), pocc, wrapper)
    body = H.shape(payload, order)
    hdrs = H.with_provenance(topic, event_id, kind, body, headers, occurred, prev_hash, wrapper)
    conn.execute("INSERT INTO events(topic, event_id, kind, payload, headers, occurred_at_ms) VALUES (?,?,?,?,?,?)",
                 (topic, event_id, kind, serde_compact(body).encode("utf-8"), serde_compact(hdrs), occurred))
    return event_id


# --------------------------------------------------------------------------- reading the request
@dataclass
class Snapshot:
    """The request as the log holds it right now (read under the write lock); `rows`: its events
    (each one `_matches` the request)."""

    request_id: str
    kind: str
    topic: str
    rows: list[Row]
    envelope: dict | None
    envelope_order: str
    wrapper_order: str
    responses: list[dict]
    terminal_kind: str | None  # Harn's hitl_pending: the first terminal event, if any
    decided_kinds: list[str]  # *_approved / *_denied events for the request
    waitpoint: dict | None  # the latest record that deserialises (WaitpointRecord)


def _matches(row: Row, rid: str) -> bool:
    """`event_matches_request`: header request_id, else payload request_id."""
    return row.headers.get("request_id") == rid or (isinstance(row.payload, dict) and row.payload.get("request_id") == rid)


def _snapshot(topics: _Topics, rid: str, chains: dict[str, H.ChainCheck] | None = None) -> Snapshot:
    """The request's events, its legacy-topic events (pre-filtered by id) and its waitpoint."""
    kind = kind_of_id(rid)
    if kind is None:
        raise AnswerRefused(f"unknown HITL request id {quote(rid[:80])}")
    topic = TOPIC_BY_KIND[kind]
    mine = [r for r in topics.rows(topic) if _matches(r, rid)]
    env_row = next((r for r in mine if r.kind == H.REQUEST_KIND[kind]
                    and isinstance(r.payload, dict) and isinstance(r.payload.get("request_id"), str)
                    and isinstance(r.payload.get("trace_id"), str)), None)
    legacy = [r for r in _rows(topics.conn, RESPONSES_TOPIC, rid=rid) if _matches(r, rid)]
    responses = [r.payload for r in mine if r.kind == "hitl.response_received"]
    term = next((r.kind for r in mine + legacy if is_terminal(kind, r)), None)
    decided = [r.kind for r in mine if r.kind in (H.APPROVED_KIND.get(kind), H.DENIED_KIND.get(kind))]
    wrapper = chains[topic].order if chains and topic in chains else "source"
    env_order = H.order_of(env_row.raw) if env_row is not None else wrapper
    return Snapshot(rid, kind, topic, mine, env_row.payload if env_row else None, env_order, wrapper,
                    responses, term, decided, _waitpoint(topics, rid))


def _waitpoint_topic(rid: str) -> str:
    return WAITPOINT_PREFIX + sanitize_topic_component(rid)


def _waitpoint(topics: _Topics, rid: str) -> dict | None:
    """`read_waitpoint_record`: the last record on `waitpoint.state.<id>` that deserialises."""
    wp = None
    for r in topics.rows(_waitpoint_topic(rid)):
        rec = H.waitpoint_record(r.payload)
        if rec is not None:
            wp = rec
    return wp


def _waitpoint_state(snap: Snapshot) -> str:
    return snap.waitpoint["status"] if snap.waitpoint else "missing"


# ------------------------------------------------------------------------------------ refusals
def _refuse_unless_open(snap: Snapshot, action: str, reviewer: str | None) -> None:
    """Under the write lock: the request still takes this response, or AnswerRefused says why."""
    rid, kind = snap.request_id, snap.kind
    if kind not in ACTION_KINDS[action]:
        raise AnswerRefused(f"{quote(action)} does not apply to a {quote(kind.replace('_', ' '))} request")
    if snap.envelope is None:
        raise AnswerRefused(f"request {quote(rid)} is not in this log (no {quote(H.REQUEST_KIND[kind])} event); answering here "
                            "would leave an orphan response")
    wp = _waitpoint_state(snap)
    if wp == "missing":
        raise AnswerRefused(f"request {quote(rid)} has no waitpoint in this log: nothing here waits for the answer "
                            "(Harn would fail with `unknown waitpoint` after appending)")
    if wp != "open":
        raise AnswerRefused(f"request {quote(rid)} is no longer pending: its waitpoint is {quote(wp)}")
    if snap.terminal_kind == "hitl.timeout":
        raise AnswerRefused(f"request {quote(rid)} is no longer pending: it expired (hitl.timeout)")
    if snap.decided_kinds:
        raise AnswerRefused(f"request {quote(rid)} is no longer pending: {quote(snap.decided_kinds[0])} is in the log")
    if kind == "question" and snap.terminal_kind:
        raise AnswerRefused(f"question {quote(rid)} was already answered ({quote(snap.terminal_kind)}); its waitpoint is still "
                            "open — finish it instead")
    if kind == "escalation":
        prior = [r for r in snap.rows if r.kind == "hitl.escalation_accepted"]
        if any(isinstance(r.payload, dict) and r.payload.get("accepted") is True for r in prior):
            raise AnswerRefused(f"escalation {quote(rid)} was already accepted; finish it instead")
        if action == "decline" and prior:
            raise AnswerRefused(f"escalation {quote(rid)} was already declined")
        return
    if kind in ("approval", "dual_control"):
        payload = p if isinstance(p := snap.envelope.get("payload"), dict) else {}
        allowed = H.reviewers_of(kind, payload)
        if allowed and reviewer not in allowed:
            raise AnswerRefused(f"reviewer {quote(reviewer)} is not allowed: this request lists "
                                f"{', '.join(quote(a) for a in allowed)} (Harn would ignore the response)")
        d = H.fold_approval(kind, rid, payload, snap.responses, rfc3339_time(now_ns()))
        if d.outcome == "error":
            raise AnswerRefused(f"a stored response to {quote(rid)} is not a HitlHostResponse; Harn's fold fails on it")
        if d.outcome == "approved":
            raise AnswerRefused(f"request {quote(rid)} is already approved by {quote(', '.join(d.approvals))} "
                                "(not yet finalized — finish it instead)")
        if d.outcome == "denied":
            by = d.response.get("reviewer") if d.response else None
            by_whom = f" by {quote(by)}" if by else ""
            raise AnswerRefused(f"request {quote(rid)} is already denied{by_whom} "
                                "(not yet finalized — finish it instead)")
        if reviewer in d.approvals:
            raise AnswerRefused(f"{quote(reviewer)} already approved {quote(rid)} ({len(d.approvals)} of "
                                f"{harn_quorum(kind, payload):d}); Harn ignores a repeat")


def check_target(project_root: str, backend: str, log_path: str, state_dir: str) -> str:
    """The log must be SQLite, and inside the project (or inside the state dir the user's own
    HARN_STATE_DIR named) once symlinks are resolved. Returns the real path."""
    if backend != "sqlite":
        raise AnswerRefused("this request lives in a file-backend event log: two writers on a file log can write "
                            "the same event id twice (harn-formats §H.2.6); answer it from the host running the agent")
    return ensure_inside(reader_root(os.path.abspath(state_dir), os.path.abspath(project_root)), log_path)


# -------------------------------------------------------------------------------------- answering
def answer(log_path: str, request_id: str, action: str, *, reviewer: str | None, reason: str | None = None,
           answer_value: Any = H.MISSING, after_response: Callable[[], None] | None = None) -> AnswerResult:
    """Append the response (one transaction that first re-checks the request is open), then finalize.
    `after_response` is a test hook run between the two (a crash there leaves an orphan response)."""
    if action not in ACTIONS:
        raise AnswerRefused(f"unknown action {quote(action)}; one of {quote(', '.join(ACTIONS))}")
    reviewer = H.clean_reviewer(reviewer)
    if reviewer is None:
        raise AnswerRefused("set harnState.hitl.reviewer (or --reviewer) to your name: the reviewer Harn records")
    reason = (reason or "").strip()[:4000] or None
    if action == "answer" and answer_value is H.MISSING:
        raise AnswerRefused("answer needs a value")
    kind = kind_of_id(request_id)
    if kind is None:
        raise AnswerRefused(f"unknown HITL request id {quote(str(request_id)[:80])}")
    topic = TOPIC_BY_KIND[kind]
    conn = _connect(log_path)
    try:
        response = H.response_payload(request_id, answer=answer_value, reviewer=reviewer, reason=reason,
                                      responded_at=rfc3339_time(now_ns()),
                                      approved={"approve": True, "deny": False}.get(action),
                                      accepted={"accept": True, "decline": False}.get(action))
        res = AnswerResult(request_id, action, reviewer, log_path)

        topics = _Topics(conn)
        chains = _chains(topics, request_id)  # the long read, outside the write lock

        def respond() -> tuple[Snapshot, int]:
            _chains_still_hold(topics, chains)
            snap = _snapshot(topics, request_id, chains)
            _refuse_unless_open(snap, action, reviewer)
            eid = _insert(conn, topic, H.response_kind(kind), response, {"request_id": request_id},
                          snap.envelope_order, snap.wrapper_order)
            return snap, eid

        snap, eid = _txn(conn, respond)
        res.written.append(Written(topic, eid, H.response_kind(kind)))
        if after_response is not None:
            after_response()
        _finalize(topics, request_id, response, res, snap.envelope_order, snap.wrapper_order)
        return res
    finally:
        conn.close()


def finish(log_path: str, request_id: str) -> AnswerResult:
    """Finalize a request whose response is in the log but whose finalize never ran (a crash, or Harn
    failing after the append, §P.3): what Harn's next `append_hitl_response` for it would do."""
    conn = _connect(log_path)
    try:
        topics = _Topics(conn)
        chains = _chains(topics, request_id)

        def read() -> Snapshot:
            _chains_still_hold(topics, chains)
            return _snapshot(topics, request_id, chains)

        snap = _txn(conn, read)
        mine = [r for r in snap.rows if r.kind == H.response_kind(snap.kind)]
        if not mine:
            raise AnswerRefused(f"request {quote(request_id)} has no response to finish")
        if _waitpoint_state(snap) != "open":
            raise AnswerRefused(
                f"request {quote(request_id)} is already finished: its waitpoint is {quote(_waitpoint_state(snap))}")
        last = mine[-1].payload if isinstance(mine[-1].payload, dict) else {}
        res = AnswerResult(request_id, "finish", last.get("reviewer") if isinstance(last.get("reviewer"), str) else None,
                           log_path)
        if snap.kind == "escalation":  # the finalize of the response that accepted, if any
            last = next((r.payload for r in reversed(mine) if isinstance(r.payload, dict)
                         and r.payload.get("accepted") is True), last)
        _finalize(topics, request_id, last, res, snap.envelope_order, snap.wrapper_order)
        if not res.written:
            res.note = res.note or "nothing to finish: the responses so far decide nothing"
        return res
    finally:
        conn.close()


def _finalize(topics: _Topics, rid: str, response: dict, res: AnswerResult, order: str, wrapper: str) -> None:
    """`finalize_hitl_response`, each append its own transaction whose precondition is re-read under
    the write lock (so two responders finishing at once do not both append the same step). One
    difference, on purpose: a `*_approved`/`*_denied` already in the log (a finalize that stopped
    before the waitpoint) is not appended a second time, where Harn's next finalize would repeat it."""
    kind = kind_of_id(rid)
    wp_topic = _waitpoint_topic(rid)
    metadata = response.get("metadata")
    conn = topics.conn

    def waitpoint_step(new_status: str, make: Callable[[dict, str], dict]) -> bool:
        def step() -> bool:
            wp = _waitpoint(topics, rid)
            if wp is None:
                raise ActionFailed(f"waitpoint.{'complete' if new_status == 'completed' else 'cancel'}: unknown "
                                   f"waitpoint {quote(rid)} (the response is in the log; finalize could not run)")
            if wp["status"] == new_status:
                return False  # Harn: already so, a no-op (and no resume)
            if wp["status"] != "open":
                raise ActionFailed(f"waitpoint {quote(rid)} is already {quote(wp['status'])}")
            rec = make(wp, rfc3339_time(now_ns()))
            eid = _insert(conn, wp_topic, "waitpoint.state", rec, {"waitpoint_id": rec["id"]}, order, wrapper)
            res.written.append(Written(wp_topic, eid, "waitpoint.state"))
            return True

        if not _txn(conn, step):
            return False

        def resume() -> None:  # trigger_waitpoint_service outside a VM: waitpoint.resume
            eid = _insert(conn, H.RESUMES_TOPIC, "waitpoint.resume", H.resume_payload(rid, rfc3339_time(now_ns())),
                          {}, order, wrapper)
            res.written.append(Written(H.RESUMES_TOPIC, eid, "waitpoint.resume"))

        _txn(conn, resume)
        return True

    if kind == "question":
        if waitpoint_step("completed", lambda wp, now: H.completed(
                wp, value=response.get("answer"), actor=response.get("reviewer"), reason=response.get("reason"),
                metadata=metadata, now=now)):
            res.outcome = "answered"
        else:
            res.outcome = "answered (the waitpoint was already completed)"
        return
    if kind == "escalation":
        if response.get("accepted") is not True:
            res.outcome = "declined"
            res.note = ("Harn records a declined escalation as hitl.escalation_accepted with accepted:false; its "
                        "pending list hides it, but the waiting run keeps waiting (escalations never time out)")
            return
        waitpoint_step("completed", lambda wp, now: H.completed(
            wp, value=H.escalation_value(response), actor=response.get("reviewer"), reason=response.get("reason"),
            metadata=metadata, now=now))
        res.outcome = "accepted"
        return
    # approval / dual control
    def decide() -> H.Decision:
        snap = _snapshot(topics, rid)
        if snap.waitpoint is not None and snap.waitpoint["status"] != "open":
            return H.Decision("finished")
        if snap.envelope is None:
            raise ActionFailed(f"missing HITL request envelope for {quote(rid)}")
        payload = p if isinstance(p := snap.envelope.get("payload"), dict) else {}
        d = H.fold_approval(snap.kind, rid, payload, snap.responses, rfc3339_time(now_ns()))
        if d.outcome == "error":
            raise ActionFailed(f"a stored response to {quote(rid)} is not a HitlHostResponse; Harn's finalize fails on it")
        if d.outcome in ("approved", "denied") and not snap.decided_kinds:
            ek = (H.APPROVED_KIND if d.outcome == "approved" else H.DENIED_KIND)[snap.kind]
            if d.outcome == "approved":
                assert d.record is not None  # the fold's approved outcome always carries its record
                body = H.approved_payload(rid, d.record)
            else:
                body = H.denied_payload(rid, d.response or {})
            eid = _insert(conn, snap.topic, ek, body, H.named_event_headers(rid, snap.envelope["trace_id"]), order, wrapper)
            res.written.append(Written(snap.topic, eid, ek))
        return d

    d = _txn(conn, decide)
    if d.outcome == "finished":
        res.outcome = "already finished"
    elif d.outcome == "pending":
        res.outcome = f"pending ({len(d.approvals)} of {d.quorum})"
    elif d.outcome == "approved":
        waitpoint_step("completed", lambda wp, now: H.completed(
            wp, value=d.record, actor=response.get("reviewer"), reason=d.last_approved_reason,
            metadata=metadata, now=now))
        res.outcome = "approved"
    else:
        denier = d.response or {}
        waitpoint_step("cancelled", lambda wp, now: H.cancelled(
            wp, actor=denier.get("reviewer"), reason=denier.get("reason"), metadata=denier.get("metadata"), now=now))
        res.outcome = "denied"


# ------------------------------------------------------------------------------ from a workspace
def locate(ws, request_id: str):
    """(request, log view, real log path) for a request in the project's logs, or AnswerRefused."""
    if not isinstance(request_id, str) or kind_of_id(request_id) is None or len(request_id) > 400:
        raise AnswerRefused(f"{quote(str(request_id)[:80])} is not a HITL request id (hitl_<kind>_…)")
    found = ws.event_logs.request(request_id)
    if found is None:
        raise AnswerRefused(f"no HITL request {quote(request_id)} in this project's event logs")
    req, view = found
    real = check_target(ws.paths.project_root, view.loc.backend, view.path, view.loc.state_dir)
    return req, view, real


def answer_in(ws, request_id: str, action: str, *, reviewer: str | None, reason: str | None = None,
              answer_text: str | None = None, answer_value: Any = H.MISSING) -> AnswerResult:
    """Answer a request of this workspace: find its log, check it may be written, append."""
    req, view, real = locate(ws, request_id)
    if action == "answer" and answer_value is H.MISSING:
        if answer_text is None:
            raise AnswerRefused("answer needs a value")
        if len(answer_text) > MAX_ANSWER_CHARS:
            raise AnswerRefused(f"the answer is longer than {MAX_ANSWER_CHARS} characters")
        try:
            answer_value = H.coerce_answer(req.payload.get("schema"), answer_text)
        except ValueError as exc:
            raise AnswerRefused(defuse(str(exc))) from None  # the schema's own words: data
    return answer(real, request_id, action, reviewer=reviewer, reason=reason, answer_value=answer_value)


def finish_in(ws, request_id: str) -> AnswerResult:
    _req, _view, real = locate(ws, request_id)
    return finish(real, request_id)


def request_rows(ws, *, include_resolved: bool = False) -> list[dict]:
    """What `hitl list` and the editor show per request: waiting ones (and those whose finalize never
    ran), newest first; with `include_resolved`, every request."""
    out = []
    reqs = ws.event_logs.all_requests() if include_resolved else ws.event_logs.waiting()
    seen = {r.request_id for r in reqs}
    if not include_resolved:  # unfinished answers are not "waiting" in Harn's view, yet the run still waits
        reqs = list(reqs) + [r for r in ws.event_logs.all_requests() if r.request_id not in seen and H.needs_finish(r)]
    for r in reqs:
        found = ws.event_logs.request(r.request_id)
        view = found[1] if found else None
        row = r.to_json()
        row.update(unfinished=H.needs_finish(r), quorum_text=(f"{len(r.approvals)} of {r.quorum}"
                   if r.kind in ("approval", "dual_control") else None),
                   log_path=view.path if view else None, backend=view.loc.backend if view else None,
                   choices=H.choices(r.payload.get("schema")) if r.kind == "question" else [],
                   actions=H.actions_for(r))
        out.append(row)
    return out

