"""Comparing two runs: a normalized run document (for a side-by-side diff) and a summary.

`harn-state:/runs/<id>.md?normalized=1` lists what two runs of a pipeline can
share — stages, LLM calls, tool calls, transcript turns — with what always
differs masked (run/transcript/call ids, timestamps), so a diff shows only
real differences. `harn-state:/compare/<A>/<B>.md` summarises them: stages
added / removed, status changes, duration and token deltas per stage, and the
first LLM message where the two conversations diverge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harn_ls.formats.harn_time import epoch_seconds
from harn_ls.render.markdown import short_text
from harn_ls.render.svg import fmt_ms, md_text
from harn_ls.render.timeline import load_llm_log
from harn_ls.render.uri import RenderSettings, StateUri, UriError, make_uri
from harn_ls.util.json_types import JsonObject

if TYPE_CHECKING:
    from collections.abc import Callable

    from harn_ls.formats.runs import RunRecord
    from harn_ls.model.workspace import Workspace

_MASKS = (
    (re.compile(r"\brun_[0-9A-Za-z][0-9A-Za-z_-]*"), "<run-id>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b1[5-9]\d{8}(\.\d+)?\b"), "<time>"),  # epoch seconds 2017..2033
    (re.compile(r"\b(toolu|call|msg|req)_(?=[0-9A-Za-z]*\d)[0-9A-Za-z]+\b"), r"\1_<id>"),
    (re.compile(r"\bsha256:[0-9a-f]{16,64}\b"), "sha256:<hash>"),
)


def mask(text: str) -> str:
    for rx, repl in _MASKS:
        text = rx.sub(repl, text)
    return text


def _full(ws: Workspace, run_id: str) -> RunRecord:
    run = ws.runs.get(run_id)
    if run is None:
        raise UriError(f"no run {run_id!r}")
    full = ws.full_run_record(run.path)
    return full if full is not None and full.ok else run


def _stage_key(st: JsonObject, i: int) -> str:
    return str(st.get("node_id") or st.get("id") or f"#{i + 1}")


def _duration_ms(st: JsonObject) -> float | None:
    s, e = epoch_seconds(st.get("started_at")), epoch_seconds(st.get("finished_at"))
    return (e - s) * 1000 if s is not None and e is not None else None


def _usage(st: JsonObject) -> JsonObject:
    usage = st.get("usage")
    return usage if isinstance(usage, dict) else {}


@dataclass
class Message:
    """One message of a conversation, as compared between runs."""

    role: str
    text: str


def llm_messages(run: RunRecord) -> list[Message]:
    """The conversation as the provider saw it: `message` lines of the turn log, else the transcript's events."""
    log = load_llm_log(run)
    out: list[Message] = []
    if log is not None and any(ln.type in ("message", "provider_call_response") for ln in log.lines):
        for line in log.lines:
            if line.type == "message":
                v = line.value
                content = v.get("content")
                text = content if isinstance(content, str) else short_text(str(content), 4000)
                calls = v.get("tool_calls") if isinstance(v.get("tool_calls"), list) else []
                if calls:
                    text += " " + " ".join(f"<tool_call:{c.get('name')}>" for c in calls if isinstance(c, dict))
                out.append(Message(str(v.get("role") or "?"), text))
            elif line.type == "provider_call_response":
                v = line.value
                out.append(Message("assistant", str(v.get("text") or "") + "".join(
                    f" <tool_call:{c.get('name')}>" for c in (v.get("tool_calls") or []) if isinstance(c, dict))))
        return out
    for tr in run.transcripts[:1]:
        for ev in getattr(tr, "events", []) or []:
            if ev.kind in ("message", "tool_result"):
                out.append(Message(ev.role or "?", ev.visible_text))
    return out


