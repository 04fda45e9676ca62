"""A term-sorted view of a `NamespaceIndex`'s overflow postings (those appended since the last merge),
so a query finds a term's overflow postings by binary search instead of a scan of all of them."""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int32)


class OverflowByTerm:
    """The first `upto` overflow postings ordered by term, arrival order kept within a term: their
    positions and their terms. The postings appended since (the tail: a batch or a few) are scanned;
    once the tail outgrows `_TAIL_MAX` and an eighth of the sorted part, one stable sort takes it in
    (the sorted part is one run, so the sort is a merge). A merge of the overflow empties it (`reset`)."""

    __slots__ = ("upto", "_pos", "_tid")
    _TAIL_MAX = 8192

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.upto = 0
        self._pos = self._tid = _EMPTY

    def positions(self, ov_term: np.ndarray, m: int, tid: int) -> np.ndarray:
        """Positions (ascending) of term `tid` among the overflow's first `m` postings, whose terms
        are `ov_term[:m]` (postings are only appended, so the first `upto` are as sorted before)."""
        if self.upto > m:  # (emptied without a reset: start again)
            self.reset()
        if m - self.upto > max(self._TAIL_MAX, self.upto >> 3):
            pos = np.concatenate((self._pos, np.arange(self.upto, m, dtype=np.int32)))
            pos = pos[np.argsort(ov_term[pos], kind="stable")]  # equal terms keep arrival order
            self._pos, self._tid, self.upto = pos, ov_term[pos], m
        lo, hi = np.searchsorted(self._tid, (tid, tid + 1))
        sorted_part = self._pos[lo:hi]
        if self.upto == m:
            return sorted_part
        tail = np.flatnonzero(ov_term[self.upto:m] == tid)  # (all past the sorted part: order kept)
        return np.concatenate((sorted_part, tail.astype(np.int32) + np.int32(self.upto))) if len(tail) else sorted_part
