"""Code lenses as plain data: facts above the code they describe, cache state above checkpoint
calls. A lens is found first (`fact_lens_ranges`, `checkpoint_lens_spots`) and its title and
command are filled later (`fact_lens`, `checkpoint_lens`), as `codeLens/resolve` asks."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harn_ls.formats.harn_source import find_checkpoint_calls
from harn_ls.model.fact_spans import FactSpan, FactSpanCache, fact_groups
from harn_ls.render.checkpoint_history import last_change
from harn_ls.render.limits import one_line
from harn_ls.render.uri import make_uri
from harn_ls.render.view_commands import NONE, OPEN, ViewCommand

if TYPE_CHECKING:
    from harn_ls.formats.checkpoints import CheckpointEntry, CheckpointFile
    from harn_ls.model.workspace import Workspace

FACTS_CHANGED = ViewCommand("facts changed · reopen", NONE)


@dataclass(frozen=True)
class CheckpointSpot:
    """A `checkpoint(...)` call in a `.harn` file: 0-based line and characters of the call."""
    line: int
    start_char: int
    end_char: int
    pipeline: str
    stage: str


def fact_lens_title(spans: list[FactSpan]) -> str:
    n = len({s.fact.id for s in spans})
    best = max(spans, key=lambda s: s.fact.confidence)
    title = f"{n} fact{'s' if n != 1 else ''} · {one_line(best.fact.kind, 60)} {best.fact.confidence:g}"
    if any(s.anchor.state == "stale" for s in spans):
        title += " · may be stale"
    elif any(s.anchor.state == "moved" for s in spans):
        title += " · re-anchored"
    return title  # plain text (lens titles are not Markdown), every data part capped


def checkpoint_lens_title(entry: CheckpointEntry | None, cf: CheckpointFile | None) -> str:
    if cf is not None and cf.retry:
        return "checkpoint file unreadable · Harn would rerun"
    if entry is None:
        return "not cached"
    if entry.keyed and entry.fingerprint:
        return f"cached · keyed {one_line(entry.fingerprint[:15], 60)}…"
    return "cached"


def fact_lens_ranges(ws: Workspace, abs_path: str, min_confidence: float,
                     cache: FactSpanCache | None = None) -> list[tuple[int, int]]:
    """One (start, end) per group of facts on the same current lines (1-based), top to bottom."""
    return sorted(fact_groups(ws, abs_path, min_confidence, cache))


def fact_lens_groups(ws: Workspace, abs_path: str, min_confidence: float,
                     cache: FactSpanCache | None = None) -> tuple[dict[tuple[int, int], list[FactSpan]], list[tuple[int, int]]]:
    """`fact_lens_ranges` and the groups they come from: with a cache, the same object until the
    file's spans change, so it can stand for the ranges in whatever is derived from them."""
    groups = fact_groups(ws, abs_path, min_confidence, cache)
    return groups, sorted(groups)


def fact_lens(ws: Workspace, abs_path: str, start: int, end: int, min_confidence: float,
              cache: FactSpanCache | None = None) -> ViewCommand:
    """The title of the lens over lines start..end and the fact it opens (the most confident)."""
    spans = fact_groups(ws, abs_path, min_confidence, cache).get((start, end), [])
    if not spans:
        return FACTS_CHANGED
    best = max(spans, key=lambda s: s.fact.confidence)
    return ViewCommand(fact_lens_title(spans), OPEN, [make_uri("facts", best.fact.id)])


def checkpoint_lens_spots(abs_path: str, text: str, encoding: str = "utf-16") -> list[CheckpointSpot]:
    """The checkpoint calls of a `.harn` source (none for other files); the pipeline is the file's stem.
    Columns in `encoding` (the session's position encoding)."""
    if not abs_path.endswith(".harn"):
        return []
    pipeline = os.path.basename(abs_path)[: -len(".harn")]
    return [CheckpointSpot(c.line, c.start_char, c.end_char, pipeline, c.stage) for c in find_checkpoint_calls(text, encoding)]


def checkpoint_lens(ws: Workspace, pipeline: str, stage: str) -> ViewCommand:
    """Whether the stage is cached (and keyed), and whether it changed since the previous run."""
    cf = ws.checkpoints.get(pipeline)
    entry = cf.entries.get(stage) if cf is not None else None
    title = checkpoint_lens_title(entry, cf)
    if entry is not None:
        change = last_change(ws, pipeline)
        if change is not None and change.changed(stage):
            title += " · changed since the last run"
    return ViewCommand(title, OPEN, [make_uri("checkpoints", pipeline)])
