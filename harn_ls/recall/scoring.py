"""Harn's BM25 arithmetic over one namespace's postings, and the search that finds the records a
query can rank: every record with a score > 0, or, for a top k, only those that can still reach
the k-th best score.

The top-k search (`search`) visits the query's terms rarest first. For a term's candidates (its
records not scored yet) it proves most of them out before doing arithmetic on them: a per-code
table bounds what a record can score from this term (`QueryTerm.code_bounds`), the few with the
best codes are scored in full to learn a score k records reach (theta), and a candidate is kept
only if its bound plus the other terms' bounds reaches theta (the boosts counted only for records
another term flags). The survivors' exact partial scores prune again; the rest are scored in
full, the other terms looked up by binary search in their (ascending) postings or through a dense
code array. A term whose bound cannot lift a record to theta is never scanned (MaxScore). Across
namespaces the engine passes the k-th score already found as a starting theta (`floor`). Bounds
carry a relative slack far above rounding, so a skipped record provably scores below theta.

Every score is computed with the same IEEE operations in the same order as Harn's scalar formula
(see the package docstring), so a record gets the same bits whichever records are skipped: the
BM25 parts are summed per record in query order (a term the record lacks adds nothing, and
`x + 0.0 == x`), the field boosts are folded in their own sum, key before tag per query term, and
added last."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeAlias

import numpy as np

K1 = 1.2
B = 0.75
KEY_BOOST = 0.4
TAG_BOOST = 0.25

# Per uint16 posting code (`tf << 2 | flags`, 0 = the record lacks the term): tf as float64 (one gather
# instead of a shift and a cast), and Harn's boost addends, 0.0 where a flag is absent (`x + 0.0 == x`).
_CODES = np.arange(1 << 16, dtype=np.int64)
_TF_OF_CODE = (_CODES >> 2).astype(np.float64)
_KEY_OF_CODE = np.where(_CODES & 1, KEY_BOOST, 0.0)
_TAG_OF_CODE = np.where(_CODES & 2, TAG_BOOST, 0.0)
# the fold's first step, `(0.0 + key) + tag`, evaluated once per flag code
_FIRST_OF_CODE = np.array([(0.0 + (KEY_BOOST if c & 1 else 0.0)) + (TAG_BOOST if c & 2 else 0.0) for c in range(4)])[
    _CODES & 3]
del _CODES
# A term's bound is inflated by this much so that rounding in the computed score (a few ulps) can never
# make a skipped record score above the bound it was skipped by.
_BOUND_SLACK = 1e-9
# A term is looked up by binary search in its postings when they outnumber the records asked about this
# many times; below that, scattering all its postings into a scratch array and gathering is cheaper.
_SPARSE_RATIO = 16
# Up to this many candidates that only another term's boost could lift are simply kept (looked up).
_FEW_UNSURE = 2048
# Scores stay far below 1e6 (idf < 15 per query term), where a few ulps are under 1e-9.
_ABS_SLACK = 1e-9
# Code bounds: a table this long (tf < 256 exactly; larger tf share the last, loosest entry); and the
# number of postings from which a term's candidates are first filtered by them.
_CODE_TABLE = 1024
_PREFILTER_MIN = 8192
_EMPTY_SLOTS = np.zeros(0, dtype=np.int32)


def idf_of(n: int, df: int) -> float:
    return math.log1p((n - df + 0.5) / (df + 0.5))


def contributions(idf: float, codes: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """`idf * (tf * (k1 + 1)) / (tf + norm)` elementwise, for postings `codes` of records with `norms`
    (0.0 for code 0: a record without the term). Products and sums are commutative in IEEE
    arithmetic, so the in-place forms give the scalar formula's bits."""
    tf = _TF_OF_CODE[codes] if codes.dtype == np.uint16 else (codes >> 2).astype(np.float64)
    out: np.ndarray = tf * (K1 + 1.0)
    out *= idf
    out /= norms + tf
    return out


def _flag_index(codes: np.ndarray) -> np.ndarray:
    """Codes usable as indexes into the uint16 boost tables (only the flag bits matter there)."""
    return codes if codes.dtype == np.uint16 else (codes & 3).astype(np.uint16)


