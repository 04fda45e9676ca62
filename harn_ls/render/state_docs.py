"""Documents for the event logs, HITL requests and the rest of `.harn/` (issue 16).

URIs (all names come from the loaded model, never opened as paths):
  harn-state:/events.md                         every log, its topics, consumer lag
  harn-state:/events/<topic>.md[?log=L&page=N]  one topic, newest first
  harn-state:/hitl.md                           requests waiting for you (+ recently resolved)
  harn-state:/hitl/<request_id>.md              one request: who asks, what, deadline, quorum, how to answer
  harn-state:/store.md                          store, workflow mailboxes, locks ("running now"), embedding cache
  harn-state:/receipts/<id>.md                  one receipt with its signature status
  harn-state:/worktrees.md                      worktrees (stale flagged) and crystallization candidates
  harn-state:/crystallization/<id>.md           one staged candidate

Rendered specially: hitl.* topics (request table), agent.transcript.llm (provider calls
paired by call_id), observability.action_graph (outline per trace), waitpoint.state.*
(status), trigger.dlq (failures). Every other topic and kind is rendered generically:
kind, app headers and the pretty-printed payload in a fence.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypedDict

from harn_ls.formats.harn_time import utc_text_ms
from harn_ls.formats.hitl import requests as hitl_fmt
from harn_ls.formats.hitl import responses as hr
from harn_ls.render.markdown import cell, fence, human_bytes, inline, link, pretty_json, short_text
from harn_ls.render.shown_path import shown_path
from harn_ls.render.uri import RenderSettings, StateUri, UriError, make_uri
from harn_ls.util.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from harn_ls.formats.event_logs import LogView
    from harn_ls.formats.events import Event
    from harn_ls.model.workspace import Workspace

EVENTS_PAGE = 50
_PROVENANCE = "harn.provenance."


def ms_time(ms: Any) -> str:
    """Unix milliseconds as `YYYY-MM-DD HH:MM:SSZ`; a count no clock can show (1e300 in a cloned
    log) as written."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return ""
    shown = utc_text_ms(ms)
    return shown + "Z" if shown is not None else str(ms)


def _log_for(ws: Workspace, topic: str, label: str | None) -> LogView:
    logs = ws.event_logs.logs
    if label:
        view = logs.get(label)
        if view is None:
            raise UriError(f"unknown event log {label!r}; known: {', '.join(logs)}")
        return view
    for view in logs.values():
        if topic in view.summary.topics:
            return view
    raise UriError(f"no event log has topic {topic!r}")


