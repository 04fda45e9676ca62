"""Memory at a glance: growth of a namespace per day, its top tags, and recall scores as split bars.

Pure and bounded: at most `MAX_BUCKETS` bars (days, or weeks when the log
spans longer), every data string XML-escaped (`svg.esc`).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from harn_ls.formats.harn_time import epoch_seconds
from harn_ls.render.svg import esc, md_text, num, picture

if TYPE_CHECKING:
    from harn_ls.formats.memory import MemoryNamespace
    from harn_ls.recall import Hit

MAX_BUCKETS = 90
TOP_TAGS = 15
STORE_COLOR = "#2f9c78"
FORGET_COLOR = "#d64541"
SEGMENT_COLORS = ("#4a7fc1", "#6b9bd6", "#8a63c9", "#a988dd", "#2f9c78", "#5cbf9b", "#c9a227", "#e0c35c")
KEY_BOOST_COLOR = "#e07b00"
TAG_BOOST_COLOR = "#b35c00"
COSINE_COLOR = "#d64541"


def _day(value: object) -> date | None:
    t = epoch_seconds(value)
    if t is None:
        return None
    try:
        return datetime.fromtimestamp(t, UTC).date()
    except (OverflowError, OSError, ValueError):
        return None


def growth(space: MemoryNamespace) -> tuple[list[tuple[date, int, int]], str]:
    """[(bucket start, stores, forgets)], and the bucket unit ('day' or 'week')."""
    stores = Counter(d for d in (_day(r.stored_at) for r in space.active.values()) if d is not None)
    forgets: Counter[date] = Counter()
    for ev in space.forgets:
        if not isinstance(ev, dict):
            continue
        d = _day(ev.get("forgotten_at"))
        ids = ev.get("forgotten_ids")
        if d is not None:
            forgets[d] += len(ids) if isinstance(ids, list) else 1
    days = sorted(set(stores) | set(forgets))
    if not days:
        return [], "day"
    first, last = days[0], days[-1]
    span = (last - first).days + 1
    unit, step = ("day", 1) if span <= MAX_BUCKETS else ("week", 7)
    if unit == "week":
        first = first - timedelta(days=first.weekday())
        span = (last - first).days + 1
    n = min(MAX_BUCKETS, (span + step - 1) // step)
    start = last - timedelta(days=n * step - 1) if (span + step - 1) // step > MAX_BUCKETS else first
    out = []
    for i in range(n):
        b = start + timedelta(days=i * step)
        s = sum(stores.get(b + timedelta(days=k), 0) for k in range(step))
        f = sum(forgets.get(b + timedelta(days=k), 0) for k in range(step))
        out.append((b, s, f))
    return out, unit


def growth_svg(buckets: list[tuple[date, int, int]], unit: str, title: str = "") -> str:
    w, h, left, top, bottom = 720, 170, 40, 24, 26
    plot_w, plot_h = w - left - 10, h - top - bottom
    peak = max([max(s, f) for _, s, f in buckets] or [1]) or 1
    n = max(1, len(buckets))
    bw = plot_w / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'font-family="sans-serif" font-size="11" role="img" aria-label="{esc(title or "memory growth")}">',
             f"<title>{esc(title or 'Memory growth')}</title>",
             f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>',
             f'<rect x="{left}" y="6" width="10" height="10" fill="{STORE_COLOR}"/>'
             f'<text x="{left + 14}" y="15" fill="#333">stores / {esc(unit)}</text>'
             f'<rect x="{left + 120}" y="6" width="10" height="10" fill="{FORGET_COLOR}"/>'
             f'<text x="{left + 134}" y="15" fill="#333">forgotten / {esc(unit)}</text>',
             f'<text x="{left - 4}" y="{top + 8}" fill="#666" text-anchor="end">{peak}</text>'
             f'<text x="{left - 4}" y="{top + plot_h}" fill="#666" text-anchor="end">0</text>'
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#ccc"/>']
    for i, (d, s, f) in enumerate(buckets):
        x = left + i * bw
        half = max(1.0, bw / 2 - 0.5)
        label = f"{d.isoformat()}{' (week)' if unit == 'week' else ''}: {s} stored, {f} forgotten"
        parts.append(f'<g class="bucket"><title>{esc(label)}</title>')
        if s:
            sh = s / peak * plot_h
            parts.append(f'<rect x="{num(x)}" y="{num(top + plot_h - sh)}" width="{num(half)}" height="{num(sh)}" '
                         f'fill="{STORE_COLOR}"/>')
        if f:
            fh = f / peak * plot_h
            parts.append(f'<rect x="{num(x + half)}" y="{num(top + plot_h - fh)}" width="{num(half)}" height="{num(fh)}" '
                         f'fill="{FORGET_COLOR}"/>')
        parts.append(f'<rect x="{num(x)}" y="{top}" width="{num(bw)}" height="{plot_h}" fill="transparent"/></g>')
    if buckets:
        parts.append(f'<text x="{left}" y="{h - 8}" fill="#666">{esc(buckets[0][0].isoformat())}</text>'
                     f'<text x="{left + plot_w}" y="{h - 8}" fill="#666" text-anchor="end">'
                     f'{esc(buckets[-1][0].isoformat())}</text>')
    parts.append("</svg>")
    return "".join(parts)


def namespace_section(space: MemoryNamespace) -> list[str]:
    """Growth picture + table, and the top tags, for the namespace document."""
    buckets, unit = growth(space)
    out = ["## At a glance\n"]
    if buckets:
        out.append(picture(growth_svg(buckets, unit, f"{space.namespace}: stores and forgets per {unit}"), "memory growth"))
        out.append("")
        active = [(d, s, f) for d, s, f in buckets if s or f]
        out.append(f"Active records by the {unit} they were stored, and ids forgotten per {unit} "
                   f"({len(active)} {unit}(s) with activity):\n")
        out.append(f"| {unit} | stored | forgotten |\n|---|---|---|")
        for d, s, f in active[-30:]:
            out.append(f"| {d.isoformat()} | {s} | {f} |")
        out.append("")
    else:
        out.append("No dated stores or forgets.\n")
    tags = Counter(t for r in space.active.values() for t in r.tags)
    if tags:
        out.append("Top tags: " + " · ".join(f"{md_text(t)} ({c})" for t, c in tags.most_common(TOP_TAGS)) + "\n")
    return out


# ------------------------------------------------------------------ recall
def score_segments(hit: Hit) -> list[tuple[str, float, str]]:
    """(label, value, color) parts that add up to the hit's score."""
    ex = hit.explain
    if ex is None:
        return [("score", max(0.0, hit.score), SEGMENT_COLORS[0])]
    lexical = [(f"term {t.term}", t.contribution, SEGMENT_COLORS[i % len(SEGMENT_COLORS)]) for i, t in enumerate(ex.terms)]
    lexical += [("key boost", ex.key_boost, KEY_BOOST_COLOR), ("tag boost", ex.tag_boost, TAG_BOOST_COLOR)]
    lexical = [(lab, v, c) for lab, v, c in lexical if v > 0]
    if ex.lexical_norm is not None:  # hybrid: weighted normalized lexical + weighted cosine
        lex_total = sum(v for _, v, _ in lexical) or 1.0
        scale = (ex.bm25_weight or 0) * ex.lexical_norm / lex_total
        segs = [(lab, v * scale, c) for lab, v, c in lexical]
        if ex.cosine:
            segs.append(("cosine", (ex.cosine_weight or 0) * ex.cosine, COSINE_COLOR))
        return segs
    if ex.cosine is not None and not ex.terms:
        return [("cosine", ex.cosine, COSINE_COLOR)]
    return lexical


def score_bar_svg(hit: Hit, max_score: float) -> str:
    w, h, bar_w = 520, 22, 440
    segs = score_segments(hit)
    scale = bar_w / max_score if max_score > 0 else 0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" '
             f'font-size="11" role="img" aria-label="score {esc(f"{hit.score:.4f}")}">',
             f'<rect x="0" y="3" width="{bar_w}" height="14" fill="#f0f0f0"/>']
    x = 0.0
    for label, value, color in segs:
        sw = value * scale
        if sw <= 0:
            continue
        parts.append(f'<rect x="{num(x)}" y="3" width="{num(max(0.5, sw))}" height="14" fill="{color}">'
                     f'<title>{esc(f"{label}: {value:.4f}")}</title></rect>')
        x += sw
    parts.append(f'<text x="{bar_w + 6}" y="14" fill="#333">{esc(f"{hit.score:.4f}")}</text></svg>')
    return "".join(parts)


def score_bar(hit: Hit, max_score: float) -> str:
    return picture(score_bar_svg(hit, max_score), "score bar")
