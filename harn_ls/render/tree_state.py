"""Tree groups for issue 16, shown at the top of the Runs view: *Waiting for you* (pending HITL
requests), *Events* (logs -> topics with counts, latest time, consumer lag) and *Harn state*
(store, receipts, worktrees, crystallization candidates)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from harn_ls.formats.hitl import requests as hitl_fmt
from harn_ls.formats.hitl.responses import choice_labels, needs_finish
from harn_ls.model.change_kinds import EXTRA_KINDS
from harn_ls.render.limits import LABEL_BYTES, one_line
from harn_ls.render.markdown import short_text
from harn_ls.render.state_docs import ms_time
from harn_ls.render.uri import make_uri

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace

KINDS = EXTRA_KINDS  # what can change the groups above
PREFIXES = ("hitl", "events", "evlog:", "harnstate")

_Item = TypeVar("_Item")
_Item_co = TypeVar("_Item_co", covariant=True)


class ItemMaker(Protocol[_Item_co]):
    """How the tree makes one item (render/tree_items.py's `tree_item`, its open command bound): the
    groups here are built by the same function as the rest of the view."""

    def __call__(self, id: str, label: str, *, description: str = ..., tooltip: str = ..., icon: str = ...,
                 uri: str | None = ..., context: str = ..., children: bool = ...,
                 data: dict[str, Any] | None = ...) -> _Item_co: ...


def groups(ws: Workspace, item: ItemMaker[_Item]) -> list[_Item]:
    """Top-level groups (only those with something to show)."""
    x = ws.event_logs
    out: list[_Item] = []
    waiting = x.waiting()
    if waiting or any(v.requests for v in x.logs.values()):
        out.append(item("hitl", "Waiting for you", description=str(len(waiting)), icon="bell-dot" if waiting else "bell",
                        uri=make_uri("hitl_index"), context="hitlGroup", children=bool(waiting),
                        data={"pending": len(waiting)}))
    logs = x.existing_logs()
    if logs:
        n = sum(len(v.summary.topics) for v in logs)
        out.append(item("events", "Events", description=f"{n} topic(s)", icon="pulse", uri=make_uri("events_index"),
                        children=True))
    if x.store is not None or x.receipts or x.worktrees or x.candidates or x.mailboxes or x.locks or \
            x.newer_shown():
        held = sum(1 for lk in x.locks if lk.held)
        out.append(item("harnstate", "Harn state", description="running now" if held else "", icon="server",
                        children=True))
    return out


def children(ws: Workspace, parent: str, item: ItemMaker[_Item]) -> list[_Item]:
    x = ws.event_logs
    out: list[_Item] = []
    if parent == "hitl":
        waiting = x.waiting()
        shown = {r.request_id for r in waiting}
        # answered but never finished (a crash between Harn's rows): the run still waits, so offer Finish
        unfinished = [r for r in x.all_requests() if r.request_id not in shown and needs_finish(r)]
        for r in waiting + unfinished:
            state = "" if r.state == "pending" else f" · {r.state.replace('-', ' ')}"
            if needs_finish(r):
                state += " · not finished"
            quorum = f" · {len(r.approvals)}/{r.quorum}" if r.kind in ("approval", "dual_control") else ""
            out.append(item(f"hitl:{r.request_id}", short_text(r.prompt or r.request_id, 70),
                            description=f"{r.kind}{quorum}{state}", tooltip=f"{r.request_id}\n{r.prompt}",
                            icon="warning" if r.state != "pending" else "question",
                            uri=make_uri("hitl", r.request_id),
                            context="hitlRequest.unfinished" if needs_finish(r) else f"hitlRequest.{r.kind}",
                            data={"requestId": r.request_id, "kind": r.kind, "state": r.state,
                                  **({"choices": [one_line(c, LABEL_BYTES) for c in choice_labels(r)]}
                                     if r.kind == "question" else {})}))
        return out
    if parent == "events":
        for v in x.existing_logs():
            lag = sum(c.lag for c in v.summary.consumers)
            desc = f"{len(v.summary.topics)} topic(s)" + (f" · lag {lag}" if lag else "")
            if v.loc.why and not v.loc.why.startswith("default"):
                desc += " · " + v.loc.why.split("=", 1)[0]  # the variable that put it there
            if not v.loc.selected:
                desc += " · not the selected backend"
            tip = v.path + (f"\n{v.loc.why}" if v.loc.why else "")
            out.append(item(f"evlog:{v.label}", v.label, description=desc, tooltip=tip, icon="database",
                            children=bool(v.summary.topics), data={"log": v.label}))
        return out
    if parent.startswith("evlog:"):
        log = x.logs.get(parent[6:])
        if log is None:
            return []
        lag_by_topic: dict[str, int] = {}
        for c in log.summary.consumers:
            lag_by_topic[c.topic] = max(lag_by_topic.get(c.topic, 0), c.lag)
        infos = sorted(log.summary.topics.values(), key=lambda t: (t.topic.startswith(hitl_fmt.WAITPOINT_PREFIX), t.topic))
        for t in infos:
            desc = f"{t.count} · {ms_time(t.latest_ms)}"
            if t.topic in lag_by_topic:
                desc += f" · lag {lag_by_topic[t.topic]}"
            out.append(item(f"topic:{log.label}:{t.topic}", t.topic, description=desc, icon="list-ordered",
                            uri=make_uri("events", t.topic, log=log.label), context="eventTopic",
                            data={"log": log.label, "topic": t.topic}))
        return out
    if parent == "harnstate":
        if x.store is not None or x.mailboxes or x.locks:
            n = len(x.store.entries) if x.store is not None else 0
            held = [lk for lk in x.locks if lk.held]
            desc = f"{n} key(s)" + (f" · {len(x.mailboxes)} mailbox(es)" if x.mailboxes else "") + \
                (f" · running: {', '.join(lk.name for lk in held)[:60]}" if held else "")
            out.append(item("state:store", "Store", description=desc, icon="database", uri=make_uri("store")))
        for rc in x.receipts:
            stem = rc.path.rsplit("/", 1)[-1][:-5]
            out.append(item(f"receipt:{stem}", stem, description=rc.label,
                            icon={"verified": "verified", "self-signed": "unverified"}.get(rc.status, "error"),
                            uri=make_uri("receipts", stem), context="receipt", data={"id": stem}))
        if x.worktrees:
            stale = sum(1 for w in x.worktrees if w.stale)
            out.append(item("state:worktrees", "Worktrees",
                            description=f"{len(x.worktrees)}" + (f" · {stale} stale" if stale else ""),
                            icon="repo-forked", uri=make_uri("worktrees")))
        for cand in x.candidates:
            out.append(item(f"cand:{cand.id}", str(cand.proposal.get("title") or cand.id),
                            description="staged" if cand.complete else "incomplete", icon="beaker",
                            uri=make_uri("crystallization", cand.id), context="candidate", data={"id": cand.id}))
        newer = x.newer
        if newer is not None and x.newer_shown():
            parts = []
            sqlite = newer.llm_sqlite
            cached = sum(i["files"] for i in newer.llm_files.values()) + ((sqlite.get("rows") if sqlite else None) or 0)
            if cached or newer.llm_sqlite:
                parts.append(f"{cached} cached LLM response(s)")
            if newer.guard:
                parts.append(f"{len(newer.guard)} guard model(s)")
            if newer.orchestrator:
                parts.append(f"orchestrator {newer.orchestrator.get('status', '?')}")
            out.append(item("state:newer", "LLM cache, models, orchestrator", description=" · ".join(parts),
                            icon="archive", uri=make_uri("newer_state")))
        return out
    return []


def llm_item(ws: Workspace, item: ItemMaker[_Item]) -> list[_Item]:
    """LLM calls from the event log, listed with the run transcripts."""
    out: list[_Item] = []
    for v in ws.event_logs.existing_logs():
        t = v.summary.topics.get("agent.transcript.llm")
        if t is not None and t.count:
            out.append(item(f"llm:{v.label}", "LLM calls (event log)", description=f"{t.count} event(s) · {v.label}",
                            icon="comment-discussion", uri=make_uri("events", "agent.transcript.llm", log=v.label),
                            context="eventTopic", data={"log": v.label, "topic": "agent.transcript.llm"}))
    return out
