"""Facts that cover a source file, with their current anchors (the data behind hover and lenses).

`FactSpanCache` keeps them between requests: a code lens request and then one resolve per
lens all need the spans of the whole file, and a hover needs them again. It is owned by one
project (`lsp/project.py`) and used only on that project's worker thread, like the model.

Invalidation is per file and per fact, never "the whole model changed": after an append batch
the next request looks at the file's stamp (`Workspace.fact_file_stamps`, renewed whenever one
of its facts is added or removed); only when it moved does it compare the file's facts with the
ones it anchored (by identity; the model replaces a fact object when its record changes) and
anchor the new ones. A saved source file (`source_lines` hands back a new list) re-anchors that
file's facts only. (The stamp spares touching a thousand facts scattered over a 3 GB heap after
every batch: ~8 ms at 1M events.)

With a `SpanStore` attached (the server's, harn_ls/cache/spans.py), anchors computed in an earlier
run on the same file text are taken from it instead of being computed again (each looked up by its
own inputs: recorded range and snippet), and what is computed here is handed to it to be saved.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast

from harn_ls.cache.spans import SpanStore, input_key, lines_digest
from harn_ls.formats.fact_anchors import SEARCH_RADIUS, Anchor, anchor, normalized_lines, refusal, source_lines

if TYPE_CHECKING:  # (the fact classes load on first use: formats/fact_types.py)
    from harn_ls.formats.fact_types import Evidence, Fact, FileRange
    from harn_ls.model.workspace import Workspace

FactKey = tuple[str, int]  # (namespace, seq): a fact's key in `Workspace.facts`
# (fact, its file-range evidence on the file): what `_recheck` hands `_anchor_todo` to anchor
_Todo = tuple[FactKey, "Fact", list["Evidence"]]
MAX_DERIVED = 4096  # values kept per file by `FactSpanCache.derived` (one per hovered line)
_T = TypeVar("_T")


def _recorded(evidence: Evidence) -> FileRange:
    """The range a file-range evidence recorded (only those, with a range, are anchored)."""
    return cast("FileRange", evidence.range)


class FactSpan(NamedTuple):  # a tuple: made by the thousand when a busy file is anchored or restored
    fact: Fact
    evidence: Evidence  # one of the fact's file-range evidence on this file (`recorded` is its range)
    anchor: Anchor

    @property
    def recorded(self) -> FileRange:
        """The lines the evidence recorded (`anchor` says where they are now)."""
        return _recorded(self.evidence)


@dataclass
class _FileSpans:
    """One file's anchored facts: valid for `lines` (the saved text) and `reason`, checked against
    the model whenever `generation` differs from the workspace's."""
    generation: int
    lines: list[str] | None
    reason: str
    per_fact: dict[FactKey, tuple[Fact, list[FactSpan]]]
    stamp: int | None = None  # the file's `fact_file_stamps` value `per_fact` was checked against
    by_confidence: dict[float, list[FactSpan]] = field(default_factory=dict)
    groups: dict[float, dict[tuple[int, int], list[FactSpan]]] = field(default_factory=dict)
    derived: dict[tuple[object, ...], object] = field(default_factory=dict)  # `FactSpanCache.derived`: hovers by line
    digest: str | None = None  # state_spans.lines_digest(lines), computed when a store needs it


@dataclass
class CacheStats:
    """Counters of the fact span cache: served as stored, rechecked, anchored, reused, restored."""

    hits: int = 0  # served as stored (nothing changed)
    rechecked: int = 0  # the model changed: facts compared, only new ones anchored
    anchored: int = 0  # (fact, evidence) anchors computed in total
    reused: int = 0  # facts whose anchors were kept across a model change
    restored: int = 0  # anchors taken from the span store (computed by an earlier run on the same text)