class FlaggedMemo:
    """Per index: term id -> the slots its postings flag, kept across queries until the postings
    change (`clear`); bounded, as it holds copies of slots."""

    __slots__ = ("_by_term", "_size", "_limit")

    def __init__(self, limit: int = 1 << 19) -> None:  # at most 2 MB of slots per namespace
        self._by_term: dict[int, np.ndarray] = {}
        self._size = 0
        self._limit = limit

    def get(self, key: int) -> np.ndarray | None:
        return self._by_term.get(key)

    def put(self, key: int, slots: np.ndarray) -> None:
        if self._size + len(slots) > self._limit:
            self.clear()
        self._by_term[key] = slots
        self._size += len(slots)

    def clear(self) -> None:
        self._by_term = {}
        self._size = 0


class QueryTerm:
    """One distinct query term in one namespace: its postings (slots ascending when `ordered`), idf,
    how often the query repeats it, and the most one record can gain from it: `bm25_bound` from its
    BM25 part alone, `bound` with the field boosts (only records in `flagged_slots()` get those)."""

    __slots__ = ("slots", "codes", "idf", "count", "bound", "bm25_bound", "ordered", "_flagged", "_memo", "_key",
                 "_dense")

    def __init__(self, slots: np.ndarray, codes: np.ndarray, idf: float, ordered: bool | Callable[[], bool],
                 memo: FlaggedMemo | None = None, key: int = -1) -> None:
        self.slots, self.codes, self.idf, self.ordered = slots, codes, idf, ordered  # (a callable: asked once)
        self.count = 0
        self.bound = self.bm25_bound = 0.0
        self._flagged: np.ndarray | None = None
        self._memo, self._key = memo, key  # where the flagged slots of these very postings are remembered
        self._dense: np.ndarray | None = None

    def finish(self) -> None:
        # tf / (tf + norm) < 1 for every record (norm >= k1 * (1 - b) > 0), so a part is below idf * (k1 + 1)
        self.bm25_bound = self.count * self.idf * (K1 + 1.0) * (1.0 + _BOUND_SLACK)
        self.bound = self.count * (self.idf * (K1 + 1.0) + KEY_BOOST + TAG_BOOST) * (1.0 + _BOUND_SLACK)

    def is_ordered(self) -> bool:
        if not isinstance(self.ordered, bool):
            self.ordered = bool(self.ordered())
        return self.ordered

    def code_bounds(self, norm_min: float) -> np.ndarray:
        """Per posting code (clipped to the table): the most a record with that code can score from
        this term alone, its norm being at least `norm_min` (the same rounded operations as the score,
        each monotonic, so never below it)."""
        codes = np.arange(_CODE_TABLE)
        tf = (codes >> 2).astype(np.float64)
        bm25 = self.idf * (tf * (K1 + 1.0)) / (tf + norm_min)
        table = self.count * (bm25 + np.where(codes & 1, KEY_BOOST, 0.0) + np.where(codes & 2, TAG_BOOST, 0.0))
        table *= 1.0 + _BOUND_SLACK
        table[-1] = self.bound  # the codes clipped to the last entry: any tf
        return table

    def flagged_slots(self) -> np.ndarray:
        """The slots whose posting carries a key or tag flag (the only records this term boosts)."""
        if self._flagged is None:
            got = self._memo.get(self._key) if self._memo is not None else None
            if got is None:
                got = self.slots[(self.codes & 3) != 0]
                if self._memo is not None:
                    self._memo.put(self._key, got)
            self._flagged = got
        return self._flagged

    def codes_at(self, cand: np.ndarray, nslots: int) -> np.ndarray:
        """This term's posting code for each candidate slot, 0 where the record lacks the term."""
        n = len(self.slots)
        if n > _SPARSE_RATIO * len(cand) and self.is_ordered():  # binary search in the (ascending) postings
            pos = np.searchsorted(self.slots, _probe(cand, self.slots.dtype))
            np.minimum(pos, n - 1, out=pos)
            codes = self.codes[pos]
            codes[self.slots[pos] != cand] = 0
            return codes
        if self._dense is None:  # a code per slot, kept for this query's later candidate sets
            self._dense = np.zeros(nslots, dtype=self.codes.dtype)
            self._dense[self.slots] = self.codes
        # (numpy types an op on an ndarray of unknown dtype as Any)
        return self._dense[cand]  # type: ignore[no-any-return]


