"""The event logs of one project, kept up to date by tailing (harn-formats §H.2.1, §M).

`discover(places)` lists where Harn's producers write (formats/paths.py resolves the places):
`harn run` -> `<state>/events.sqlite` (or `<state>/events/`), the orchestrator
-> `.harn/orchestrator/events.sqlite`, personas -> `.harn/personas/.harn/events.sqlite`.

`LogView.refresh()` is cheap when nothing changed: one query of `topic_heads`;
only topics whose head moved are re-counted, and only the HITL topics and the
waitpoint records of HITL requests are read event by event (tailed by id, read
again from the start when a compaction removed events we had not seen).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Protocol, cast

from harn_ls.formats.events import Event, FileEventLog, LogSummary, TopicInfo
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject
from harn_ls.util.lean_dataclass import lean_dataclass

if TYPE_CHECKING:
    from harn_ls.formats.events_sqlite import SqliteEventLog
    from harn_ls.formats.hitl import requests as hitl_fmt
    from harn_ls.formats.paths import EventLogPlace

MAX_BAD_EVENTS = 20  # per topic: events whose payload is not JSON, listed as problems
PAYLOAD_WINDOW = 20_000  # a topic first seen: its newest events checked for unreadable payloads
PAYLOAD_BUDGET = 30_000  # events checked per log per refresh (each query well inside the 2 s deadline)
MAX_HITL_EVENTS = 20_000  # per HITL topic; beyond it the oldest are dropped (with a problem)
TAIL_BATCH = 500


class HitlRules(Protocol):
    """What the event logs (and model/event_logs.py) use of formats/hitl/requests.py, which `hitl_rules`
    loads late: the module itself is the implementation."""

    @property
    def HITL_TOPICS(self) -> tuple[str, ...]: ...  # noqa: N802 (the module's constant)

    @property
    def WAITPOINT_PREFIX(self) -> str: ...  # noqa: N802

    @property
    def HARN_PENDING_LIMIT(self) -> int: ...  # noqa: N802

    def sanitize_topic_component(self, value: str) -> str: ...

    def waiting(self, requests: dict[str, hitl_fmt.HitlRequest]) -> list[hitl_fmt.HitlRequest]: ...

    def derive(self, events: Iterable[Event], waitpoints: dict[str, JsonObject] | None = None,
               now_ms: int | None = None, *, log_label: str = "", path: str = "",
               ) -> tuple[dict[str, hitl_fmt.HitlRequest], list[Problem]]: ...


def hitl_rules() -> HitlRules:
    """formats/hitl/requests.py, loaded once a log exists: only a present log has HITL events to read."""
    # start-up: the HITL rules (with calendar, ~5 ms) load only when an event log is refreshed
    from harn_ls.formats.hitl import requests as hitl

    return hitl


def _event_id_of(p: Problem) -> int:
    """The event id in a payload problem's message ("topic T event N: ...")."""
    try:
        return int(p.message.split(" event ", 1)[1].split(":", 1)[0])
    except (IndexError, ValueError):
        return 0


@lean_dataclass(frozen=True)
class LogLocation:
    """Where one event log lives and which backend holds it."""

    label: str  # run | orchestrator | personas
    backend: str  # sqlite | file
    path: str  # the .sqlite file or the events/ directory
    state_dir: str  # what `--state-dir` names for this log (the dir that holds events.sqlite)
    why: str = ""  # why here: the default place, or which variable (and from where) put it there
    selected: bool = True  # HARN_EVENT_LOG_BACKEND picks this backend (Harn writes the other one no more)


