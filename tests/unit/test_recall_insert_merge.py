"""Folding the overflow into the main postings by insertion (NamespaceIndex._insert_overflow, taken
when no posting is dead) gives the very arrays a stable sort of every posting gives (`sort_all`):
same values, same dtypes, same offsets and document frequencies, so the same answers."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from tests.unit.test_recall import Live
from tests.unit.test_recall_pruning import _queries, _records


def _arrays(idx) -> dict:
    n = len(idx._terms)
    return {"pslot": (idx._pslot.dtype.str, idx._pslot.tolist()), "pcode": (idx._pcode.dtype.str, idx._pcode.tolist()),
            "off": idx._off.tolist(), "df": idx._df[:n].tolist(), "m": idx._m, "terms": list(idx._terms)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_inserting_the_overflow_equals_sorting_every_posting(seed):
    rng = random.Random(seed)
    live = Live()
    events = _records(700, seed)
    cuts = sorted(rng.sample(range(1, len(events)), 6))
    checked = 0
    for a, b in zip([0] + cuts, cuts + [len(events)], strict=True):
        live.feed(*events[a:b])
        live.recall("w0", k=1)  # folds the batch in (into the overflow)
        idx = live.engine.indexes["t"]
        if idx._dead_postings:
            continue
        sorted_all = copy.deepcopy(idx)
        sorted_all._merge(sort_all=True)
        idx._merge()
        assert _arrays(idx) == _arrays(sorted_all)
        for q in _queries(rng, 10):
            assert idx.lexical_scores(q) == sorted_all.lexical_scores(q)
        checked += 1
    assert checked >= 3


def test_a_merge_with_nothing_to_fold_changes_nothing():
    live = Live()
    live.feed(*_records(300, 9))
    live.recall("w0", k=1)
    idx = live.engine.indexes["t"]
    idx.compact()
    before = _arrays(idx)
    idx.compact()
    assert _arrays(idx) == before and idx._ordered_for is idx._pslot


def test_slots_widen_when_the_namespace_outgrows_16_bits():
    live = Live()
    live.feed(*_records(50, 4))
    live.recall("w0", k=1)
    idx = live.engine.indexes["t"]
    idx.compact()
    assert idx._pslot.dtype == np.uint16
    idx._nslots += 1 << 16  # (as if that many slots had been taken: the next merge must widen)
    idx._append_overflow(np.array([0], dtype=np.int32), np.array([(1 << 16) + 5], dtype=np.int32), [1])
    sorted_all = copy.deepcopy(idx)
    sorted_all._merge(sort_all=True)
    idx._merge()
    assert idx._pslot.dtype == np.int32 and _arrays(idx) == _arrays(sorted_all)