class FactSpanCache:
    """Anchored fact spans per source file, for one workspace at a time (the newest one asked about).

    The lists and dicts handed out are the cache's own: callers read them, never change them."""

    def __init__(self, max_files: int = 64, store: SpanStore | None = None) -> None:
        self.max_files = max_files
        self.store = store  # anchors kept between runs (the server's); None: computed in this process only
        self.stats = CacheStats()
        self._ws: Workspace | None = None
        self._files: dict[str, _FileSpans] = {}
        self._to_restore: list[str] | None = None  # `restore`: the stored files not brought back yet

    def __len__(self) -> int:
        return len(self._files)

    def spans(self, ws: Workspace, abs_path: str, min_confidence: float) -> list[FactSpan]:
        """Every (fact, file_range evidence) pair on this file with confidence >= `min_confidence`,
        anchored against the saved file; facts in key order, evidence in record order."""
        entry = self._entry(ws, abs_path)
        return self._filtered(entry, min_confidence) if entry is not None else []

    def groups(self, ws: Workspace, abs_path: str, min_confidence: float) -> dict[tuple[int, int], list[FactSpan]]:
        """`group_by_range(self.spans(...))`, kept until the spans change (a lens request and every resolve)."""
        entry = self._entry(ws, abs_path)
        if entry is None:
            return {}
        out = entry.groups.get(min_confidence)
        if out is None:
            out = entry.groups[min_confidence] = group_by_range(self._filtered(entry, min_confidence))
        return out

    def derived(self, ws: Workspace, abs_path: str, min_confidence: float, key: tuple[object, ...],
                compute: Callable[[list[FactSpan]], _T]) -> _T:
        """`compute(self.spans(...))`, kept under `key` until the file's spans change (the hover of a
        line: asked again and again as the mouse moves, and after every batch that left the file alone)."""
        entry = self._entry(ws, abs_path)
        if entry is None:
            return compute([])
        full_key = (min_confidence, *key)
        try:
            return cast(_T, entry.derived[full_key])  # (what `compute` gave for this `key` before)
        except KeyError:
            pass
        if len(entry.derived) >= MAX_DERIVED:
            entry.derived.clear()
        out = entry.derived[full_key] = compute(self._filtered(entry, min_confidence))
        return out

    def _entry(self, ws: Workspace, abs_path: str) -> _FileSpans | None:
        if ws is not self._ws:
            self._files.clear()
            self._ws = ws
        rel = ws.relpath(abs_path)
        if rel is None:
            return None
        if rel not in ws.facts_by_file:
            self._files.pop(rel, None)
            return None
        full = os.path.join(ws.root, rel)
        lines = source_lines(full, ws.root)  # confined + capped: a link to /dev/zero or out of the project is refused
        reason = refusal(full) or ""
        entry = self._files.pop(rel, None)  # popped and put back: the dict's order is least recently used first
        if entry is None or entry.lines is not lines or entry.reason != reason:
            entry = _FileSpans(-1, lines, reason, {})
        if entry.generation != ws.generation:
            self._recheck(ws, rel, full, entry)
        else:
            self.stats.hits += 1
        self._files[rel] = entry
        while len(self._files) > self.max_files:
            del self._files[next(iter(self._files))]
        return entry

    @staticmethod
    def _filtered(entry: _FileSpans, min_confidence: float) -> list[FactSpan]:
        out = entry.by_confidence.get(min_confidence)
        if out is None:
            out = [s for _fact, spans in entry.per_fact.values() for s in spans
                   if s.fact.confidence >= min_confidence]
            entry.by_confidence[min_confidence] = out
        return out

    def _recheck(self, ws: Workspace, rel: str, full: str, entry: _FileSpans) -> None:
        """Bring `entry` up to the model: keep the anchors of facts that are still the same object."""
        self.stats.rechecked += 1
        old = entry.per_fact
        stamp = ws.fact_file_stamps.get(rel)
        if stamp is not None and stamp == entry.stamp:
            self.stats.reused += len(old)  # the usual case after an append elsewhere: nothing to redo
            entry.generation = ws.generation
            return
        entry.stamp = stamp
        keys = ws.facts_by_file.get(rel, ())
        facts = ws.facts
        if len(keys) == len(old) and all(k in old and facts.get(k) is old[k][0] for k in keys):
            self.stats.reused += len(old)  # a fact changed and changed back, or the first check of an entry
            entry.generation = ws.generation
            return
        fresh: dict[FactKey, tuple[Fact, list[FactSpan]]] = {}
        todo: list[_Todo] = []  # facts to anchor, with their evidence on this file
        for key in sorted(keys):
            fact = facts.get(key)
            if fact is None:
                continue
            kept = old.get(key)
            if kept is not None and kept[0] is fact:
                fresh[key] = kept
                self.stats.reused += 1
                continue
            fresh[key] = (fact, [])  # keeps key order; the spans are filled below
            todo.append((key, fact, [ev for ev in fact.evidence if ev.range is not None and ev.range.path == rel]))
        self._anchor_todo(rel, full, entry, todo, fresh)
        entry.per_fact = fresh
        entry.by_confidence = {}
        entry.groups = {}
        entry.derived = {}
        entry.generation = ws.generation

    def _anchor_todo(self, rel: str, full: str, entry: _FileSpans, todo: list[_Todo],
                     fresh: dict[FactKey, tuple[Fact, list[FactSpan]]]) -> None:
        """Fill `fresh[key]` for each (key, fact, evidence) of `todo`: anchors from the store when it
        holds them for this text, the others computed (and then handed to the store)."""
        lines, store = entry.lines, self.store
        if store is not None and lines is None:
            store.drop(rel)  # a missing or refused file: nothing stored is of use for it
        known = digest = None
        if store is not None and lines is not None and todo:  # (a store only with lines)
            digest = entry.digest = entry.digest or lines_digest(lines)
            known = store.anchors(rel, full, digest)
        found = [[known.get(input_key(ev)) for ev in evidence] if known is not None else [None] * len(evidence)
                 for _k, _f, evidence in todo]
        missing = sum(a is None for anchors in found for a in anchors)
        normed = _normalized_for(lines, missing) if missing else None
        for (key, fact, evidence), anchors in zip(todo, found, strict=True):  # (found: one list per todo, one per evidence)
            fresh[key] = (fact, [FactSpan(fact, ev, a if a is not None else anchor(
                lines, _recorded(ev).start, _recorded(ev).end, ev.snippet, entry.reason, normed))
                for ev, a in zip(evidence, anchors, strict=True)])
        self.stats.anchored += missing
        self.stats.restored += sum(len(evidence) for _k, _f, evidence in todo) - missing
        if store is not None and digest is not None and (missing or known is None):
            store.remember(rel, full, digest,
                           {input_key(s.evidence): s.anchor for _f, spans in fresh.values() for s in spans})

    def restore(self, ws: Workspace, budget_s: float = 0.01) -> bool:
        """Bring back the spans of the files the store holds (the most recently used `max_files`),
        for about `budget_s` per call; True once all are back. Run after a server start, so the
        first hover or lens on such a file is served as a warm one is. Each file goes through the
        same checks as a request (read confined to the project, stat and text compared with the
        store's), so what comes back is what a request would have computed."""
        if self.store is None:
            return True
        if self._to_restore is None:
            self._to_restore = self.store.recent(self.max_files)
        deadline = time.perf_counter() + budget_s
        while self._to_restore:
            rel = self._to_restore.pop(0)
            if rel in ws.facts_by_file:
                self._entry(ws, os.path.join(ws.root, rel))
            if time.perf_counter() >= deadline:
                break
        return not self._to_restore

    def take_save_request(self) -> bool:
        """True once per stretch of unsaved anchors: the caller then schedules one `save_store`."""
        store = self.store
        if store is None or not store.unsaved or store.save_requested:
            return False
        store.save_requested = True
        return True

    def save_store(self) -> bool:
        """Write the span store if it holds anchors not saved yet (project thread; never raises)."""
        if self.store is None:
            return False
        self.store.save_requested = False
        return self.store.save()