def discover(places: Iterable[EventLogPlace]) -> list[LogLocation]:
    """Every place a Harn producer may have put an event log, existing or not: both backends of each
    `paths.EventLogPlace` (resolved from Harn's variables HARN_EVENT_LOG_*, HARN_ORCHESTRATOR_STATE_DIR, or
    the default places), each path once."""
    out, seen = [], set()
    for pl in places:
        for backend, p, why in (("sqlite", pl.sqlite_path, pl.why_sqlite), ("file", pl.file_dir, pl.why_file)):
            key = os.path.normpath(p)
            if key in seen:
                continue
            seen.add(key)
            state_dir = os.path.dirname(p) if backend == "sqlite" else pl.state_dir
            out.append(LogLocation(pl.label if backend == "sqlite" else f"{pl.label}-file", backend, p, state_dir,
                                   why, selected=pl.backend == backend))
    return out


@lean_dataclass
class LogView:
    """One event log as last read: its summary, HITL events, waitpoints and requests."""

    loc: LogLocation
    copy_dir: str | None = None
    root: str | None = None  # the project: the log's real path must stay inside it
    summary: LogSummary = field(default_factory=LogSummary)
    hitl_events: dict[str, list[Event]] = field(default_factory=dict)  # topic -> events (id order)
    waitpoints: dict[str, JsonObject] = field(default_factory=dict)  # request id -> latest waitpoint payload
    requests: dict[str, hitl_fmt.HitlRequest] = field(default_factory=dict)
    hitl_problems: list[Problem] = field(default_factory=list)
    _wp_heads: dict[str, int] = field(default_factory=dict)
    # events whose payload/headers are not JSON, by topic (SQLite logs; the file backend reports its own)
    payload_problems: dict[str, list[Problem]] = field(default_factory=dict)
    _payload_checked: dict[str, int] = field(default_factory=dict)  # topic -> highest event id checked
    _payload_pending: set[str] = field(default_factory=set)  # topics with events left to check (budget)
    _backend: SqliteEventLog | FileEventLog | None = None
    refreshed_at: float = 0.0

    @property
    def label(self) -> str:
        return self.loc.label

    @property
    def path(self) -> str:
        return self.loc.path

    @property
    def exists(self) -> bool:
        return os.path.isfile(self.loc.path) if self.loc.backend == "sqlite" else os.path.isdir(
            os.path.join(self.loc.path, "topics"))

    def backend(self) -> SqliteEventLog | FileEventLog:
        if self._backend is None and self.loc.backend == "sqlite":
            # start-up: sqlite3 and tempfile load only once a project has an events.sqlite to read
            from harn_ls.formats.events_sqlite import SqliteEventLog

            self._backend = SqliteEventLog(self.loc.path, self.copy_dir, self.root)
        elif self._backend is None:
            self._backend = FileEventLog(self.loc.path, self.root)
        return self._backend

    def idempotency_keys(self) -> int | None:
        """Rows of `event_idempotency_keys` (§H.2.4), counted now (None: not SQLite, no such table, not read).
        Not part of `refresh`: a COUNT(*) of 100k keys costs 2-4.5 ms, and only the newer-state document and
        `inspect` show it."""
        if self.loc.backend != "sqlite" or not self.exists:
            return None
        return cast("SqliteEventLog", self.backend()).idempotency_rows()

    def problems(self) -> list[Problem]:
        out = list(self.summary.problems) + list(self.hitl_problems)
        seen = {p.message for p in out}
        for probs in self.payload_problems.values():
            out.extend(p for p in probs if p.message not in seen)  # a HITL topic's tail may report the same event
        return out

    def _check_payloads(self, be: SqliteEventLog, changed: set[str]) -> bool:
        """Look for events whose payload Harn cannot read (issue 28 item 5), within a budget: when a topic is
        first seen, its newest PAYLOAD_WINDOW events; afterwards every event appended. At most
        PAYLOAD_BUDGET events a refresh (SQLite's json_valid, ~10 µs an event); a topic not finished
        is taken up again at the next refresh."""
        any_change = False
        budget = PAYLOAD_BUDGET
        for topic in sorted(changed | self._payload_pending):
            info = self.summary.topics.get(topic)
            have = self.payload_problems.get(topic, [])
            start = self._payload_checked.get(topic)
            if info is None or (start is not None and info.last_id < start) or (
                    have and info.first_id > _event_id_of(have[0])):
                any_change |= bool(self.payload_problems.pop(topic, None))  # gone, rewritten or compacted
                self._payload_checked.pop(topic, None)
                self._payload_pending.discard(topic)
                if info is None:
                    continue
                have, start = [], None
            if start is None:
                start = max(0, info.first_id - 1, info.last_id - PAYLOAD_WINDOW)
            if len(have) >= MAX_BAD_EVENTS or start >= info.last_id:
                self._payload_checked[topic] = info.last_id
                self._payload_pending.discard(topic)
                continue
            if budget <= 0:
                self._payload_pending.add(topic)
                continue
            end = min(info.last_id, start + budget)
            # (a connection problem is already in the summary: the same open failed or warned there)
            bad = be.malformed(topic, start, end, MAX_BAD_EVENTS - len(have) + 1)
            if bad is None:
                self._payload_pending.add(topic)
                continue
            budget -= end - start
            if bad:
                room = MAX_BAD_EVENTS - len(have)
                have = have + bad[:room]
                if len(bad) > room:
                    have.append(Problem(self.path, 0, "HL-EVT-003",
                        f"topic {topic}: more events whose payload is not JSON; only the first {MAX_BAD_EVENTS} are listed",
                        Severity.ERROR))
                self.payload_problems[topic] = have
                any_change = True
            self._payload_checked[topic] = end
            if end < info.last_id:
                self._payload_pending.add(topic)
            else:
                self._payload_pending.discard(topic)
        return any_change

    def refresh(self, now_ms: int | None = None) -> bool:
        """Bring counts, cursors and HITL state up to date. Returns True when anything changed."""
        if not self.exists:
            changed = bool(self.summary.topics or self.requests or self.summary.problems)
            self.summary = LogSummary()
            self.hitl_events.clear()
            self.waitpoints.clear()
            self.requests.clear()
            self.hitl_problems = []
            self.payload_problems.clear()
            self._payload_checked.clear()
            self._payload_pending.clear()
            self._wp_heads.clear()
            self._backend = None
            return changed
        be = self.backend()
        with be.session():  # (SQLite: one connection, one snapshot, for the whole refresh)
            return self._refresh_from(be, now_ms)

    def _refresh_from(self, be: SqliteEventLog | FileEventLog, now_ms: int | None) -> bool:
        file_changes: dict[str, tuple[bool, list[Event]]]
        if self.loc.backend == "file":
            file_log = cast(FileEventLog, be)  # loc.backend names the backend's class
            file_changes = file_log.refresh()
            new = file_log.summary()
            changed_topics = set(file_changes)
        else:
            file_changes = {}
            new = cast("SqliteEventLog", be).summary(self.summary.topics)
            if not new.ok and self.summary.topics:
                # unreadable right now (locked, mid-write): keep what we had, report the problem
                new.topics, new.consumers = self.summary.topics, self.summary.consumers
            changed_topics = {t for t, info in new.topics.items() if self.summary.topics.get(t) is not info}
            changed_topics |= set(self.summary.topics) - set(new.topics)
        old_probs = [p.message for p in self.summary.problems]
        consumers_changed = [c.to_json() for c in new.consumers] != [c.to_json() for c in self.summary.consumers]
        self.summary = new
        payload_changed = (self.loc.backend == "sqlite" and new.ok
                           and self._check_payloads(cast("SqliteEventLog", be), changed_topics))
        hitl_changed = self._tail_hitl(be, changed_topics, file_changes)
        if hitl_changed or now_ms is not None:
            self._derive(now_ms)
        self.refreshed_at = time.time()
        return bool(changed_topics) or hitl_changed or payload_changed or consumers_changed \
            or old_probs != [p.message for p in new.problems]

    # ------------------------------------------------------------------ HITL
    def _tail_hitl(self, be: SqliteEventLog | FileEventLog, changed: set[str],
                   file_changes: dict[str, tuple[bool, list[Event]]]) -> bool:
        any_change = False
        for topic in hitl_rules().HITL_TOPICS:
            if topic not in changed:
                continue
            any_change = True
            have = self.hitl_events.setdefault(topic, [])
            info = self.summary.topics.get(topic)
            if self.loc.backend == "file":
                reset, new = file_changes.get(topic, (True, []))
                if reset:
                    have.clear()
                have.extend(new)
            else:
                last = have[-1].id if have else 0
                if info is None or (have and info.first_id > have[0].id) or (info and info.last_id < last):
                    have.clear()  # compacted (or the topic vanished): read again from the start
                    last = 0
                if info is not None:
                    # Stop at the head the summary saw: events committed after it (and the waitpoints
                    # written just before them) are read together on the next refresh, so one
                    # refresh never shows a request without the state that was written before it.
                    while last < info.last_id:
                        batch = be.read_after(topic, last, TAIL_BATCH, self.summary.problems)
                        full = len(batch) == TAIL_BATCH
                        batch = [ev for ev in batch if ev.id <= info.last_id]
                        if not batch:
                            break
                        have.extend(batch)
                        last = batch[-1].id
                        if not full:
                            break
            if len(have) > MAX_HITL_EVENTS:
                del have[: len(have) - MAX_HITL_EVENTS]
                self.summary.problems.append(Problem(self.path, 0, "HL-EVT-010",
                    f"{topic} holds more than {MAX_HITL_EVENTS} events; only the newest are used for pending requests",
                    Severity.INFO))
        # waitpoint records of HITL requests: the latest one per request
        prefix = hitl_rules().WAITPOINT_PREFIX
        wp_topics = [t for t in changed if t.startswith(prefix)]
        if wp_topics:
            any_change = True
            if self.loc.backend == "file":
                for t in wp_topics:
                    reset, new = file_changes.get(t, (True, []))
                    if new:
                        self._set_waitpoint(t, new[-1])
                    elif reset:
                        self._drop_waitpoint(t)
            else:
                newest = cast("SqliteEventLog", be).read_last([t for t in wp_topics if t in self.summary.topics],
                                                              self.summary.problems)
                for t in wp_topics:
                    if t in newest:
                        self._set_waitpoint(t, newest[t])
                    else:
                        self._drop_waitpoint(t)
        return any_change

    def _set_waitpoint(self, topic: str, ev: Event) -> None:
        p = ev.payload if isinstance(ev.payload, dict) else {}
        wid = p.get("id") if isinstance(p.get("id"), str) else ev.headers.get("waitpoint_id")
        if not isinstance(wid, str):
            wid = topic[len(hitl_rules().WAITPOINT_PREFIX):]
        # (waitpoint_*: the std/waitpoints shape, §M.2 B: status is in the payload too)
        if ev.kind in ("waitpoint.state", "waitpoint_created", "waitpoint_completed", "waitpoint_cancelled"):
            self.waitpoints[wid] = p
        self._wp_heads[topic] = ev.id

    def _drop_waitpoint(self, topic: str) -> None:
        self._wp_heads.pop(topic, None)
        hitl = hitl_rules()
        suffix = topic[len(hitl.WAITPOINT_PREFIX):]
        for wid in [w for w in self.waitpoints if hitl.sanitize_topic_component(w) == suffix]:
            del self.waitpoints[wid]

    def _derive(self, now_ms: int | None) -> None:
        events = [ev for t in hitl_rules().HITL_TOPICS for ev in self.hitl_events.get(t, [])]
        now = now_ms if now_ms is not None else int(time.time() * 1000)
        self.requests, self.hitl_problems = hitl_rules().derive(events, self.waitpoints, now, log_label=self.label,
                                                            path=self.path)

    # ----------------------------------------------------------------- pages
    def page(self, topic: str, page: int, size: int) -> list[Event]:
        if not self.exists:
            return []
        return self.backend().read_page(topic, page, size, [])

    def topic_info(self, topic: str) -> TopicInfo | None:
        return self.summary.topics.get(topic)
