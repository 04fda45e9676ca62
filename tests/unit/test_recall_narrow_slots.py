"""A namespace whose slots all fit in 16 bits keeps its main postings' slots as uint16 (half the
bytes of int32). Narrow slots must give the same answers, bit for bit, as int32 ones: after merges,
with overflow postings of appends beside them (mixed dtypes), with dead slots, and from the cache."""

from __future__ import annotations

import io
import random
import zlib
from pathlib import Path

import numpy as np
import orjson
import pytest

from harn_ls.cache.store import MANIFEST
from harn_ls.recall import index as index_mod
from harn_ls.recall import scoring
from tests.unit.test_cache import cache_env, cache_folder, cold, project, warm  # noqa: F401 (fixtures)
from tests.unit.test_recall import Live
from tests.unit.test_recall_pruning import SETTINGS, _queries, _records, thresholds


def _scores(idx, queries):
    """Every answer the index gives: full scores (bits) and the top k by every search path."""
    out = []
    for q in queries:
        out.append(sorted((seq, float(s).hex()) for seq, s in idx.lexical_scores(q).items()))
        out.append([(float(s).hex(), seq) for s, seq in idx.top_lexical(q, 10)])
    return out


def _fed(events_batches):
    live = Live()
    for i, batch in enumerate(events_batches):
        live.feed(*batch)
        live.recall("w0", k=1)  # folds the batch in
        if i == 0:  # the first batch merged into the main arrays, later ones stay overflow postings
            live.engine.indexes["t"].compact()
    return live.engine.indexes["t"]


@pytest.mark.parametrize("setting", SETTINGS)
def test_uint16_slots_answer_bit_for_bit_as_int32_ones(setting, monkeypatch):
    events = _records(900, 21)
    forget = {"type": "forget", "id": "f0", "namespace": "t", "predicate": {"id": [e["id"] for e in events[:150]]},
              "forgotten_ids": [e["id"] for e in events[:150]], "forgotten_at": "2026-12-01T00:00:00Z"}
    batches = (events[:600], events[600:650], [forget], events[650:680])
    queries = _queries(random.Random(3), 25)
    narrow = _fed(batches)
    narrow.compact()
    narrow_live = _fed(batches)  # not compacted: overflow postings (int32) beside narrow main ones
    assert narrow._pslot.dtype == np.uint16
    assert narrow_live._pslot.dtype == np.uint16 and (narrow_live._m or narrow_live._tail_term)
    monkeypatch.setattr(index_mod, "_narrow_slots", lambda slots, nslots: slots.astype(np.int32, copy=False))
    wide = _fed(batches)
    wide.compact()
    wide_live = _fed(batches)
    assert wide._pslot.dtype == np.int32
    with thresholds(*setting):
        assert _scores(narrow, queries) == _scores(wide, queries)
        assert _scores(narrow_live, queries) == _scores(wide_live, queries)


def test_slots_stay_int32_when_a_namespace_has_more_than_65536():
    slots = np.arange(0, 65536, 7, dtype=np.int64)
    assert index_mod._narrow_slots(slots, 65536).dtype == np.uint16
    assert index_mod._narrow_slots(slots, 65537).dtype == np.int32
    assert index_mod._narrow_slots(slots, 65536).tolist() == slots.tolist()


@pytest.mark.parametrize("cand_dtype", [np.uint16, np.int32, np.int64])
def test_binary_search_in_narrow_postings_with_wider_candidates(cand_dtype):
    # a candidate past 65535 (an appended record's slot) must not wrap onto a narrow posting: 131071
    # cast to uint16 is 65535, which this term holds
    slots = np.array([1, 5, 300, 65535], dtype=np.uint16)
    codes = np.array([4, 8, 12, 16], dtype=np.uint16)
    term = scoring.QueryTerm(slots, codes, 1.0, True)
    big = [] if cand_dtype == np.uint16 else [70000, 131071, 65536 + 5]
    cand = np.array([0, 5, 65535, 300, 2] + big, dtype=cand_dtype)
    with thresholds(8192, 256, 2048, 0):  # binary search, never the dense array
        got = term.codes_at(cand, 1 << 18).tolist()
    assert got == [0, 8, 16, 12, 0] + [0] * len(big)
    wide = np.array([1, 5, 300, 65535, 131071], dtype=np.int32)  # int32 postings, narrow candidates
    term = scoring.QueryTerm(wide, np.array([4, 8, 12, 16, 20], dtype=np.uint16), 1.0, True)
    with thresholds(8192, 256, 2048, 0):
        assert term.codes_at(np.array([65535, 7, 1], dtype=np.uint16), 1 << 18).tolist() == [16, 0, 4]


def test_cached_narrow_slots_restore_the_same_answers(project, cache_env):  # noqa: F811
    expected = cold(project)
    got, ws = warm(project)
    assert got == expected
    again, ws2 = warm(project)  # from the cache: memory-mapped uint16 postings
    assert again == expected
    restored = [idx for idx in ws2.recall.indexes.values() if len(idx._pslot)]
    assert restored and all(idx._pslot.dtype == np.uint16 for idx in restored)


def test_a_cached_narrow_slot_out_of_range_is_rebuilt_not_trusted(project, cache_env):  # noqa: F811
    # a well-formed uint16 array with a matching checksum, one slot past the namespace's records:
    # the restore's range check (not the checksum) must refuse it
    expected = cold(project)
    warm(project)
    folder = Path(cache_folder(project))
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    desc = manifest["namespaces"]["agent/notes"]["index"]["pslot"]
    path = folder / desc["name"]
    arr = np.load(path, allow_pickle=False)
    assert arr.dtype == np.uint16 and len(arr)
    arr = arr.copy()
    assert int(arr.max()) < 1000
    arr[-1] = 65535  # past every slot of this namespace (it has a few dozen records)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    data = buf.getvalue()
    path.write_bytes(data)
    desc["size"], desc["crc"] = len(data), zlib.crc32(data)
    (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    got, _ws = warm(project, save=False)
    assert got == expected
