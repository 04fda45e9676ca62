"""Issue 14 item 5: the top-k search skips records (code bounds, partial scores, non-essential terms,
the k-th score of other namespaces as a floor) and looks postings up by binary search or a dense
array. None of it may change an answer: every top k equals ranking every record's full score."""

from __future__ import annotations

import random
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.formats.memory_record import memory_record
from harn_ls.recall import NamespaceIndex, RecallEngine, scoring, tokenize
from harn_ls.recall.results import Hit, _tie_sort
from tests.unit.test_recall import Live, reference_recall, store

VOCAB = [f"w{i}" for i in range(300)]
WEIGHTS = [1 / (i + 1) ** 1.1 for i in range(300)]


@contextmanager
def thresholds(prefilter_min: int, sample: int, few_unsure: int, sparse_ratio: int):
    """Run the pruning paths on small corpora: prefilter from `prefilter_min` candidates, samples of
    `sample`, the boosted-records check beyond `few_unsure`, binary search beyond `sparse_ratio`."""
    saved = (scoring._PREFILTER_MIN, scoring._sample_size, scoring._FEW_UNSURE, scoring._SPARSE_RATIO)
    scoring._PREFILTER_MIN, scoring._FEW_UNSURE, scoring._SPARSE_RATIO = prefilter_min, few_unsure, sparse_ratio
    scoring._sample_size = lambda k: sample
    try:
        yield
    finally:
        scoring._PREFILTER_MIN, scoring._sample_size, scoring._FEW_UNSURE, scoring._SPARSE_RATIO = saved


SETTINGS = [(8192, 256, 2048, 16), (0, 3, 0, 0), (5, 1, 0, 1 << 30), (20, 40, 5, 2)]


