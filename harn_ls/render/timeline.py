"""Run timeline: one bar per stage, LLM call and tool call, as SVG and as a table.

Pure: takes a `RunRecord` (and the parsed `llm_transcript.jsonl`, when there
is one) and returns data, SVG text and Markdown. Where a step started and
how long it took come from, in order of preference:

* stages — `started_at` / `finished_at` (epoch seconds or RFC 3339);
* LLM calls — the turn log: `provider_call_response.timestamp` minus
  `response_ms` (the request line's timestamp when present); else
  `trace_spans` of kind `llm_call` (`start_ms` from the run start);
* tool calls — `tool_recordings[]` (`timestamp`, `duration_ms`).

A stage counts as *cached* when Harn marks it so (`status`/`outcome`
`cached`/`skipped`, or a truthy `metadata.cached` / `cache_hit` /
`from_checkpoint` / `checkpoint_hit`). The critical path is the chain of
stages that ends last, walked back through the stage that finished latest
before each one started.

Beyond `MAX_BARS` steps, bars are merged per kind into time slices so the
picture stays bounded; the table then lists the same merged rows.
"""

from __future__ import annotations

import bisect
import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harn_ls.formats.harn_time import epoch_seconds
from harn_ls.formats.transcripts import read_llm_transcript
from harn_ls.render.svg import esc, fmt_cost, fmt_int, fmt_ms, md_text, num, picture

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TypeVar

    from harn_ls.formats.runs import RunRecord
    from harn_ls.formats.transcripts import LlmTranscript

    _Num = TypeVar("_Num", int, float)

MAX_BARS = 200  # bars in the picture and rows in its table
WIDTH = 960
LABEL_W = 220
ROW_H = 16
TOP = 34
BOTTOM = 22

KIND_ORDER = ("stage", "llm", "tool")
KIND_LABEL = {"stage": "stage", "llm": "LLM call", "tool": "tool call"}
COLORS = {"stage": "#4a7fc1", "llm": "#8a63c9", "tool": "#2f9c78", "failed": "#d64541", "running": "#c9a227"}
CACHED_STAGE_WORDS = ("cached", "skipped", "cache_hit", "checkpoint_hit")
FAILED_WORDS = ("failed", "error", "errored", "cancelled", "canceled", "timeout", "timed_out", "rejected")


@dataclass(slots=True)
class Bar:
    """One bar of a run timeline."""

    kind: str  # stage | llm | tool
    label: str
    start_ms: float | None  # from the run's origin
    duration_ms: float | None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    status: str = ""
    failed: bool = False
    cached: bool = False
    running: bool = False
    critical: bool = False
    count: int = 1  # > 1 for an aggregated bar
    detail: str = ""  # model, tool id, …

    @property
    def end_ms(self) -> float | None:
        if self.start_ms is None:
            return None
        return self.start_ms + (self.duration_ms or 0)


@dataclass(slots=True)
class Timeline:
    """A run's timeline: its bars and time span."""

    bars: list[Bar]
    origin: float | None  # epoch seconds of t=0
    span_ms: float
    total_steps: int  # before aggregation
    aggregated: bool = False
    notes: list[str] = field(default_factory=list)


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _is_failed(*words: Any) -> bool:
    return any(isinstance(w, str) and w.lower() in FAILED_WORDS for w in words)


def _obj(v: Any) -> dict[str, Any]:
    """`v` when it is a JSON object, else an empty one (a field of the wrong type reads as absent)."""
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _is_cached(stage: dict[str, Any]) -> bool:
    if any(isinstance(stage.get(k), str) and stage[k].lower() in CACHED_STAGE_WORDS for k in ("status", "outcome")):
        return True
    meta = _obj(stage.get("metadata"))
    return any(meta.get(k) is True for k in ("cached", "cache_hit", "from_checkpoint", "checkpoint_hit"))