# ------------------------------------------------------------------------------------------------ /events.md
def events_index(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    out = ["# Event logs", ""]
    logs = ws.event_logs.existing_logs()
    if ws.paths.event_logs and ws.paths.event_logs[0].backend == "memory":
        out.append("> HARN_EVENT_LOG_BACKEND=memory: Harn keeps its event log in memory; nothing new reaches disk.\n")
    if not logs:
        looked = [v.loc for v in ws.event_logs.logs.values()]
        out.append("No event log found. Looked in: " + ", ".join(
            inline(shown_path(ws, loc.path)) + (f" ({cell(loc.why)})" if loc.why else "") for loc in looked)
            + ".")
    for view in logs:
        out.append(f"## {cell(view.label)} — {inline(shown_path(ws, view.path))} ({view.loc.backend})")
        out.append("")
        if view.loc.why:
            out.append(f"Found here because: {cell(view.loc.why)}."
                       + ("" if view.loc.selected else " HARN_EVENT_LOG_BACKEND selects the other backend: Harn writes "
                          "here no more.") + "\n")
        topics = sorted(view.summary.topics.values(), key=lambda t: t.topic)
        if topics:
            out.append("| topic | events | ids | latest |\n|---|---|---|---|")
            for t in topics[:2000]:
                out.append(f"| {link(t.topic, make_uri('events', t.topic, log=view.label))} | {t.count} | "
                           f"{t.first_id}–{t.last_id} | {ms_time(t.latest_ms)} |")
            if len(topics) > 2000:
                out.append(f"\n…and {len(topics) - 2000} more topics.")
        else:
            out.append("No topics.")
        if view.summary.consumers:
            out.append("\n**Consumers**\n")
            out.append("| topic | consumer | cursor | lag | updated |\n|---|---|---|---|---|")
            for c in view.summary.consumers[:500]:
                out.append(f"| {cell(c.topic)} | {cell(c.consumer_id)} | {c.cursor} | {c.lag} | {ms_time(c.updated_at_ms)} |")
        probs = view.problems()
        if probs:
            out.append(f"\n**Problems ({len(probs)})**\n")
            for p in probs[:50]:
                out.append(f"- {p.code}: {cell(p.message)}")
        out.append("")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------ /events/<topic>.md
def events(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    topic = target.name
    view = _log_for(ws, topic, target.query.get("log"))
    info = view.topic_info(topic)
    if info is None:
        raise UriError(f"topic {topic!r} is not in the {view.label} log")
    page = target.page()
    size = EVENTS_PAGE
    evs = view.page(topic, page, size)
    out = [f"# {inline(topic)}", "",
           f"Log {inline(shown_path(ws, view.path))} ({view.label}, {view.loc.backend}) · {info.count} event(s), ids "
           f"{info.first_id}–{info.last_id} · latest {ms_time(info.latest_ms) or '—'}", ""]
    cons = [c for c in view.summary.consumers if c.topic == topic]
    for c in cons:
        out.append(f"- consumer {inline(c.consumer_id)} at {c.cursor}, **{c.lag} behind**")
    if cons:
        out.append("")
    special = _special(ws, view, topic, evs)
    if special:
        out.extend(special)
    nav: list[str] = []
    if page > 0:
        nav.append(link("← newer", make_uri("events", topic, log=view.label, page=str(page - 1))))
    if (page + 1) * size < info.count:
        nav.append(link("older →", make_uri("events", topic, log=view.label, page=str(page + 1))))
    out.append(f"## Events, newest first (page {page + 1}, {len(evs)} shown)")
    if nav:
        out.append("\n" + " · ".join(nav))
    out.append("")
    for ev in evs:
        out.extend(_generic_event(ev))
    if nav:
        out.append(" · ".join(nav))
    return "\n".join(out) + "\n"


def _generic_event(ev: Event) -> list[str]:
    app = {k: v for k, v in ev.headers.items() if not k.startswith(_PROVENANCE)}
    out = [f"### #{ev.id} {inline(ev.kind)} · {ms_time(ev.occurred_at_ms)}", ""]
    if ev.problem is not None:
        out.append(f"> ⚠ {cell(ev.problem.message)}\n")
    if app:
        out.append("Headers: " + ", ".join(f"{inline(k)}={inline(v)}" for k, v in sorted(app.items())))
        out.append("")
    out.append(fence(pretty_json(ev.payload), "json"))
    return out


def _special(ws: Workspace, view: LogView, topic: str, evs: list[Event]) -> list[str]:
    if topic in hitl_fmt.HITL_TOPICS:
        reqs = [r for r in view.requests.values() if r.topic == topic or topic == hitl_fmt.RESPONSES_TOPIC]
        if not reqs:
            return []
        out = ["## Requests", "", "| request | state | asks | requested |\n|---|---|---|---|"]
        for r in sorted(reqs, key=lambda r: r.event_id, reverse=True)[:500]:
            out.append(f"| {link(r.request_id, make_uri('hitl', r.request_id))} | {r.state} | "
                       f"{cell(short_text(r.prompt, 60))} | {cell(r.requested_at)} |")
        return out + [""]
    if topic == "agent.transcript.llm":
        return _llm_calls(evs)
    if topic == "observability.action_graph":
        return _action_graph(ws, evs)
    if topic.startswith(hitl_fmt.WAITPOINT_PREFIX) and evs:
        p = evs[0].payload if isinstance(evs[0].payload, dict) else {}
        return [f"**Waitpoint status: {cell(p.get('status') or evs[0].kind)}**", ""]
    if topic == "trigger.dlq":
        rows = ["## Dead letters", "", "| # | trigger | binding | attempts | class | error |\n|---|---|---|---|---|---|"]
        for ev in evs:
            p = ev.payload if isinstance(ev.payload, dict) else {}
            rows.append(f"| {ev.id} | {cell(p.get('trigger_id'))} | {cell(p.get('binding_key'))} | "
                        f"{cell(p.get('attempt_count'))} | {cell(p.get('error_class'))} | "
                        f"{cell(short_text(p.get('final_error'), 80))} |")
        return rows + [""]
    return []


def _llm_calls(evs: list[Event]) -> list[str]:
    """Provider calls on this page, request and response paired by call_id (§M.3)."""
    calls: dict[str, dict[str, JsonObject]] = {}
    order: list[str] = []
    for ev in reversed(evs):  # oldest first
        p = ev.payload if isinstance(ev.payload, dict) else {}
        cid = p.get("call_id")
        if not isinstance(cid, str) or ev.kind not in ("provider_call_request", "provider_call_response"):
            continue
        if cid not in calls:
            calls[cid] = {}
            order.append(cid)
        calls[cid]["req" if ev.kind == "provider_call_request" else "resp"] = p
    if not order:
        return []
    out = ["## Provider calls (this page)", "",
           "| call | model | iteration | tokens in/out | cost | ms | reply |\n|---|---|---|---|---|---|---|"]
    for cid in reversed(order):
        req, resp = calls[cid].get("req", {}), calls[cid].get("resp", {})
        model = f"{resp.get('provider') or req.get('provider') or ''}/{resp.get('model') or req.get('model') or ''}"
        tokens = f"{resp.get('input_tokens', '')}/{resp.get('output_tokens', '')}" if resp else "(no response yet)"
        cost = resp.get("cost_usd")
        out.append(f"| {inline(cid[:13])} | {cell(model)} | {cell(req.get('iteration', resp.get('iteration')))} | "
                   f"{cell(tokens)} | {cell(f'${cost:.4f}' if isinstance(cost, (int, float)) else '')} | "
                   f"{cell(resp.get('response_ms', ''))} | {cell(short_text(resp.get('text'), 60))} |")
    return out + [""]


class ActionGraph(TypedDict):
    """One trace's action graph, merged from its events (§M.4)."""

    nodes: dict[str, JsonObject]  # node id -> the node's fields, later events' over earlier ones
    edges: dict[tuple[JsonValue, JsonValue, JsonValue], JsonObject]  # (from_id, to_id, kind) -> the edge
    run_id: JsonValue
    source: JsonValue


def merge_action_graph(evs: list[Event]) -> dict[str, ActionGraph]:
    """Nodes merged by id and edges by (from, to, kind), per trace id (§M.4)."""
    graphs: dict[str, ActionGraph] = {}
    for ev in sorted(evs, key=lambda e: e.id):
        p = ev.payload if isinstance(ev.payload, dict) else {}
        obs = p.get("observability")
        obs = obs if isinstance(obs, dict) else {}
        trace = p.get("trace_id") or ev.headers.get("trace_id") or p.get("run_id") or "?"
        g = graphs.setdefault(str(trace), {"nodes": {}, "edges": {}, "run_id": p.get("run_id"), "source": p.get("source")})
        for n in obs.get("action_graph_nodes") or []:
            if isinstance(n, dict) and isinstance(n.get("id"), str):
                g["nodes"].setdefault(n["id"], {}).update(n)
        for e in obs.get("action_graph_edges") or []:
            if isinstance(e, dict):
                g["edges"][(e.get("from_id"), e.get("to_id"), e.get("kind"))] = e
    return graphs


def _action_graph(ws: Workspace, evs: list[Event]) -> list[str]:
    graphs = merge_action_graph(evs)
    if not graphs:
        return []
    out = ["## Action graph (events on this page, merged per trace)", ""]
    for trace, g in graphs.items():
        run = g.get("run_id")
        head = f"**trace {inline(trace)}**"
        if isinstance(run, str) and run in ws.runs:
            head += " · run " + link(run, make_uri("runs", run))
        out.append(head)
        out.append("")
        _graph_outline(g, out)
        out.append("")
    return out


def _graph_outline(g: ActionGraph, out: list[str]) -> None:
    """The graph as a nested list from its roots (nodes no edge leads to), at most ~400 lines and 30
    levels deep; a node reached again is marked, not walked again."""
    children: dict[JsonValue, list[tuple[JsonValue, JsonValue]]] = {}
    has_parent = set()
    for frm, to, kind in g["edges"]:
        children.setdefault(frm, []).append((to, kind))
        has_parent.add(to)
    roots = [nid for nid in g["nodes"] if nid not in has_parent] or list(g["nodes"])[:1]
    seen: set[JsonValue] = set()
    lines = 0

    def walk(nid: JsonValue, depth: int, via: JsonValue) -> None:
        nonlocal lines
        if lines > 400 or depth > 30:
            return
        n = g["nodes"].get(nid, {})
        label = n.get("label") or nid
        bits = [b for b in (n.get("kind"), n.get("status"), n.get("outcome")) if b]
        edge = f"—{via}→ " if via else ""
        again = " (see above)" if nid in seen else ""
        out.append(f"{'  ' * depth}- {cell(edge)}{inline(label)} {cell(' · '.join(map(str, bits)))}{again}")
        lines += 1
        if nid in seen:
            return
        seen.add(nid)
        for to, kind in children.get(nid, []):
            walk(to, depth + 1, kind)

    for r in roots:
        walk(r, 0, None)


# ------------------------------------------------------------------------------------------------- /hitl.md
def hitl_index(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    waiting = ws.event_logs.waiting()
    out = [f"# Waiting for you ({len(waiting)})", ""]
    if not waiting:
        out.append("Nothing is waiting for a human.")
    else:
        out.append("| request | kind | state | asks | agent | requested | log |\n|---|---|---|---|---|---|---|")
        for r in waiting:
            out.append(f"| {link(r.request_id, make_uri('hitl', r.request_id))} | {r.kind} | {r.state} | "
                       f"{cell(short_text(r.prompt, 60))} | {cell(r.agent)} | {cell(r.requested_at)} | {cell(r.log)} |")
    for label, total, shown in ws.event_logs.harn_pending_cut():
        out.append(f"\n> Log {inline(label)}: {total} requests have no terminal event, but Harn's `hitl_pending()` "
                   f"returns only the newest {shown} by default (pass a larger `limit`, at most 5000): the older "
                   "ones are listed here, not by Harn.")
    done = [r for r in ws.event_logs.all_requests() if not r.is_waiting]
    if done:
        out.append(f"\n## Resolved ({len(done)})\n")
        for r in sorted(done, key=lambda r: r.requested_at, reverse=True)[:200]:
            out.append(f"- {link(r.request_id, make_uri('hitl', r.request_id))} · {r.kind} · {r.state}"
                       + (f" ({inline(r.resolved_by)})" if r.resolved_by else ""))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------- /hitl/<id>.md
def hitl(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    found = ws.event_logs.request(target.name)
    if found is None:
        raise UriError(f"no HITL request {target.name!r} in this project's event logs")
    r, view = found
    p = r.payload
    out = [f"# {r.kind.replace('_', ' ').title()} {inline(r.request_id)}", ""]
    state = r.state.replace("-", " ")
    out.append(f"**State: {state}**" + (f" — resolved by {inline(r.resolved_by)}" if r.resolved_by else ""))
    if r.state == "overdue":
        out.append("\n> Past its deadline and no `hitl.timeout` was written: the waiting process probably died. "
                   "Harn would still accept a response, but nobody may be waiting for it.")
    if r.state == "rejected-but-hidden":
        out.append("\n> Answered with `accepted` not true: Harn hides it from its pending list, yet the waiting VM keeps "
                   "waiting (escalations never time out). Accept it to let the run continue.")
    out.append("")
    out.append("| | |\n|---|---|")
    out.append(f"| who asks | {cell(r.agent or '(no agent name)')} |")
    out.append(f"| requested | {cell(r.requested_at)} |")
    deadline = ms_time(r.deadline_ms) if r.deadline_ms is not None else ("never (escalations do not time out)"
                                                                          if r.kind == "escalation" else "—")
    out.append(f"| deadline | {cell(deadline)} |")
    if r.kind in ("approval", "dual_control"):
        out.append(f"| reviewers | {cell(', '.join(r.reviewers) or 'anyone')} |")
        out.append(f"| quorum so far | {len(r.approvals)} of {r.quorum}"
                   + (f" ({cell(', '.join(r.approvals))})" if r.approvals else "") + " |")
    trace = r.trace_id
    out.append(f"| trace | {inline(trace) if trace else '—'} |")
    if r.run_id:
        run = link(r.run_id, make_uri("runs", r.run_id)) if r.run_id in ws.runs else inline(r.run_id)
        out.append(f"| run | {run} |")
    topic = link("topic " + r.topic, make_uri("events", r.topic, log=view.label))
    out.append(f"| log | {inline(shown_path(ws, view.path))} ({view.label}) · {topic} · event #{r.event_id} |")
    out.append(f"| waitpoint | {cell(r.waitpoint_status or 'not found')} |")
    if r.replays:
        out.append(f"| requested again | {r.replays} time(s) (replayed dispatch) |")
    out.append("")
    out.append("## What")
    out.append("")
    if r.kind == "question":
        out.append(cell(p.get("prompt")) or "(no prompt)")
        if p.get("schema") is not None:
            out.append("\nExpected answer (JSON Schema):\n")
            out.append(fence(pretty_json(p.get("schema")), "json"))
        if "default" in p and p.get("default") is not None:
            out.append(f"\nDefault on timeout: {inline(pretty_json(p.get('default')))}")
    elif r.kind == "escalation":
        out.append(f"Role {inline(p.get('role'))}: {cell(p.get('reason'))}")
    else:
        ar = p.get("approval_request")
        ar = ar if isinstance(ar, dict) else {}
        out.append(f"Action: {inline(ar.get('action') or p.get('action'))}")
        if ar.get("principal"):
            out.append(f"\nPrincipal: {inline(ar.get('principal'))}")
        caps = ar.get("capabilities_requested")
        if isinstance(caps, list) and caps:
            out.append("\nCapabilities requested: " + ", ".join(inline(c) for c in caps[:50]))
        args = ar.get("args", p.get("detail"))
        if args is not None:
            out.append("\nArguments:\n")
            out.append(fence(pretty_json(args), "json"))
    out.append("\n## Full request envelope\n")
    out.append(fence(pretty_json(r.envelope), "json"))
    if r.responses:
        out.append(f"## Responses ({len(r.responses)})\n")
        out.append("| reviewer | approved | accepted | answer | reason | at |\n|---|---|---|---|---|---|")
        for resp in r.responses[:200]:
            ans = pretty_json(resp["answer"]) if "answer" in resp else ""
            out.append(f"| {cell(resp.get('reviewer'))} | {cell(resp.get('approved', ''))} | {cell(resp.get('accepted', ''))} | "
                       f"{cell(short_text(ans, 60))} | {cell(resp.get('reason'))} | {cell(resp.get('responded_at'))} |")
        out.append("")
    out.extend(_answer_section(ws, r, view))
    return "\n".join(out) + "\n"


def _answer_section(ws: Workspace, r: hitl_fmt.HitlRequest, view: LogView) -> list[str]:
    """What the reader can do now (issue 33): the lenses above and the tree item offer the same."""
    acts = hr.actions_for(r)
    if not acts:
        return []
    out = ["## How to answer\n"]
    if "finish" in acts:
        out.append("> An answer is in the log but was never finished (the responder stopped between the response and "
                   "the rest of Harn's rows): Harn's pending list shows what the responses say, yet the waiting run "
                   "keeps waiting on its open waitpoint. **Finish** appends the missing rows, as Harn's next response would.\n")
    if view.loc.backend != "sqlite":
        out.append("This request lives in a file-backend log: harn-ls does not append there (two writers can write the "
                   "same event id twice). Answer it through the host running the agent (JSON-RPC `harn.hitl.respond`).\n")
        return out
    names = {"approve": "Approve", "deny": "Deny", "answer": "Answer…", "accept": "Accept", "decline": "Decline",
             "finish": "Finish"}
    out.append("Use the actions at the top of this document (or on the request in *Waiting for you*): "
               + ", ".join(f"**{names[a]}**" for a in acts) + ".")
    if r.kind in ("approval", "dual_control"):
        out.append(f"\nQuorum so far: **{len(r.approvals)} of {r.quorum}**"
                   + (f"; reviewers allowed: {cell(', '.join(r.reviewers))}" if r.reviewers else "; any reviewer counts")
                   + ". Your name is the `harnState.hitl.reviewer` setting.")
    if r.kind == "question":
        opts = hr.choices(r.payload.get("schema"))
        if opts:
            out.append("\nChoices: " + ", ".join(inline(pretty_json(o)) for o in opts[:50]))
    if r.kind == "escalation" and "decline" in acts:
        out.append("\nDeclining records `accepted: false`: Harn then hides the escalation, but the waiting run keeps "
                   "waiting (escalations never time out).")
    out.append("\nHow it is written: harn-ls appends what Harn's `append_hitl_response` appends (the response, then the "
               "decision, the waitpoint and `waitpoint.resume`, each in its own transaction) to "
               f"{inline(os.path.basename(view.path))}, the log the waiting run polls. No running Harn host can be "
               "reached from here (`harn.hitl.respond` is served only over the stdio of the editor that started the "
               "host), so this direct append is the path used.")
    out.append("\nFrom a terminal: " + inline(f"harn-ls hitl {acts[0]} {r.request_id}"
                                                  + (" VALUE" if acts[0] == "answer" else "") + " [--reason TEXT]"))
    if r.is_waiting:
        out.append("\nWith Harn's own tools (a running ACP/MCP host, or Harn's CLI for escalations):\n")
        out.append(fence("\n".join(hitl_fmt.how_to_answer(r, shown_path(ws, view.loc.state_dir))), "text"))
    out.append("")
    return out


# ---------------------------------------------------------------------------------------------- /store.md
def _value_cell(v: Any) -> str:
    return inline(short_text(pretty_json(v).replace("\n", " "), 120))


def store(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    x = ws.event_logs
    out = ["# Store and other state", ""]
    for label, st in (("Store (`store_set`)", x.store), ("Orchestrator store", x.orchestrator_store)):
        if st is None:
            continue
        out.append(f"## {label} — {inline(shown_path(ws, st.path))} ({len(st.entries)} key(s))\n")
        for p in st.problems:
            out.append(f"> ⚠ {cell(p.message)}\n")
        if st.entries:
            out.append("| key | value |\n|---|---|")
            for k in list(st.entries)[:1000]:
                out.append(f"| {inline(k)} | {_value_cell(st.entries[k])} |")
        out.append("")
    if x.store is None and x.orchestrator_store is None:
        out.append("No `.harn/store.json`.\n")
    out.append(f"## Workflow mailboxes ({len(x.mailboxes)})\n")
    for mb in x.mailboxes:
        flags = " · paused" if mb.paused else ""
        out.append(f"### {inline(mb.workflow_id)} — {len(mb.pending)} pending message(s), "
                   f"{mb.unanswered_updates} unanswered update(s){flags}\n")
        if mb.pending:
            out.append("| seq | kind | name | payload | enqueued |\n|---|---|---|---|---|")
            for m in mb.pending[:200]:
                out.append(f"| {cell(m.get('seq'))} | {cell(m.get('kind'))} | {cell(m.get('name'))} | "
                           f"{_value_cell(m.get('payload'))} | {cell(m.get('enqueued_at'))} |")
            out.append("")
    out.append(f"## Running now (locks: {len(x.locks)})\n")
    if not x.locks:
        out.append("No lock files.")
    for lk in x.locks:
        held = {True: "**held** — running now", False: "free", None: "unknown (no /proc/locks)"}[lk.held]
        out.append(f"- {lk.kind} {inline(lk.name)}: {held}")
    out.append("")
    out.append(f"## Embedding cache ({len(x.embed)} namespace/model folder(s))\n")
    if x.embed:
        out.append("| namespace | model hint | vectors | size |\n|---|---|---|---|")
        for e in x.embed:
            out.append(f"| {inline(e.namespace)} | {inline(e.model_hint)} | {e.vectors} | {human_bytes(e.bytes)} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------- /receipts/<id>.md
def receipts(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    r = ws.event_logs.receipt(target.name)
    if r is None:
        raise UriError(f"no receipt {target.name!r} in .harn/receipts")
    icon = {"verified": "✅", "self-signed": "⚠", "failed": "❌", "unreadable": "⚠"}.get(r.status, "⚠")
    status = f"{icon} {r.label}"
    out = [f"# Receipt {inline(r.id)}", "", f"**{status}** · {inline(shown_path(ws, r.path))}", ""]
    if r.errors:
        out.append("| error |\n|---|")
        out.extend(f"| {cell(e)} |" for e in r.errors[:200])
        out.append("")
    out.append("| | |\n|---|---|")
    out.append(f"| issued | {cell(r.issued_at)} |")
    out.append(f"| pipeline | {inline(r.pipeline)} |")
    out.append(f"| run status | {cell(r.run_status)} |")
    out.append(f"| events | {r.event_count} |")
    out.append(f"| receipt hash | {inline(r.receipt_hash)} |")
    out.append(f"| event root | {inline(r.event_root_hash)} |")
    out.append(f"| signing keys | {', '.join(inline(k) for k in r.key_ids) or '—'} |")
    out.append("\nThe public key is embedded in the receipt: a valid signature proves integrity, not who signed. "
               "harn-ls says *verified* only when a signing key is in `~/.harn/trusted-signers` (as "
               "`<sha256 of the key>.pub`), and checks that each key id is the id of its key "
               "(Harn's own `harn verify` does not).\n")
    data = r.data or {}
    log = data.get("event_log")
    log = log if isinstance(log, dict) else {}
    evs = log.get("events")
    evs = evs if isinstance(evs, list) else []
    if evs:
        out.append(f"## Events ({len(evs)})\n")
        for e in evs[:200]:
            if not isinstance(e, dict):
                continue
            out.append(f"### {inline(e.get('topic'))} #{cell(e.get('event_id'))} {inline(e.get('kind'))}\n")
            out.append(fence(pretty_json(e.get("payload")), "json"))
    return "\n".join(out) + "\n"


# -------------------------------------------------------------------------------------------- /worktrees.md
def worktrees(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    x = ws.event_logs
    out = [f"# Worktrees ({len(x.worktrees)})", ""]
    if x.worktrees:
        out.append("| worktree | branch | state |\n|---|---|---|")
        for wt in x.worktrees:
            state = f"⚠ stale: {cell(wt.reason)}" if wt.stale else "ok"
            out.append(f"| {inline(wt.name)} | {inline(wt.branch) if wt.branch else ''} | {state} |")
    else:
        out.append("No agent worktrees under `.harn/worktrees/`.")
    out.append(f"\n## Crystallization candidates ({len(x.candidates)})\n")
    for c in x.candidates:
        done = "" if c.complete else " · *being written (no proposal.json yet)*"
        title = c.proposal.get("title") or c.proposal.get("name") or c.id
        out.append(f"- {link(str(title), make_uri('crystallization', c.id))} · {cell(c.proposal.get('kind', ''))} · "
                   f"{len(c.files)} file(s) · {CANDIDATE_LAYOUT[c.layout]}{done}")
    if not x.candidates:
        out.append("None staged under `.harn/crystallization/` (newest Harn) or `.burin/crystallization/` (older Harn).")
    out.append(f"\n## Receipts ({len(x.receipts)})\n")
    for r in x.receipts:
        out.append(f"- {link(r.id, make_uri('receipts', r.id))} · {cell(r.label)} · {cell(r.pipeline)}")
    return "\n".join(out) + "\n"


CANDIDATE_LAYOUT = {"harn": "`.harn/crystallization/` (newest Harn)",
                    "burin": "`.burin/crystallization/` (older Harn, read-only here)"}


def crystallization(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    c = next((c for c in ws.event_logs.candidates if c.id == target.name), None)
    if c is None:
        raise UriError(f"no crystallization candidate {target.name!r}")
    p = c.proposal
    out = [f"# Candidate {inline(c.id)}", ""]
    out.append("Staged, not active: Harn's compiler and test gates own activation.\n" if c.complete
               else "Still being written: `proposal.json` (the completion signal) is not there yet.\n")
    out.append("| | |\n|---|---|")
    out.append(f"| staged under | {CANDIDATE_LAYOUT[c.layout]} |")
    for old in c.shadowed:
        out.append(f"| also staged (older, not shown) | {inline(shown_path(ws, old))} |")
    for key in ("title", "name", "kind", "status", "description", "when_to_use", "support", "staged_at", "source"):
        if key in p:
            out.append(f"| {key} | {cell(short_text(p.get(key), 200))} |")
    out.append(f"\n## Files ({len(c.files)})\n")
    out.extend(f"- {inline(f)}" for f in c.files)
    art = p.get("artifact")
    art = art if isinstance(art, dict) else {}
    if isinstance(art.get("source"), str):
        out.append(f"\n## {inline(art.get('entrypoint') or 'source')}\n")
        out.append(fence(art["source"][:20000]))
    if isinstance(art.get("test_source"), str):
        out.append("\n## test.harn\n")
        out.append(fence(art["test_source"][:20000]))
    return "\n".join(out) + "\n"


RENDERERS = {
    "events_index": events_index,
    "events": events,
    "hitl_index": hitl_index,
    "hitl": hitl,
    "store": store,
    "receipts": receipts,
    "worktrees": worktrees,
    "crystallization": crystallization,
}
