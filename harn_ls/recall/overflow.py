"""A term-sorted view of a `NamespaceIndex`'s overflow postings (those appended since the last merge),
so a query finds a term's overflow postings by binary search instead of a scan of all of them."""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int32)


class OverflowByTerm:
    """The first `upto` overflow postings in a few runs, each ordered by term (arrival order kept
    within a term), the runs themselves in arrival order. The postings appended since (the tail: a
    batch or a few) are scanned; once the tail outgrows `_TAIL_MAX` it is sorted into a new run, which
    is merged with the newest runs while they are not over twice its size (so each run is over twice
    the next newer one: at most log2 of the overflow runs, each posting merged a few times, never the
    whole overflow per batch). A merge of the overflow empties it (`reset`)."""

    __slots__ = ("upto", "_runs")
    _TAIL_MAX = 8192

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.upto = 0
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []  # (positions, their terms), sorted by term

    def _take_tail(self, ov_term: np.ndarray, m: int) -> None:
        pos = np.arange(self.upto, m, dtype=np.int32)
        pos = pos[np.argsort(ov_term[self.upto:m], kind="stable")]  # equal terms keep arrival order
        while self._runs and len(self._runs[-1][0]) <= 2 * len(pos):  # each run over twice the next newer
            older, _ = self._runs.pop()  # an older run first: a stable sort keeps its positions first
            pos = np.concatenate((older, pos))
            pos = pos[np.argsort(ov_term[pos], kind="stable")]  # (two sorted runs: a merge)
        self._runs.append((pos, ov_term[pos]))
        self.upto = m

    def positions(self, ov_term: np.ndarray, m: int, tid: int) -> np.ndarray:
        """Positions (ascending) of term `tid` among the overflow's first `m` postings, whose terms
        are `ov_term[:m]` (postings are only appended, so the first `upto` are as sorted before)."""
        if self.upto > m:  # (emptied without a reset: start again)
            self.reset()
        if m - self.upto > self._TAIL_MAX:
            self._take_tail(ov_term, m)
        parts = []
        for pos, terms in self._runs:  # older runs first: their positions are all smaller
            lo, hi = np.searchsorted(terms, (tid, tid + 1))
            if hi > lo:
                parts.append(pos[lo:hi])
        if self.upto < m:
            tail = np.flatnonzero(ov_term[self.upto:m] == tid)
            if len(tail):
                parts.append(tail.astype(np.int32) + np.int32(self.upto))
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else _EMPTY