# ------------------------------------------------------------------ build
def build(run: RunRecord, llm_log: LlmTranscript | None = None) -> Timeline:
    """All bars of one run, times relative to the earliest known start."""
    data = _obj(run.data)
    raw: list[tuple[str, float | None, float | None, Bar]] = []  # (kind, abs start s, abs end s, bar)

    for i, st in enumerate(run.stages):
        if not isinstance(st, dict):
            continue
        s, e = epoch_seconds(st.get("started_at")), epoch_seconds(st.get("finished_at"))
        usage = _obj(st.get("usage"))
        status = _text(st.get("status"))
        label = st.get("node_id") or st.get("id") or f"stage {i + 1}"
        bar = Bar("stage", str(label), None, None, _int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                  _float(usage.get("total_cost")), status, _is_failed(status, st.get("outcome")), _is_cached(st),
                  running=(status == "running" or (s is not None and e is None)))
        models = _list(usage.get("models"))
        bar.detail = ", ".join(str(m) for m in models[:3])
        raw.append(("stage", s, e, bar))

    llm_bars = 0
    for step in (llm_log.steps if llm_log is not None else []):
        resp = _obj(step.response)
        req = _obj(step.request)
        ms = _float(resp.get("response_ms"))
        end = epoch_seconds(resp.get("timestamp"))
        start = epoch_seconds(req.get("timestamp"))
        if start is None and end is not None and ms is not None:
            start = end - ms / 1000
        if end is None and start is not None and ms is not None:
            end = start + ms / 1000
        model = resp.get("model") or req.get("model") or "?"
        calls = _list(resp.get("tool_calls"))
        names = ", ".join(str(c.get("name", "?")) for c in calls[:4] if isinstance(c, dict))
        bar = Bar("llm", f"{model}" + (f" #{step.iteration}" if step.iteration is not None else ""), None, None,
                  _int(resp.get("input_tokens")), _int(resp.get("output_tokens")),
                  _float(resp.get("cost") if resp.get("cost") is not None else resp.get("total_cost")),
                  "completed" if resp else "no response", _is_failed(resp.get("status"), resp.get("error") and "error"),
                  running=not resp)
        bar.detail = f"call {step.call_id or '?'}" + (f" → {names}" if names else "")
        raw.append(("llm", start, end, bar))
        llm_bars += 1

    origin_hint = epoch_seconds(run.started_at)
    if llm_bars == 0:
        for span in data.get("trace_spans") or []:
            if not isinstance(span, dict) or span.get("kind") != "llm_call" or origin_hint is None:
                continue
            st_ms, d_ms = _float(span.get("start_ms")), _float(span.get("duration_ms"))
            meta = _obj(span.get("metadata"))
            s = origin_hint + st_ms / 1000 if st_ms is not None else None
            e = s + d_ms / 1000 if s is not None and d_ms is not None else None
            bar = Bar("llm", str(span.get("name") or "llm call"), None, None, _int(meta.get("input_tokens")),
                      _int(meta.get("output_tokens")), _float(meta.get("cost")), "span", False)
            bar.detail = f"trace span {span.get('span_id')}"
            raw.append(("llm", s, e, bar))

    for rec in data.get("tool_recordings") or []:
        if not isinstance(rec, dict):
            continue
        s = epoch_seconds(rec.get("timestamp"))
        d = _float(rec.get("duration_ms"))
        e = s + d / 1000 if s is not None and d is not None else None
        result = rec.get("result")
        failed = rec.get("is_rejected") is True or _is_failed(result if isinstance(result, str) else None)
        status = "rejected" if rec.get("is_rejected") is True else (
            result if isinstance(result, str) and len(result) < 40 else "done")
        bar = Bar("tool", str(rec.get("tool_name") or "tool"), None, None, status=status, failed=failed)
        bar.detail = str(rec.get("tool_use_id") or "")
        raw.append(("tool", s, e, bar))

    starts = [s for _, s, _, _ in raw if s is not None]
    if origin_hint is not None:
        starts.append(origin_hint)
    origin = min(starts) if starts else None
    ends = [e for _, _, e, _ in raw if e is not None] + [s for _, s, _, _ in raw if s is not None]
    run_end = epoch_seconds(run.finished_at)
    if run_end is not None:
        ends.append(run_end)
    span_ms = max(0.0, (max(ends) - origin) * 1000) if origin is not None and ends else 0.0
    bars: list[Bar] = []
    for _, s, e, bar in raw:
        if origin is not None and s is not None:
            bar.start_ms = (s - origin) * 1000
            if e is not None:
                bar.duration_ms = max(0.0, (e - s) * 1000)
            elif bar.running:
                bar.duration_ms = max(0.0, span_ms - bar.start_ms)
        bars.append(bar)
    _mark_critical([b for b in bars if b.kind == "stage"] or bars)
    bars.sort(key=lambda b: (b.start_ms is None, b.start_ms if b.start_ms is not None else 0, KIND_ORDER.index(b.kind)))
    tl = Timeline(bars, origin, span_ms, len(bars))
    if len(bars) > MAX_BARS:
        tl.bars = aggregate(bars, span_ms)
        tl.aggregated = True
        tl.notes.append(f"{len(bars):,} steps merged into {len(tl.bars)} bars (per kind and time slice) to fit.")
    return tl


