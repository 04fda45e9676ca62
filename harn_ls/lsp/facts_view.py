"""Facts that cover a source file, with their current anchors (shared by hover and lenses)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from harn_ls.staleness import Anchor, anchor, source_lines


@dataclass(frozen=True)
class FactSpan:
    fact: object
    evidence: object
    anchor: Anchor


def fact_spans(ws, abs_path: str, min_confidence: float) -> list[FactSpan]:
    """Every (fact, file_range evidence) pair on this file, anchored against the saved file."""
    rel = ws.relpath(abs_path)
    if rel is None:
        return []
    facts = ws.facts_for_file(rel)
    if not facts:
        return []
    lines = source_lines(os.path.join(ws.root, rel))
    out = []
    for fact in facts:
        if fact.confidence < min_confidence:
            continue
        for ev in fact.evidence:
            if ev.range is not None and ev.range.path == rel:
                out.append(FactSpan(fact, ev, anchor(lines, ev.range.start, ev.range.end, ev.snippet)))
    return out


def group_by_range(spans: list[FactSpan]) -> dict[tuple[int, int], list[FactSpan]]:
    groups: dict[tuple[int, int], list[FactSpan]] = {}
    for s in spans:
        groups.setdefault((s.anchor.start, s.anchor.end), []).append(s)
    return groups