def _probe(cand: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The candidates in the postings' dtype: searchsorted with two dtypes copies the whole postings
    into a common one on every call. A candidate too big for narrow postings wraps around, which is
    harmless: no posting holds it, and `codes_at` compares the real candidate with what it found."""
    return cand if cand.dtype == dtype else cand.astype(dtype)


def _sum_parts(order: list[QueryTerm], parts: dict[int, np.ndarray]) -> np.ndarray:
    """The BM25 parts summed in query order, repeats included (a fresh array). A term without parts
    is one the candidates lack: its part would be +0.0, and adding +0.0 to a sum >= +0.0 (or
    starting from it) leaves the same bits, so it is skipped."""
    acc: np.ndarray | None = None
    for t in order:
        part = parts.get(id(t))
        if part is None:
            continue
        acc = part.copy() if acc is None else acc.__iadd__(part)
    assert acc is not None
    return acc


def _fold_boosts(order: list[QueryTerm], codes: dict[int, np.ndarray]) -> np.ndarray:
    """Harn's boost fold: per query term in order, + 0.4 if a key token, then + 0.25 if a tag token.
    A term without codes is one the candidates lack: it would add +0.0 twice (or start the fold at
    `(0.0 + 0.0) + 0.0`), which changes no bits, so it is skipped."""
    boost: np.ndarray | None = None
    for t in order:
        got = codes.get(id(t))
        if got is None:
            continue
        index = _flag_index(got)
        if boost is None:
            boost = _FIRST_OF_CODE[index]
        else:
            boost += _KEY_OF_CODE[index]
            boost += _TAG_OF_CODE[index]
    assert boost is not None
    return boost


def _partial(own: QueryTerm, part: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The score the candidates would have if they held no other query term: never above their score
    (the other terms only add non-negative values, and every rounded step is monotonic)."""
    if own.count == 1:  # `part + (0.0 + key) + tag`, without the copies
        # (numpy types an op on an ndarray of unknown dtype as Any)
        return part + _FIRST_OF_CODE[_flag_index(codes)]  # type: ignore[no-any-return]
    # (numpy types an op on an ndarray of unknown dtype as Any)
    return (_sum_parts([own] * own.count, {id(own): part})  # type: ignore[no-any-return]
            + _fold_boosts([own] * own.count, {id(own): codes}))


def _score(order: list[QueryTerm], others: list[QueryTerm], norm: np.ndarray, nslots: int, cand: np.ndarray,
           own: QueryTerm, own_codes: np.ndarray, own_part: np.ndarray) -> np.ndarray:
    """Harn's lexical score of each candidate slot (`own`'s codes and parts for them given). Only
    `others` are looked up: the candidates lack every other query term (`search` visited it)."""
    norms = norm[cand]
    parts, codes = {id(own): own_part}, {id(own): own_codes}
    for t in others:
        codes[id(t)] = c = t.codes_at(cand, nslots)
        parts[id(t)] = contributions(t.idf, c, norms)
    acc = _sum_parts(order, parts)
    acc += _fold_boosts(order, codes)  # bm25 + boost: the same addition
    return acc


def _nonessential(distinct: list[QueryTerm], theta: float) -> set[int]:
    """The terms (ids) whose bounds, smallest first, sum below theta: a record holding no other query
    term scores below theta."""
    out: set[int] = set()
    total = 0.0
    for t in sorted(distinct, key=lambda t: t.bound):
        if total + t.bound >= theta:
            break
        total += t.bound
        out.add(id(t))
    return out


class _Boosts:
    """One query's per-record boost bounds: for a set of terms, the most the boosts of those of them
    that flag a record can add (a dense array over the slots), built once per set and reused by
    later candidate sets of the same query (the prefilter and the partial-score cut share it)."""

    __slots__ = ("_by_terms",)

    def __init__(self) -> None:
        self._by_terms: dict[tuple[int, ...], np.ndarray] = {}

    def of(self, others: list[QueryTerm], nslots: int) -> np.ndarray:
        key = tuple(id(u) for u in others)  # (the terms live as long as the query)
        got = self._by_terms.get(key)
        if got is None:
            got = self._by_terms[key] = np.zeros(nslots)
            for u in others:
                got[u.flagged_slots()] += u.bound - u.bm25_bound  # (a term's flagged slots are distinct)
        return got


def _boost_ok(partial: np.ndarray, theta: float, cand: np.ndarray, others: list[QueryTerm], nslots: int,
              boosts: _Boosts) -> np.ndarray:
    """Whether each candidate's partial score plus the other terms' BM25 bounds plus the boost bounds
    of the other terms that flag it reaches theta (lowered by `_ABS_SLACK` for the rounding)."""
    need = theta - sum(u.bm25_bound for u in others) - _ABS_SLACK
    # (numpy types an op on an ndarray of unknown dtype as Any)
    return partial + boosts.of(others, nslots)[cand] >= need  # type: ignore[no-any-return]


def _may_rank(partial: np.ndarray, theta: float, cand: np.ndarray, others: list[QueryTerm],
              nslots: int, boosts: _Boosts) -> np.ndarray:
    """Which candidates can still reach theta: their partial score plus the other terms' full bounds,
    then, when over `_FEW_UNSURE` pass, `_boost_ok`. (Keeping more records than needed is always safe;
    it only costs their lookups.) The thresholds are lowered by `_ABS_SLACK` for the rounding."""
    maybe = np.flatnonzero(partial >= theta - sum(u.bound for u in others) - _ABS_SLACK)
    if len(maybe) > _FEW_UNSURE:
        maybe = maybe[_boost_ok(partial[maybe], theta, cand[maybe], others, nslots, boosts)]
    return maybe


def _may_rank_codes(table: np.ndarray, codes: np.ndarray, theta: float, cand: np.ndarray,
                    others: list[QueryTerm], nslots: int, boosts: _Boosts) -> np.ndarray:
    """`_may_rank` with each candidate's partial score bounded by its code's entry in `table`: the
    first cut is a flag per code, gathered, so no bound is computed for a posting it drops."""
    ok = table >= theta - sum(u.bound for u in others) - _ABS_SLACK
    maybe = np.flatnonzero(np.take(ok, codes, mode="clip"))
    if len(maybe) > _FEW_UNSURE:
        partial = np.take(table, codes[maybe], mode="clip")
        maybe = maybe[_boost_ok(partial, theta, cand[maybe], others, nslots, boosts)]
    return maybe


def _best_codes(table: np.ndarray, codes: np.ndarray, size: int) -> np.ndarray:
    """Positions of `size` postings whose codes have the highest bounds in `table` (ties at the cut
    broken arbitrarily: any k scored records give a theta). A histogram of the codes finds the
    bound of the cut, so only the postings at or above it are partitioned, not all of them."""
    last = len(table) - 1
    hist = np.bincount(codes if codes.dtype == np.uint16 else np.minimum(codes, last), minlength=len(table))
    if len(hist) > len(table):  # codes past the table share its last entry
        hist[last] += hist[last + 1:].sum()
        hist = hist[: last + 1]
    by_bound = np.argsort(table)[::-1]
    cum = np.cumsum(hist[by_bound])
    cut = table[by_bound[int(np.searchsorted(cum, size))]]  # the bound of the code holding the size-th best
    sel = np.flatnonzero(np.take(table >= cut, codes, mode="clip"))
    if len(sel) > size:
        bounds = np.take(table, codes[sel], mode="clip")
        sel = sel[np.argpartition(bounds, len(bounds) - size)[len(bounds) - size:]]
    return sel


class _Unhandled:
    """Which of a term's postings are still its to score: live records that hold none of the terms
    visited before (those scored every record they hold that can rank, or ruled it out)."""

    __slots__ = ("_alive", "_visited", "_nslots", "filters")

    def __init__(self, alive: np.ndarray | None, visited: list[QueryTerm], nslots: int) -> None:
        self._alive, self._visited, self._nslots = alive, visited, nslots
        self.filters = alive is not None or bool(visited)

    def mask(self, cand: np.ndarray) -> np.ndarray:
        """Per candidate slot: True when it is still this term's to score."""
        keep = self._alive[cand] if self._alive is not None else np.ones(len(cand), dtype=bool)
        for u in self._visited:
            keep &= u.codes_at(cand, self._nslots) == 0
        return keep

    def positions(self, cand: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """The positions `pos` (into cand) still this term's to score."""
        return pos[self.mask(cand[pos])] if self.filters else pos


# (order, norm, norm_min, nslots, boosts): what `search` passes down once per query
_Scorer: TypeAlias = "tuple[list[QueryTerm], np.ndarray, float, int, _Boosts]"


def _prefilter(t: QueryTerm, others: list[QueryTerm], scorer: _Scorer, cand: np.ndarray, codes: np.ndarray,
               k: int, theta: float, unhandled: _Unhandled) -> tuple[np.ndarray, np.ndarray, float]:
    """The candidates of term t that their posting code alone does not rule out, and theta raised by
    scoring the few with the best codes first: no arithmetic on the postings that cannot rank. Only
    the postings kept are checked against `unhandled` (and theta is taken from unhandled ones)."""
    order, norm, norm_min, nslots, boosts = scorer
    table = t.code_bounds(norm_min)
    top = unhandled.positions(cand, _best_codes(table, codes, min(_sample_size(k), len(codes))))
    tc, tcodes = cand[top], codes[top]
    sample = _score(order, others, norm, nslots, tc, t, tcodes, contributions(t.idf, tcodes, norm[tc]))
    if len(sample) >= k:
        theta = max(theta, _kth(sample, k))
    if table[4:].min() + sum(u.bound for u in others) >= theta - _ABS_SLACK:  # (codes 0-3: tf 0, never stored)
        if not unhandled.filters:  # no code's bound is low enough to rule a record out
            return cand, codes, theta
        keep = unhandled.mask(cand)
        return cand[keep], codes[keep], theta
    keep = unhandled.positions(cand, _may_rank_codes(table, codes, theta, cand, others, nslots, boosts))
    return cand[keep], codes[keep], theta


def _score_all(order: list[QueryTerm], distinct: list[QueryTerm], norm: np.ndarray, alive: np.ndarray | None,
               nslots: int) -> tuple[np.ndarray, np.ndarray]:
    """Every live record's score, each term's postings added into per-slot sums (in query order):
    cheaper than lookups when most records hold several of the query's terms."""
    parts = {id(t): contributions(t.idf, t.codes, norm[t.slots]) for t in distinct}
    acc = np.zeros(nslots)
    boost = np.zeros(nslots)
    for t in order:
        acc[t.slots] += parts[id(t)]  # a term's slots are distinct: one addition per slot (0.0 + x == x first)
    for t in order:  # only flagged postings add a boost (+ 0.0 elsewhere changes nothing)
        flagged = np.flatnonzero(t.codes & 3)
        slots, index = t.slots[flagged], _flag_index(t.codes[flagged])
        boost[slots] += _KEY_OF_CODE[index]
        boost[slots] += _TAG_OF_CODE[index]
    cand = np.flatnonzero(acc)  # every part is > 0 (idf > 0, tf >= 1)
    if alive is not None:
        cand = cand[alive[cand]]
    scores = acc[cand]
    scores += boost[cand]
    return cand, scores


def _prunes_little(done: int, before: int, after: int, distinct: list[QueryTerm], theta: float) -> bool:
    """At the first term: the bounds kept most candidates and several terms stay essential, so
    looking the other terms up for each would cost more than adding up all postings (`_score_all`)."""
    return done == 1 and 2 * after > before and len(distinct) - len(_nonessential(distinct, theta)) > 2


def _sample_size(k: int) -> int:
    return max(16 * k, 256)


def _kth(values: np.ndarray, k: int) -> float:
    return float(np.partition(values, len(values) - k)[len(values) - k])


def search(order: list[QueryTerm], norm: np.ndarray, norm_min: float, alive: np.ndarray | None, nslots: int,
           k: int | None = None, floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(slots, scores) of live records with score > 0 — with `k`, possibly only those that can still
    rank in the top k (and score >= `floor`, when given: the k-th best score found elsewhere).

    Terms are visited smallest postings first. A term's records not scored yet are the candidates;
    with `k`, those whose score without the other terms plus the other terms' bounds stays below
    theta (a score k records are known to reach) are dropped before the other terms are looked up,
    and a term is skipped once it is non-essential (`_nonessential`): then every record it holds
    either was a candidate already or cannot rank."""
    distinct = list({id(t): t for t in order}.values())
    if k is None:
        return _score_all(order, distinct, norm, alive, nslots)
    for t in distinct:
        t.count = 0
    for t in order:
        t.count += 1
    for t in distinct:
        t.finish()
    theta = -math.inf if floor is None else floor
    visited: list[QueryTerm] = []  # terms whose records are scored or ruled out: later terms skip them
    boosts = _Boosts()
    done = 0
    out_slots: list[np.ndarray] = []
    out_scores: list[np.ndarray] = []
    best = np.zeros(0)  # the k best scores so far, unordered
    for t in sorted(distinct, key=lambda t: len(t.slots)):  # smallest postings first: they raise theta cheaply
        if id(t) in _nonessential(distinct, theta):
            continue  # and it stays so (theta only grows): a record only it holds cannot rank
        done += 1
        last = done == len(distinct)
        # A candidate lacks every term visited before (`_Unhandled`): only the rest can add to it.
        others = [u for u in distinct if u is not t and u not in visited]
        unhandled = _Unhandled(alive, list(visited), nslots)
        cand, codes = t.slots, t.codes  # every posting: no copy
        sampled = len(cand) > _PREFILTER_MIN
        if sampled:  # the dead and handled records are dropped from the few the bounds keep, not from all
            before = len(cand)
            cand, codes, theta = _prefilter(t, others, (order, norm, norm_min, nslots, boosts), cand, codes, k,
                                            theta, unhandled)
            if _prunes_little(done, before, len(cand), distinct, theta):
                return _score_all(order, distinct, norm, alive, nslots)
        elif unhandled.filters:
            keep = unhandled.mask(cand)
            cand, codes = cand[keep], codes[keep]
        if not last:  # a later term must skip what is scored (or ruled out) already
            visited.append(t)
        if not len(cand):
            continue
        part = contributions(t.idf, codes, norm[cand])
        if len(cand) > k:
            partial = _partial(t, part, codes)
            theta = max(theta, _kth(partial, k))  # k records score at least their partial score
            if not others:  # the partial score is the score
                keep = partial >= theta
                out_slots.append(cand[keep])
                out_scores.append(partial[keep])
                continue
            size = _sample_size(k)
            if not sampled and len(cand) > size >= k:  # the most promising few first: a higher theta prunes more
                top = np.argpartition(partial, len(partial) - size)[len(partial) - size:]
                sample = _score(order, others, norm, nslots, cand[top], t, codes[top], part[top])
                theta = max(theta, _kth(sample, k))
            keep = _may_rank(partial, theta, cand, others, nslots, boosts)
            if _prunes_little(done, len(cand), len(keep), distinct, theta):
                return _score_all(order, distinct, norm, alive, nslots)
            cand, codes, part = cand[keep], codes[keep], part[keep]
        scores = _score(order, others, norm, nslots, cand, t, codes, part)
        out_slots.append(cand)
        out_scores.append(scores)
        if not last:
            best = np.concatenate((best, scores))
            if len(best) >= k:
                best = np.partition(best, len(best) - k)[len(best) - k:]
                theta = max(theta, float(best.min()))
    if not out_slots:
        return _EMPTY_SLOTS, np.zeros(0)
    if len(out_slots) == 1:
        return out_slots[0], out_scores[0]
    return np.concatenate(out_slots), np.concatenate(out_scores)
