"""Memory the server gives back or shares (issue 14, peak RSS): glibc heap tuning (lsp/heap.py) is
harmless wherever it runs, and a recall build keeps one string per term across namespaces and no
large overflow buffers once merged; answers are the same either way."""

from __future__ import annotations

import ctypes
import sys

import pytest

from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace
from harn_ls.lsp import heap
from harn_ls.recall import RecallEngine
from harn_ls.recall.index import _OVERFLOW_MIN, NamespaceIndex


def _glibc_available() -> bool:
    try:
        lib = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim")


@pytest.mark.skipif(not _glibc_available(), reason="glibc only")
def test_tune_and_trim_on_glibc_report_success():
    assert heap.tune() is True
    junk = [bytes(1000) for _ in range(20_000)]  # ~20 MB of small blocks, then freed: free pages to give back
    del junk
    assert isinstance(heap.trim(), bool)
    assert heap.tune() is True  # again: idempotent


def test_without_glibc_both_do_nothing(monkeypatch):
    monkeypatch.setattr(heap, "_glibc", lambda: None)
    assert heap.tune() is False and heap.trim() is False


def _store(i: int, ns: str, words: str) -> dict:
    value = {"text": f"{words} note {i}", "n": i}
    return {"type": "store", "id": f"{ns}-{i}", "namespace": ns, "key": f"k/{i}", "value": value,
            "text": f'{{"text":"{words} note {i}","n":{i}}}', "tags": ["t"], "stored_at": f"2026-01-01T00:00:{i % 60:02d}Z"}


def _space(ns: str, n: int, words: str) -> MemoryNamespace:
    space = MemoryNamespace(ns, f"/x/{ns}/events.jsonl")
    space.apply_lines([JsonlLine(i + 1, 0, _store(i, ns, f"{words} w{i % 97}")) for i in range(n)])
    return space


def test_terms_are_one_string_across_namespace_indexes():
    # the terms come from separately built strings (each namespace's own parse)
    a, b = _space("a", 50, "".join(["invoice", " rounding"])), _space("b", 50, " ".join(["invoice", "rounding"]))
    engine = RecallEngine()
    engine.sync_namespace(a, MemoryDelta(added=a.records()))
    engine.sync_namespace(b, MemoryDelta(added=b.records()))
    ia, ib = engine.indexes["a"], engine.indexes["b"]
    ta = ia._terms[ia._tid["rounding"]]
    tb = ib._terms[ib._tid["rounding"]]
    assert ta is tb and ta is sys.intern("rounding")
    assert [h.record.id for h in engine.recall("invoice rounding", k=5).hits]


def test_a_merge_gives_back_a_builds_overflow_buffers():
    space = _space("ns", 3000, "alpha beta gamma delta")
    idx = NamespaceIndex("ns")
    idx.add_many(space.records())
    before = idx.top_lexical(["alpha", "w5"], 10)
    assert idx._m > 0 or len(idx._ov_term) > 0 or len(idx._pslot) > 0
    idx.compact()
    assert idx._m == 0 and len(idx._ov_term) <= _OVERFLOW_MIN >> 3
    assert idx.top_lexical(["alpha", "w5"], 10) == before
    more = _space("ns2", 20, "alpha epsilon")
    for r in more.records():  # adds after the release regrow the buffers as needed
        idx.add(r.with_changes(seq=r.seq + 10_000))
    assert idx.df("epsilon") == 20
