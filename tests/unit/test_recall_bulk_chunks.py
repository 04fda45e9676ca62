"""The bulk tokenizer's chunks are bounded by characters as well as by records: the bulk pass holds
~20-35 bytes a character of a whole chunk at once, so 2,048 records of tens of KB each (agents that
store documents, or a cloned log of long lines) must not be tokenized together."""

from __future__ import annotations

import tracemalloc

from harn_ls.formats.memory_record import MemoryRecord, memory_record
from harn_ls.recall.index import NamespaceIndex
from harn_ls.recall.tokenizer import ANALYZE_CHUNK_CHARS, analysis_chunks


def _record(i: int, text: str) -> MemoryRecord:
    return memory_record(f"id{i}", "ns", f"k{i}", {"note": i}, text, (), "2026-01-01T00:00:00Z", i, i)


def test_chunks_cut_at_the_record_count_and_at_the_character_budget():
    small = [_record(i, "tiny note") for i in range(3000)]
    assert [len(c) for c in analysis_chunks(small)] == [2048, 952]
    big_text = "x" * (ANALYZE_CHUNK_CHARS // 8 - 8)  # text counts twice: 4 such fit a chunk
    sizes = [len(c) for c in analysis_chunks([_record(i, big_text) for i in range(9)])]
    assert sizes == [4, 4, 1]
    huge = [_record(0, "x" * (3 * ANALYZE_CHUNK_CHARS)), _record(1, "y")]
    assert [[r.id for r in c] for c in analysis_chunks(huge)] == [["id0"], ["id1"]]
    assert list(analysis_chunks([])) == []


def test_bulk_build_of_long_records_holds_a_bounded_amount_at_once():
    text = " ".join("ab" for _ in range(40_000))  # 120 KB of two-letter tokens: the worst ratio
    records = [_record(i, text) for i in range(64)]  # 7.7 MB of text
    tracemalloc.start()
    try:
        idx = NamespaceIndex("ns", {}, None)
        idx.add_many(records)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # one chunk of the whole 7.7 MB held ~260 MB; chunks of 2 M characters stay far below
    assert peak < 120e6, f"{peak / 1e6:.0f} MB"
    assert len(idx.docs) == 64
