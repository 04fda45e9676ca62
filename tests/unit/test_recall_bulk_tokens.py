"""The recall index's bulk tokenizer (`recall.tokenizer.analyze_many`): the postings of a whole chunk
of records, found with array operations, are exactly what `analyze` finds record by record (terms,
term frequencies, key/tag flags, token counts, and the order terms are first seen in, which is the
order the index numbers them), and an index built from them is the same index, array for array."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.formats.memory_record import MemoryRecord, memory_record
from harn_ls.recall import NamespaceIndex
from harn_ls.recall.tokenizer import _PACKED_MAX, analyze, analyze_many

# words that hit every branch: 1-byte tokens (dropped), case folding, tokens at and past the
# packed length, digits (a leading zero: "0a" is not "a"), non-ASCII letters and combining marks
# (a record holding one is split by the regex), separators Harn splits on
WORDS = ["a", "B", "x", "Z", "0", "9", "0a", "a0", "hello", "HeLLo", "42", "_", "-", ".", " ", "\n", "\t",
         "abcdefghijkl", "abcdefghijklm", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "zzzzzzzzzzzz",
         "999999999999", "é", "café", "हिन्दी", "Ⓐb", "naïve", "İ", "\u00a0", "q1"]
texts = st.lists(st.sampled_from(WORDS), max_size=12).map("".join)


@st.composite
def records(draw) -> list[MemoryRecord]:
    out = []
    for seq in range(draw(st.integers(0, 8))):
        text = draw(texts)
        kind = draw(st.sampled_from(["text", "dict", "list", "number", "null", "other"]))
        value = {"text": text, "dict": {"k": draw(texts)}, "list": [draw(texts), 3], "number": 1.5,
                 "null": None, "other": draw(texts)}[kind]
        if kind == "dict" and draw(st.booleans()):
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)  # text = the value's JSON
        tags = tuple(draw(st.lists(texts, max_size=3)))
        out.append(memory_record(f"id{seq}", "ns", draw(texts), value, text, tags, "2026-01-01T00:00:00Z", seq, seq + 1))
    return out


def _by_record(recs: list[MemoryRecord]) -> list[dict[str, int]]:
    p = analyze_many(recs)
    got: list[dict[str, int]] = [{} for _ in recs]
    for d, t, v in zip(p.doc.tolist(), p.term.tolist(), p.val.tolist(), strict=True):
        assert p.terms[t] not in got[d], "one posting per (record, term)"
        got[d][p.terms[t]] = v
    assert p.ntokens.tolist() == [analyze(r)[1] for r in recs]
    assert p.terms == list(dict.fromkeys(t for r in recs for t in analyze(r)[0]))  # first seen first
    return got


@settings(max_examples=400, deadline=None)
@given(records())
def test_bulk_postings_equal_record_by_record_analysis(recs):
    assert _by_record(recs) == [dict(analyze(r)[0]) for r in recs]


def test_long_and_packed_tokens_never_collide():
    # 12 characters are packed into a number; 13 and more are looked up by their text: a long token
    # that begins like a packed one, or two long ones sharing a prefix, stay different terms
    long_a, long_b = "abcdefghijklmn", "abcdefghijklworld"
    assert len("abcdefghijkl") == _PACKED_MAX
    recs = [memory_record("a", "ns", "k", None, f"abcdefghijkl {long_a} {long_b} {long_a}", (), "t", 0, 1),
            memory_record("b", "ns", "k", None, f"{long_b} café abcdefghijkl", (), "t", 1, 2)]
    got = _by_record(recs)
    assert got[0] == dict(analyze(recs[0])[0])
    assert got[1] == dict(analyze(recs[1])[0])
    assert got[0][long_a] == 2 and got[0][long_b] == 1 and got[1][long_b] == 1 and got[1]["café"] == 1


def _index_arrays(idx: NamespaceIndex) -> dict:
    idx.compact()
    n = len(idx._terms)
    return {"terms": list(idx._terms), "df": idx._df[:n].tolist(), "off": idx._off.tolist(),
            "pslot": idx._pslot.astype(np.int64).tolist(), "pcode": idx._pcode.astype(np.int64).tolist(),
            "dl": idx._dl[: idx._nslots].tolist(), "total": idx.total_tokens}


@settings(max_examples=100, deadline=None)
@given(records(), records())
def test_bulk_built_index_equals_one_by_one(first, second):
    second = [r.with_changes(seq=r.seq + 100, id=r.id + "b") for r in second]
    bulk, single = NamespaceIndex("ns"), NamespaceIndex("ns")
    for batch in (first, second):
        bulk.add_many(batch)
        for r in batch:
            single.add(r)
    assert _index_arrays(bulk) == _index_arrays(single)
