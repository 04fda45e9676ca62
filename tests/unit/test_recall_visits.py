"""The top-k search's shortcuts of this round, each against the full ranking, bit for bit:
- a term's candidates are checked against the dead slots and the terms visited before only after
  the code bounds kept them (`scoring._Unhandled`), and only the unvisited terms are looked up;
- the prefilter's sample comes from a histogram of the codes (`scoring._best_codes`);
- across namespaces the smallest index is ranked first, for its floor (`RecallEngine._visit_order`).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from harn_ls.recall import RecallEngine, scoring, tokenize
from tests.unit.test_recall import Live
from tests.unit.test_recall_pruning import SETTINGS, VOCAB, WEIGHTS, _full_top, _records, engine_of, thresholds


def _shared_term_queries(rng: random.Random, n: int) -> list[list[str]]:
    """Queries of 2-4 frequent terms: most records hold several of them, so later terms meet records
    an earlier term scored or ruled out."""
    out = [["w0", "w1"], ["w1", "w0"], ["w0", "w1", "w2", "w3"], ["w2", "w2", "w0"], ["w3", "w0", "w9"]]
    out += [tokenize(" ".join(rng.choices(VOCAB[:12], k=rng.randint(2, 4)))) for _ in range(n)]
    return out


def _forget(ids: list[str], tag: str) -> dict:
    return {"type": "forget", "id": tag, "namespace": "t", "predicate": {"id": ids}, "forgotten_ids": ids,
            "forgotten_at": "2026-12-01T00:00:00Z"}


@pytest.mark.parametrize("setting", SETTINGS)
def test_dead_slots_and_visited_terms_checked_after_the_bounds(setting):
    live = Live()
    events = _records(1500, 31)
    live.feed(*events[:1200])
    live.feed(_forget([e["id"] for e in events[100:400:3]], "f0"))  # dead slots, not yet renumbered
    live.feed(*events[1200:])  # overflow postings after the main ones
    idx = live.engine.indexes["t"]
    assert idx._ndead and idx._m
    with thresholds(*setting):
        for q in _shared_term_queries(random.Random(3), 40):
            for k in (1, 5, 10, 50):
                got = idx.top_lexical(q, k)
                assert got == _full_top(idx, q, k), (q, k)
                assert all(seq in idx.docs for _, seq in got)  # never a forgotten record


def test_a_sample_of_handled_records_still_ranks_exactly(monkeypatch):
    # Every record holds w0 and w1: the sample of the second term visited is all records the first
    # one handled, so its theta must come from the few left (or from none).
    live = Live()
    rng = random.Random(5)
    live.feed(*[{"type": "store", "id": f"r{i}", "namespace": "t", "key": f"k{i}",
                 "value": " ".join(["w0"] * rng.randint(1, 4) + ["w1"] * rng.randint(1, 4) + ["w2"] * (i % 7 == 0)),
                 "text": "", "tags": ["w1"] if i % 5 == 0 else [], "stored_at": f"2026-01-01T00:00:{i % 60:02d}Z"}
                for i in range(400)])
    idx = live.engine.indexes["t"]
    with thresholds(0, 3, 0, 0):
        for q in (["w0", "w1"], ["w2", "w0", "w1"], ["w1", "w1", "w0"], ["w2", "w1"]):
            for k in (1, 3, 10, 399, 400):
                assert idx.top_lexical(q, k) == _full_top(idx, q, k), (q, k)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_best_codes_are_the_postings_with_the_highest_bounds(dtype):
    rng = np.random.default_rng(7)
    table = np.sort(rng.random(scoring._CODE_TABLE))[rng.permutation(scoring._CODE_TABLE)]
    table[:4] = 0.0
    for n, size in ((5000, 256), (300, 300), (1000, 1), (64, 10)):
        codes = rng.integers(4, 1 << 15 if dtype == np.uint32 else 1100, n).astype(dtype)  # some past the table
        codes[: n // 3] = rng.choice([5, 9, 77], n // 3)  # large groups of one code: ties at the cut
        pos = scoring._best_codes(table, codes, size)
        assert len(pos) == size == len(set(pos.tolist()))
        bounds = np.take(table, codes, mode="clip")
        assert sorted(bounds[pos].tolist()) == sorted(bounds.tolist())[n - size:]


def test_the_namespace_order_changes_no_answer(monkeypatch):
    engine = engine_of([700, 40, 300, 5, 120], 11)
    assert engine._visit_order() == ["ns3", "ns1", "ns4", "ns2", "ns0"]  # smallest first
    orders = {"smallest first": RecallEngine._visit_order,
              "by name": lambda self: sorted(self.indexes),
              "largest first": lambda self: sorted(self.indexes, key=lambda n: -len(self.indexes[n]))}
    rng = random.Random(2)
    queries = ["w0", "w0 w1", "w3 w0 w3", "", "nothing here"]
    queries += [" ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(1, 3))) for _ in range(25)]
    for query in queries:
        for k in (1, 10, 40):
            answers = []
            for visit in orders.values():
                monkeypatch.setattr(RecallEngine, "_visit_order", visit)
                r = engine.recall(query, k=k, explain=True)
                answers.append(([(h.namespace, h.id, h.score, h.explain) for h in r.hits], r.mode, r.note,
                                list(r.namespaces.items())))
            assert [name for name, _ in answers[0][3]] == sorted(engine.indexes)  # listed by name, whatever the visits
            assert all(a == answers[0] for a in answers[1:]), (query, k)


@pytest.mark.parametrize("tail_max", [0, 64, 8192])
def test_overflow_by_term_finds_what_a_scan_finds(tail_max, monkeypatch):
    from harn_ls.recall.overflow import OverflowByTerm

    monkeypatch.setattr(OverflowByTerm, "_TAIL_MAX", tail_max)  # 0: every query sorts the tail in
    rng = np.random.default_rng(3)
    view = OverflowByTerm()
    terms = np.zeros(0, dtype=np.int32)
    for step in range(30):
        if step in (12, 20):  # the overflow merged away: emptied, then filled again
            terms = terms[:0]
            if step == 12:
                view.reset()
        terms = np.concatenate((terms, rng.integers(0, 40, rng.integers(0, 300)).astype(np.int32)))
        m = len(terms) - int(rng.integers(0, 5)) if len(terms) else 0  # (a query may see a prefix)
        for tid in range(-1, 42):
            got = view.positions(terms, m, tid)
            assert got.tolist() == np.flatnonzero(terms[:m] == tid).tolist(), (step, tid)
        sizes = [len(pos) for pos, _ in view._runs]
        assert all(a > 2 * b for a, b in zip(sizes, sizes[1:], strict=False)) and sum(sizes) == view.upto  # few runs


@pytest.mark.parametrize("tail_max", [0, 8192])
def test_queries_between_batches_see_every_overflow_posting(tail_max, monkeypatch):
    from harn_ls.recall.overflow import OverflowByTerm

    monkeypatch.setattr(OverflowByTerm, "_TAIL_MAX", tail_max)
    live = Live()
    events = _records(900, 41)
    live.feed(*events[:500])
    idx = live.engine.indexes["t"]
    idx.compact()
    queries = _shared_term_queries(random.Random(8), 10)
    overflow_seen = 0
    for start, end in ((500, 550), (550, 600), (600, 900)):
        if start == 600:
            idx.compact()  # the overflow merged in between queries, then refilled past its old size
        live.feed(*events[start:end])
        idx = live.engine.indexes["t"]  # (folds the queued batch in)
        with thresholds(0, 3, 0, 0):
            for q in queries:
                assert idx.top_lexical(q, 10) == _full_top(idx, q, 10), (start, q)
        overflow_seen = max(overflow_seen, idx._m)
        for tid in range(len(idx._terms)):
            assert idx._ov_by_term.positions(idx._ov_term, idx._m, tid).tolist() == \
                np.flatnonzero(idx._ov_term[: idx._m] == tid).tolist()
    assert overflow_seen


def test_only_the_hits_that_make_the_merged_cut_are_made(monkeypatch):
    engine = engine_of([300, 200, 250, 150], 23)
    made = []
    real_hit = RecallEngine._hit
    monkeypatch.setattr(RecallEngine, "_hit", staticmethod(lambda *a: made.append(a[1]) or real_hit(*a)))
    for query in ("w0", "w1 w0", "w2 w5", "w0 w0 w3"):
        for k in (1, 5, 20):
            made.clear()
            got = engine.recall(query, k=k, explain=True)
            made_for_got = len(made)
            per_namespace = [engine.recall(query, k=k, namespace=name) for name in sorted(engine.indexes)]
            assert sum(len(r.hits) for r in per_namespace) > k  # several namespaces had hits to offer
            want = sorted((h for r in per_namespace for h in r.hits),
                          key=lambda h: (-h.score, _neg(h.stored_at), -h.seq, h.id, h.namespace))[:k]
            assert [(h.namespace, h.id, h.score) for h in got.hits] == [(h.namespace, h.id, h.score) for h in want]
            assert all(h.explain is not None and h.explain.lexical == h.score for h in got.hits)
            cut = got.hits[-1].score
            ties_below = sum(1 for r in per_namespace for h in r.hits if h.score == cut)
            assert made_for_got <= k + ties_below < sum(len(r.hits) for r in per_namespace) + ties_below


def _neg(text: str) -> tuple[int, ...]:
    """A key sorting strings in descending order (as `_tie_sort`'s reverse pass on stored_at)."""
    return tuple(-ord(c) for c in text) + (1,)