def _records(n: int, seed: int, ns: str = "t") -> list[dict]:
    rng = random.Random(seed)
    return [store(f"{ns}-r{i}", "/".join(rng.choices(VOCAB[:30], k=rng.randint(1, 3))),
                  rng.choice([" ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(1, 40))),
                              {"text": " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(1, 25))), "n": i}]),
                  tags=rng.sample(VOCAB[:12], rng.randint(0, 2)), stored_at=f"2026-01-{1 + i % 4:02d}T00:00:00Z",
                  ns=ns)
            for i in range(n)]


def _full_top(idx: NamespaceIndex, q: list[str], k: int) -> list[tuple[float, int]]:
    """Every record's full score (no top-k search), ranked in Harn's order."""
    return idx._top(idx.lexical_scores(q), k)


def _scalar_top(idx: NamespaceIndex, q: list[str], k: int) -> list[tuple[float, int]]:
    """Independent of the vectorised code: each record's score by the scalar formula (`explain`)."""
    scores = {seq: idx.explain(seq, q).lexical for seq in list(idx.docs)}
    return idx._top({seq: s for seq, s in scores.items() if s > 0}, k)


def _queries(rng: random.Random, n: int) -> list[list[str]]:
    out = [["w0"], ["w0", "w0"], ["w0", "w1", "w2"], ["w1", "w299"], ["w2", "w0", "w2"], ["nothere", "w5"]]
    out += [tokenize(" ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(1, 4)))) for _ in range(n)]
    return out


@pytest.mark.parametrize("setting", SETTINGS)
def test_top_k_search_equals_ranking_every_full_score(setting):
    rng = random.Random(5)
    live = Live()
    live.feed(*_records(1200, 3))
    idx = live.engine.indexes["t"]
    queries = _queries(rng, 40)
    with thresholds(*setting):
        for q in queries:
            for k in (1, 3, 10, 100):
                assert idx.top_lexical(q, k) == _full_top(idx, q, k), (q, k)


@pytest.mark.parametrize("all_postings", [False, True])
def test_full_scores_and_the_all_postings_path_equal_the_scalar_formula(all_postings, monkeypatch):
    live = Live()
    live.feed(*_records(700, 17))
    idx = live.engine.indexes["t"]
    if all_postings:  # as when the bounds prune little: every posting added up (`_score_all`)
        monkeypatch.setattr(scoring, "_prunes_little", lambda *a: True)
    with thresholds(0, 3, 0, 0):
        for q in _queries(random.Random(8), 6):
            want = _scalar_top(idx, q, 100)
            assert _full_top(idx, q, 100) == want, q
            for k in (1, 10):
                assert idx.top_lexical(q, k) == want[:k], (q, k)


@pytest.mark.parametrize("setting", SETTINGS[:2])
def test_top_k_search_against_the_spec(setting):
    live = Live()
    live.feed(*_records(400, 8))
    with thresholds(*setting):
        for query in ("w0", "w0 w1", "w3 w0 w3", "w7 w2 w150", "w1 w1 w1"):
            got = [(h.id, h.score) for h in live.recall(query, k=10).hits]
            want = reference_recall(live.mem.records(), query, 10)
            assert [g[0] for g in got] == [w[0] for w in want], query
            assert all(abs(a[1] - b[1]) <= 1e-9 for a, b in zip(got, want, strict=True))


def test_dead_slots_overflow_and_a_changed_index_after_queries():
    # queries in between changes: the flagged-slots memo must not outlive the postings it was taken from
    rng = random.Random(9)
    live = Live()
    events = _records(900, 4)
    live.feed(*events[:600])
    queries = _queries(rng, 15)
    with thresholds(0, 3, 0, 0):
        for step, batch in enumerate((events[600:700], events[700:900])):
            idx = live.engine.indexes["t"]
            for q in queries:
                assert idx.top_lexical(q, 10) == _full_top(idx, q, 10)
            live.feed(*batch)
            live.feed({"type": "forget", "id": f"f{step}", "namespace": "t",
                       "predicate": {"id": [e["id"] for e in events[step * 50:step * 50 + 200]]},
                       "forgotten_ids": [e["id"] for e in events[step * 50:step * 50 + 200]],
                       "forgotten_at": "2026-12-01T00:00:00Z"})
        idx = live.engine.indexes["t"]
        assert idx._ndead or idx._m  # dead slots or overflow postings are in play
        for tid in range(len(idx._terms)):  # what the binary search relies on, checked the slow way
            slots = idx._term_postings(tid)[0].tolist()
            assert slots == sorted(set(slots))
        for q in queries:
            assert idx.top_lexical(q, 10) == _full_top(idx, q, 10)
        # records holding a query term as a key get a boost the bounds must allow for
        assert any(c & 3 for c in idx._term_postings(idx._tid["w0"])[1].tolist())


def test_postings_out_of_slot_order_are_not_binary_searched():
    # e.g. arrays restored from a cache: checked once, then only the dense lookup is used
    live = Live()
    live.feed(*_records(600, 6))
    idx = live.engine.indexes["t"]
    idx.compact()
    queries = _queries(random.Random(2), 20)
    want = {tuple(q): _full_top(idx, q, 10) for q in queries}
    tid = idx._tid["w0"]
    lo, hi = int(idx._off[tid]), int(idx._off[tid + 1])
    perm = np.random.default_rng(1).permutation(hi - lo) + lo
    pslot, pcode = idx._pslot.copy(), idx._pcode.copy()
    pslot[lo:hi], pcode[lo:hi] = pslot[perm], pcode[perm]
    idx._pslot, idx._pcode = pslot, pcode  # new arrays, not from a merge: the order is checked
    assert not idx._term_ordered(tid, pslot[lo:hi], hi - lo)
    other = idx._tid["w1"]
    o_lo, o_hi = int(idx._off[other]), int(idx._off[other + 1])
    assert idx._term_ordered(other, pslot[o_lo:o_hi], o_hi - o_lo)
    with thresholds(0, 3, 0, 0):
        for q in queries:
            assert idx.top_lexical(q, 10) == want[tuple(q)]


def test_floor_keeps_every_top_k_record_at_or_above_it():
    live = Live()
    live.feed(*_records(800, 12))
    idx = live.engine.indexes["t"]
    for q in _queries(random.Random(4), 25):
        full = _full_top(idx, q, 10)
        if not full:
            continue
        for floor in {full[0][0], full[-1][0], full[len(full) // 2][0], full[-1][0] + 1e-12}:
            got = idx.top_lexical(q, 10, floor)
            assert got == [x for x in full if x[0] >= floor], (q, floor)


def _merged_full(engine: RecallEngine, query: str, k: int) -> list[tuple[str, str, float]]:
    """Across namespaces without floors or top-k search: every record's score, Harn's merge order."""
    q = tokenize(query)
    hits = []
    for name in sorted(engine.indexes):
        idx = engine.indexes[name]
        for seq, score in idx.lexical_scores(q).items():
            r = idx.docs[seq].record
            hits.append(Hit(r.id, r.key, name, score, r.stored_at, r.tags, r.seq, r))
    return [(h.namespace, h.id, h.score) for h in _tie_sort(hits)[:k]]


def engine_of(sizes: list[int], seed: int) -> RecallEngine:
    """An engine over namespaces ns0, ns1... of `sizes` random records each."""
    engine = RecallEngine()
    for i, n in enumerate(sizes):
        ns = f"ns{i}"
        recs = [memory_record(id=e["id"], namespace=ns, key=e["key"], value=e["value"], text=e["text"],
                             tags=tuple(e["tags"]), stored_at=e["stored_at"], seq=j, line_no=j + 1)
                for j, e in enumerate(_records(n, seed + i, ns))]
        engine.load(ns, recs)
    return engine


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), sizes=st.lists(st.integers(1, 300), min_size=2, max_size=4),
       k=st.integers(1, 30), setting=st.sampled_from(SETTINGS))
def test_recall_across_namespaces_with_floors_equals_merging_full_scores(seed, sizes, k, setting):
    engine = engine_of(sizes, seed)
    rng = random.Random(seed)
    with thresholds(*setting):
        for _ in range(6):
            query = " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(1, 3)))
            got = [(h.namespace, h.id, h.score) for h in engine.recall(query, k=k).hits]
            assert got == _merged_full(engine, query, k), query


def test_code_bounds_are_never_below_a_score():
    live = Live()
    # a tf past the code table (codes clipped to its last entry) in a short record
    # (and long records all round: a large avgdl keeps their norms small)
    live.feed(*_records(500, 21), store("long", "w0", "w0 " * 3000), store("short", "w5", "w5 " * 700),
              *[store(f"big{i}", "w7", "w7 " * (2000 + i) + "fill " * 3000, tags=["w7"]) for i in range(600)])
    idx = live.engine.indexes["t"]
    n, avgdl = idx.stats()
    norm = idx._norms(avgdl)
    for q in (["w0"], ["w0", "w0"], ["w5"], ["w29", "w29", "w29"], ["w7"]):
        (t,) = {id(x): x for x in idx._query_terms(q)}.values()
        t.count = len(q)
        t.finish()
        table = t.code_bounds(idx._norm_min)
        part = scoring.contributions(t.idf, t.codes, norm[t.slots])
        partial = scoring._partial(t, part, t.codes)
        assert (np.take(table, t.codes, mode="clip") >= partial).all()
        assert (partial <= t.bound).all()
        assert (np.take(table, t.codes, mode="clip") < t.bound).any()  # tighter than the plain bound where it matters