def _normalized_for(lines: list[str] | None, n_anchors: int) -> list[str] | None:
    """The whole file normalised once when the anchors to compute would normalise more lines
    than it has (each looks at up to 2 * SEARCH_RADIUS lines); None lets each anchor do its own."""
    if lines is None or n_anchors * 2 * SEARCH_RADIUS < len(lines):
        return None
    return normalized_lines(lines)


def fact_spans(ws: Workspace, abs_path: str, min_confidence: float, cache: FactSpanCache | None = None) -> list[FactSpan]:
    """`cache.spans(...)`, or computed afresh without a cache (the CLI, tests)."""
    return (cache if cache is not None else FactSpanCache(max_files=1)).spans(ws, abs_path, min_confidence)


def fact_groups(ws: Workspace, abs_path: str, min_confidence: float,
                cache: FactSpanCache | None = None) -> dict[tuple[int, int], list[FactSpan]]:
    """`cache.groups(...)`, or computed afresh without a cache."""
    return (cache if cache is not None else FactSpanCache(max_files=1)).groups(ws, abs_path, min_confidence)


def group_by_range(spans: list[FactSpan]) -> dict[tuple[int, int], list[FactSpan]]:
    """Spans keyed by their current (start, end) lines, 1-based: one lens per key."""
    groups: dict[tuple[int, int], list[FactSpan]] = {}
    for s in spans:
        groups.setdefault((s.anchor.start, s.anchor.end), []).append(s)
    return groups


def spans_at(spans: list[FactSpan], line: int) -> list[FactSpan]:
    """The spans whose current range covers this 1-based line."""
    return [s for s in spans if s.anchor.start <= line <= s.anchor.end]
