"""Hover on code covered by a fact's `file_range` evidence: what the agent believes about it.

Every string below that comes from the fact is escaped or a code span: a claim cannot draw its
own "**observation** · confidence" line, a link, an image or HTML. The hover is sent as plain
MarkupContent, which clients never treat as trusted (no command: links run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harn_ls.model.fact_spans import FactSpan, FactSpanCache, fact_spans, spans_at
from harn_ls.render.limits import HOVER_FACTS, HOVER_VALUE_BYTES, MAX_RESPONSE_BYTES, cap_response
from harn_ls.render.markdown import capped_markdown, cell, inline, link, short_text
from harn_ls.render.uri import make_uri

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace

EVIDENCE_SHOWN = 10
WIDE_SPAN = 64  # lines: a span over more is not listed line by line in `LineIndex`


@dataclass(frozen=True)
class HoverView:
    """A hover's Markdown and the code lines it covers."""

    markdown: str
    first_line: int  # 0-based lines of the code the facts cover
    last_line: int


def _one_fact(s: FactSpan) -> str:
    f = s.fact
    stale = ""
    if s.anchor.state == "stale":
        stale = "\n\n⚠ **may be stale**: the evidence snippet is no longer in this range."
    elif s.anchor.state == "moved":
        stale = f"\n\n↪ re-anchored: recorded at lines {int(s.recorded.start)}-{int(s.recorded.end)}."
    ev_lines = [f"- {cell(ev.kind, 60)} {inline(ev.ref, 300)}"
                + (f" — {inline(short_text(ev.snippet, 60))}" if ev.snippet else "") for ev in f.evidence[:EVIDENCE_SHOWN]]
    if len(f.evidence) > EVIDENCE_SHOWN:
        ev_lines.append(f"- … {len(f.evidence) - EVIDENCE_SHOWN} more")
    if isinstance(f.provenance, dict):
        prov = ", ".join(f"{short_text(k, 40)}: {short_text(v, 40)}" for k, v in list(f.provenance.items())[:10])
    else:
        prov = short_text(f.provenance, 200)
    uri = make_uri("facts", f.id)
    return (f"**{cell(f.kind, 60)}** · confidence **{f.confidence:g}** · asserted {cell(f.asserted_at, 80)}\n\n"
            f"{capped_markdown(f.claim, HOVER_VALUE_BYTES, link('open the fact', uri))}{stale}\n\n"
            + "\n".join(ev_lines)
            + (f"\n\nProvenance: {cell(prov, 600)}" if prov else "")
            + f"\n\n{link('Open fact', uri)}")


def hover_markdown(spans: list[FactSpan]) -> str:
    """The hover for the facts covering one position: at most `HOVER_FACTS` facts (most confident
    first), each claim cut at `HOVER_VALUE_BYTES`, the whole at most `MAX_RESPONSE_BYTES`."""
    spans = sorted(spans, key=lambda s: -s.fact.confidence)
    parts = [_one_fact(s) for s in spans[:HOVER_FACTS]]
    if len(spans) > HOVER_FACTS:
        parts.append(f"… and {len(spans) - HOVER_FACTS} more fact(s) on these lines (see the Memory & Facts view).")
    return cap_response("\n\n---\n\n".join(parts), MAX_RESPONSE_BYTES)


def hover_at(ws: Workspace, abs_path: str, line: int, min_confidence: float,
             cache: FactSpanCache | None = None) -> HoverView | None:
    """The hover at a 0-based `line` of a source file, or None when no fact covers it (with a
    cache: rendered once per line and version of the file's spans, found through a line index)."""
    if cache is None:
        return _hover_view(spans_at(fact_spans(ws, abs_path, min_confidence), line + 1))

    def render(spans: list[FactSpan]) -> HoverView | None:
        index = cache.derived(ws, abs_path, min_confidence, ("lines",), LineIndex)
        return _hover_view(index.at(line + 1))
    return cache.derived(ws, abs_path, min_confidence, ("hover", line), render)


class LineIndex:
    """`spans_at` for every line without looking at every span: each span listed under the lines it
    covers (a span over more than WIDE_SPAN lines is checked on each lookup instead)."""

    def __init__(self, spans: list[FactSpan]) -> None:
        self.spans = spans
        self.by_line: dict[int, list[int]] = {}
        self.wide: list[int] = []
        for i, s in enumerate(spans):
            if s.anchor.end - s.anchor.start >= WIDE_SPAN:
                self.wide.append(i)
                continue
            for ln in range(s.anchor.start, s.anchor.end + 1):
                self.by_line.setdefault(ln, []).append(i)

    def at(self, line: int) -> list[FactSpan]:
        """The spans covering this 1-based line, in their order in `spans` (as `spans_at`)."""
        found = self.by_line.get(line, [])
        wide = [i for i in self.wide if self.spans[i].anchor.start <= line <= self.spans[i].anchor.end]
        return [self.spans[i] for i in (sorted(found + wide) if wide else found)]


def _hover_view(hits: list[FactSpan]) -> HoverView | None:
    if not hits:
        return None
    return HoverView(hover_markdown(hits), min(s.anchor.start for s in hits) - 1, max(s.anchor.end for s in hits) - 1)
