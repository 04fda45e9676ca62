"""Facts that cover a source file, with their current anchors (shared by hover and lenses)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from harn_ls.staleness import Anchor, anchor, refusal, source_lines


@dataclass(frozen=True)
class FactSpan:
    fact: object
    evidence: object
    anchor: Anchor


_CACHE_ATTR = "_lsp_fact_spans"
_CACHE_MAX = 64


def fact_spans(ws, abs_path: str, min_confidence: float) -> list[FactSpan]:
    """Every (fact, file_range evidence) pair on this file, anchored against the saved file.

    Cached per workspace until its model changes (generation) or the file does
    (source_lines hands back a new list): a code lens request and then one
    resolve per lens all need the spans of the whole file, which on a file
    with hundreds of facts cost milliseconds each time."""
    rel = ws.relpath(abs_path)
    if rel is None:
        return []
    if rel not in ws.facts_by_file:
        return []
    full = os.path.join(ws.root, rel)
    lines = source_lines(full, ws.root)  # confined + capped: a link to /dev/zero or out of the project is refused
    cache = ws.__dict__.setdefault(_CACHE_ATTR, {})
    key = (rel, min_confidence)
    hit = cache.get(key)
    if hit is not None and hit[0] == ws.generation and hit[1] is lines and lines is not None:
        return hit[2]
    out = _spans(ws.facts_for_file(rel), rel, lines, min_confidence, refusal(full) or "")
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = (ws.generation, lines, out)
    return out


def _spans(facts, rel: str, lines, min_confidence: float, reason: str = "") -> list[FactSpan]:
    out = []
    for fact in facts:
        if fact.confidence < min_confidence:
            continue
        for ev in fact.evidence:
            if ev.range is not None and ev.range.path == rel:
                out.append(FactSpan(fact, ev, anchor(lines, ev.range.start, ev.range.end, ev.snippet, reason)))
    return out


def group_by_range(spans: list[FactSpan]) -> dict[tuple[int, int], list[FactSpan]]:
    groups: dict[tuple[int, int], list[FactSpan]] = {}
    for s in spans:
        groups.setdefault((s.anchor.start, s.anchor.end), []).append(s)
    return groups