def _mark_critical(bars: list[Bar]) -> None:
    """Walk back from the bar that ends last through the bar that ended latest before each one started."""
    # (end, start, bar) of every timed bar: a bar with a start has an end (start + duration, or start)
    timed = sorted(((b.start_ms + (b.duration_ms or 0), b.start_ms, b) for b in bars if b.start_ms is not None),
                   key=lambda t: (t[0], t[1]))
    if not timed:
        return
    ends = [end for end, _start, _bar in timed]
    eps = 1.0  # ms: stages that touch count as one after the other
    i = len(timed) - 1
    while i >= 0:
        _end, start, cur = timed[i]
        cur.critical = True
        j = bisect.bisect_right(ends, start + eps) - 1
        while j >= 0 and (timed[j][2].critical or j >= i):
            j -= 1
        i = j


def aggregate(bars: list[Bar], span_ms: float) -> list[Bar]:
    """Merge bars per kind into equal time slices; never more than `MAX_BARS` results."""
    kinds = [k for k in KIND_ORDER if any(b.kind == k for b in bars)]
    slices = max(1, (MAX_BARS - 1) // max(1, len(kinds)))  # one row kept for the untimed
    width = span_ms / slices if span_ms > 0 else 1.0
    groups: dict[tuple[int, int], list[Bar]] = {}
    for b in bars:
        if b.start_ms is None:
            key = (KIND_ORDER.index(b.kind), -1)
        else:
            key = (KIND_ORDER.index(b.kind), min(slices - 1, int(b.start_ms / width)))
        groups.setdefault(key, []).append(b)
    out: list[Bar] = []
    untimed: list[Bar] = []
    for key in sorted(groups):
        members = groups[key]
        if key[1] == -1:
            untimed.extend(members)
            continue
        out.append(_merge(members))
    if untimed:
        out.append(_merge(untimed))
    out.sort(key=lambda b: (b.start_ms is None, b.start_ms or 0, KIND_ORDER.index(b.kind)))
    return out[:MAX_BARS]


def _sum(values: Iterable[_Num | None]) -> _Num | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def _merge(members: list[Bar]) -> Bar:
    if len(members) == 1:
        return members[0]
    kind = members[0].kind
    starts = [b.start_ms for b in members if b.start_ms is not None]
    ends = [b.end_ms for b in members if b.end_ms is not None]
    start = min(starts) if starts else None
    names: dict[str, int] = {}
    for b in members:
        names[b.label] = names.get(b.label, 0) + 1
    top = sorted(names.items(), key=lambda kv: -kv[1])[:3]
    bar = Bar(kind, f"{len(members)} {KIND_LABEL[kind]}s", start,
              (max(ends) - start) if start is not None and ends else None,
              _sum(b.tokens_in for b in members), _sum(b.tokens_out for b in members), _sum(b.cost for b in members),
              f"{sum(b.failed for b in members)} failed", any(b.failed for b in members), any(b.cached for b in members),
              any(b.running for b in members), any(b.critical for b in members), sum(b.count for b in members))
    bar.detail = ", ".join(f"{n} ×{c}" for n, c in top)
    return bar


# ------------------------------------------------------------------ SVG
def _hover(b: Bar) -> str:
    parts = [f"{KIND_LABEL[b.kind]}: {b.label}" if b.count == 1 else f"{b.label} (merged)"]
    if b.detail:
        parts.append(b.detail)
    parts.append(f"start +{fmt_ms(b.start_ms)} · duration {fmt_ms(b.duration_ms)}")
    if b.tokens_in is not None or b.tokens_out is not None:
        parts.append(f"tokens in {fmt_int(b.tokens_in) or '?'} / out {fmt_int(b.tokens_out) or '?'}")
    if b.cost is not None:
        parts.append(f"cost {fmt_cost(b.cost)}")
    flags = [w for w, on in (("FAILED", b.failed), ("cached", b.cached), ("running", b.running),
                             ("critical path", b.critical)) if on]
    if b.status or flags:
        parts.append(" · ".join(([b.status] if b.status else []) + flags))
    return "\n".join(parts)


def _ticks(span_ms: float) -> list[float]:
    if span_ms <= 0:
        return [0.0]
    raw = span_ms / 6
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(span_ms // step) + 1)]


def to_svg(tl: Timeline, title: str = "") -> str:
    n = len(tl.bars)
    plot_w = WIDTH - LABEL_W - 12
    height = TOP + max(1, n) * ROW_H + BOTTOM
    span = tl.span_ms if tl.span_ms > 0 else 1.0

    def x_of(ms: float) -> float:
        return LABEL_W + (ms / span) * plot_w

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="sans-serif" font-size="11" role="img" aria-label="{esc(title or "run timeline")}">',
        f"<title>{esc(title or 'Run timeline')}</title>",
        '<defs><pattern id="hl-cached" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="#9bb7dc"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/></pattern></defs>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
    ]
    legend = [("stage", COLORS["stage"]), ("LLM call", COLORS["llm"]), ("tool call", COLORS["tool"]),
              ("failed", COLORS["failed"]), ("cached", "url(#hl-cached)")]
    lx = 8
    for name, color in legend:
        parts.append(f'<rect x="{lx}" y="8" width="12" height="10" fill="{color}"/>'
                     f'<text x="{lx + 16}" y="17" fill="#333">{esc(name)}</text>')
        lx += 30 + 7 * len(name)
    parts.append(f'<rect x="{lx}" y="8" width="12" height="10" fill="none" stroke="#e07b00" stroke-width="2"/>'
                 f'<text x="{lx + 16}" y="17" fill="#333">critical path</text>')
    summary = f"{tl.total_steps:,} steps · {fmt_ms(tl.span_ms)}" + (" · merged" if tl.aggregated else "")
    parts.append(f'<text x="{WIDTH - 8}" y="17" fill="#555" text-anchor="end">{esc(summary)}</text>')
    axis_y = TOP + max(1, n) * ROW_H
    for t in _ticks(tl.span_ms):
        x = x_of(t)
        parts.append(f'<line x1="{num(x)}" y1="{TOP - 4}" x2="{num(x)}" y2="{axis_y}" stroke="#e6e6e6"/>'
                     f'<text x="{num(x)}" y="{axis_y + 14}" fill="#666" text-anchor="middle">{esc("+" + fmt_ms(t))}</text>')
    for i, b in enumerate(tl.bars):
        y = TOP + i * ROW_H
        label = b.label if len(b.label) <= 32 else b.label[:31] + "…"
        prefix = {"stage": "", "llm": "  ", "tool": "  "}[b.kind]
        parts.append(f'<g class="bar {b.kind}"><title>{esc(_hover(b))}</title>'
                     f'<text x="{LABEL_W - 6}" y="{y + 12}" fill="{COLORS["failed"] if b.failed else "#222"}" '
                     f'text-anchor="end" xml:space="preserve">{esc(prefix + label)}</text>')
        if b.start_ms is None:
            parts.append(f'<text x="{LABEL_W + 4}" y="{y + 12}" fill="#888">{esc("no time recorded")}</text></g>')
            continue
        x = x_of(b.start_ms)
        w = max(2.0, (b.duration_ms or 0) / span * plot_w)
        w = min(w, WIDTH - 4 - x) if x < WIDTH - 6 else 2.0
        fill = COLORS["failed"] if b.failed else ("url(#hl-cached)" if b.cached else
                                                  (COLORS["running"] if b.running else COLORS[b.kind]))
        stroke = ' stroke="#e07b00" stroke-width="2"' if b.critical else ""
        parts.append(f'<rect x="{num(x)}" y="{y + 2}" width="{num(w)}" height="{ROW_H - 4}" rx="2" fill="{fill}"{stroke}/>')
        tag = fmt_ms(b.duration_ms)
        if b.tokens_in is not None or b.tokens_out is not None:
            tag += f" · {fmt_int(b.tokens_in) or '?'}→{fmt_int(b.tokens_out) or '?'} tok"
        if b.cached:
            tag += " · cached"
        tx, anchor, color = x + w + 4, "start", "#555"
        if tx > WIDTH - 150:
            if x - LABEL_W >= 150:
                tx, anchor = x - 4, "end"  # left of the bar
            else:
                tx, color = x + 4, "#ffffff"  # inside a bar that spans the plot
        parts.append(f'<text x="{num(tx)}" y="{y + 12}" fill="{color}" text-anchor="{anchor}">{esc(tag)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------ table
def table(tl: Timeline) -> list[str]:
    """Markdown rows with the numbers of the picture (data text escaped by `md_text`)."""
    rows = ["| # | kind | step | start | duration | tokens in | tokens out | cost | status |",
            "|---|---|---|---|---|---|---|---|---|"]
    for i, b in enumerate(tl.bars[:MAX_BARS], 1):
        said = b.status.lower() in FAILED_WORDS
        flags = [w for w, on in (("**failed**", b.failed and not said), ("cached", b.cached), ("running", b.running),
                                 ("critical", b.critical)) if on]
        shown = f"**{md_text(b.status)}**" if said else md_text(b.status)
        status = " · ".join(([shown] if b.status else []) + flags)
        step = md_text(b.label) + (f" ({md_text(b.detail)})" if b.detail else "")
        rows.append(f"| {i} | {KIND_LABEL[b.kind]} | {step} | {'+' + fmt_ms(b.start_ms) if b.start_ms is not None else ''} | "
                    f"{fmt_ms(b.duration_ms) if b.duration_ms is not None else ''} | {fmt_int(b.tokens_in)} | "
                    f"{fmt_int(b.tokens_out)} | {fmt_cost(b.cost)} | {status} |")
    if len(tl.bars) > MAX_BARS:
        rows.append(f"\n…and {len(tl.bars) - MAX_BARS} more rows.")
    return rows


# ------------------------------------------------------------------ document part
LLM_LOG_MAX_BYTES = 32 * 1024 * 1024


def load_llm_log(run: RunRecord) -> LlmTranscript | None:
    """The run's parsed turn log, or None (absent, gone, or over the size limit)."""
    path = getattr(run, "llm_transcript_path", None)
    if not path:
        return None
    try:
        if os.path.getsize(path) > LLM_LOG_MAX_BYTES:
            return None
    except OSError:
        return None
    return read_llm_transcript(path)


def section(run: RunRecord) -> list[str]:
    """The run document's opening: the picture, then the same numbers as a table."""
    tl = build(run, load_llm_log(run))
    if not tl.bars:
        return ["## Timeline\n", "No stages, LLM calls or tool calls recorded yet.", ""]
    out = ["## Timeline\n", picture(to_svg(tl, f"Run {run.id}"), "run timeline"), ""]
    out.extend(f"> {md_text(n)}" for n in tl.notes)
    out.append(f"Total {fmt_ms(tl.span_ms)} · {tl.total_steps:,} step(s). "
               "Bars with an orange outline are on the critical path.\n")
    out.extend(table(tl))
    out.append("")
    return out