def normalized_document(ws: Workspace, run_id: str) -> str:
    run = _full(ws, run_id)
    out = ["# Run (normalized for comparison)", "",
           "Ids and timestamps that differ between any two runs are masked.", "",
           "| field | value |", "|---|---|",
           f"| workflow | {md_text(run.workflow_name or run.workflow_id)} |",
           f"| status | {md_text(run.status)} |",
           f"| task | {md_text(mask(run.task or ''))} |", ""]
    out.append("## Stages\n")
    out.append("| stage | kind | status | outcome | duration | tokens in | tokens out | cost | attempts |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for i, st in enumerate(run.stages):
        if not isinstance(st, dict):
            continue
        u = _usage(st)
        attempts = st.get("attempts")
        attempts = attempts if isinstance(attempts, list) else []
        d = _duration_ms(st)
        out.append(f"| {md_text(_stage_key(st, i))} | {md_text(st.get('kind'))} | {md_text(st.get('status'))} | "
                   f"{md_text(st.get('outcome'))} | {fmt_ms(d) if d is not None else ''} | {md_text(u.get('input_tokens'))} | "
                   f"{md_text(u.get('output_tokens'))} | {md_text(u.get('total_cost'))} | {len(attempts)} |")
        vis = st.get("visible_text")
        if isinstance(vis, str) and vis:
            out.append(f"| ↳ | | | | | | | | {md_text(short_text(mask(vis), 100))} |")
    out.append("")
    data = run.data if isinstance(run.data, dict) else {}
    tools = [t for t in (data.get("tool_recordings") or []) if isinstance(t, dict)]
    if tools:
        out.append("## Tool calls\n")
        out.append("| # | tool | result | rejected |\n|---|---|---|---|")
        for i, t in enumerate(tools[:500], 1):
            out.append(f"| {i} | {md_text(t.get('tool_name'))} | {md_text(short_text(mask(str(t.get('result'))), 60))} | "
                       f"{'yes' if t.get('is_rejected') is True else ''} |")
        out.append("")
    msgs = llm_messages(run)
    if msgs:
        out.append("## Conversation\n")
        for i, m in enumerate(msgs[:500], 1):
            out.append(f"{i}. **{md_text(m.role)}**: {md_text(short_text(mask(m.text), 300))}")
        out.append("")
    return "\n".join(out) + "\n"


def _delta(a: float | None, b: float | None, fmt: Callable[[float], str] = lambda v: f"{v:,.0f}") -> str:
    if a is None and b is None:
        return ""
    if a is None or b is None:
        return f"{fmt(a) if a is not None else '—'} → {fmt(b) if b is not None else '—'}"
    d = b - a
    sign = "+" if d > 0 else ("−" if d < 0 else "±")
    return f"{fmt(a)} → {fmt(b)} ({sign}{fmt(abs(d))})"


def _num(v: object) -> int | float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def compare_document(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    """`harn-state:/compare/<A>/<B>.md`."""
    a_id, _, b_id = target.name.partition("/")
    a, b = _full(ws, a_id), _full(ws, b_id)
    out = [f"# Compare runs — {md_text(a.id)} ↔ {md_text(b.id)}", "",
           f"[A: {md_text(a.id)}]({make_uri('runs', a.id)}) · [B: {md_text(b.id)}]({make_uri('runs', b.id)})", "",
           "| what | A | B |", "|---|---|---|",
           f"| workflow | {md_text(a.workflow_name)} | {md_text(b.workflow_name)} |",
           f"| status | {md_text(a.status)} | {md_text(b.status)} |",
           f"| started | {md_text(a.started_at)} | {md_text(b.started_at)} |"]
    ta = (epoch_seconds(a.finished_at) or 0) - (epoch_seconds(a.started_at) or 0) if a.finished_at and a.started_at else None
    tb = (epoch_seconds(b.finished_at) or 0) - (epoch_seconds(b.started_at) or 0) if b.finished_at and b.started_at else None
    out.append(f"| duration | {fmt_ms(ta * 1000) if ta is not None else ''} | {fmt_ms(tb * 1000) if tb is not None else ''} |")
    for k in ("input_tokens", "output_tokens", "total_cost"):
        out.append(f"| {k.replace('_', ' ')} | {md_text(a.usage.get(k))} | {md_text(b.usage.get(k))} |")
    out.append("")

    sa = {_stage_key(st, i): st for i, st in enumerate(a.stages) if isinstance(st, dict)}
    sb = {_stage_key(st, i): st for i, st in enumerate(b.stages) if isinstance(st, dict)}
    added = [k for k in sb if k not in sa]
    removed = [k for k in sa if k not in sb]
    out.append("## Stages\n")
    out.append(f"Added in B: {', '.join(md_text(k) for k in added) or 'none'} · "
               f"removed in B: {', '.join(md_text(k) for k in removed) or 'none'}\n")
    out.append("| stage | status A → B | duration | tokens in | tokens out |\n|---|---|---|---|---|")
    for k in list(sa) + added:
        x, y = sa.get(k), sb.get(k)
        if x is None or y is None:
            label = "**added**" if x is None else "**removed**"
            st = y if x is None else x
            assert st is not None  # (a key of `sa` or of `added`: one side has the stage)
            out.append(f"| {md_text(k)} | {label} ({md_text(st.get('status'))}) | | | |")
            continue
        status = md_text(x.get("status")) if x.get("status") == y.get("status") else \
            f"**{md_text(x.get('status'))} → {md_text(y.get('status'))}**"
        ux, uy = _usage(x), _usage(y)
        out.append(f"| {md_text(k)} | {status} | {_delta(_duration_ms(x), _duration_ms(y), fmt_ms)} | "
                   f"{_delta(_num(ux.get('input_tokens')), _num(uy.get('input_tokens')))} | "
                   f"{_delta(_num(ux.get('output_tokens')), _num(uy.get('output_tokens')))} |")
    out.append("")

    out.append("## Conversation\n")
    ma, mb = llm_messages(a), llm_messages(b)
    if not ma and not mb:
        out.append("Neither run recorded LLM messages.")
    else:
        i = next((i for i, (x, y) in enumerate(zip(ma, mb, strict=False))  # (the shorter one ends the walk)
                  if (x.role, mask(x.text)) != (y.role, mask(y.text))), None)
        if i is None and len(ma) == len(mb):
            out.append(f"The {len(ma)} LLM message(s) are the same (ids and timestamps masked).")
        else:
            i = min(len(ma), len(mb)) if i is None else i
            out.append(f"The conversations diverge at message **{i + 1}** (A has {len(ma)}, B has {len(mb)}).\n")
            for label, msgs in (("A", ma), ("B", mb)):
                m = msgs[i] if i < len(msgs) else None
                out.append(f"- **{label}**: "
                           + (f"*{md_text(m.role)}* — {md_text(short_text(m.text, 400))}" if m else "*(no message)*"))
    out.append("")
    out.append(f"Side by side: [normalized A]({make_uri('runs', a.id, normalized='1')}) · "
               f"[normalized B]({make_uri('runs', b.id, normalized='1')})")
    return "\n".join(out) + "\n"
