"""Records, recall slots and term ids take their numbers from one shared table (memory at 100k:
~10 MB less in the server); the numbers themselves, and every answer, are unchanged."""

from __future__ import annotations

import pytest

from harn_ls.cache.rows import record_from_row, record_row
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.recall import RecallEngine
from harn_ls.util import shared_ints
from harn_ls.util.shared_ints import shared, shared_range


def fresh_int(n: int) -> int:
    return int(str(n))  # a new object each call (CPython caches -5..256 only)


def project(ns: str, n: int, first_line: int = 1) -> MemoryNamespace:
    space = MemoryNamespace(ns, f"/p/.harn/memory/{ns}/events.jsonl")
    space.apply_lines([JsonlLine(first_line + i, 0, {
        "type": "store", "id": f"{ns}-{i}", "namespace": ns, "key": f"k{i}", "value": f"word{i} shared text",
        "text": f"word{i} shared text", "tags": [], "stored_at": "2026-01-01T00:00:00Z"}) for i in range(n)])
    return space


def test_equal_numbers_made_apart_are_one_object():
    a, b = fresh_int(70_000), fresh_int(70_000)
    assert a is not b
    assert shared(a) is shared(b) and shared(a) == 70_000


@pytest.mark.parametrize("n", [-7, -1, 0, 5, 4095, 4096, 123_457])
def test_value_is_kept_for_any_int(n):
    assert shared(n) == n and type(shared(n)) is int


def test_past_the_cap_numbers_are_used_as_they_come(monkeypatch):
    monkeypatch.setattr(shared_ints, "_table", list(range(16)))
    monkeypatch.setattr(shared_ints, "TABLE_MAX", 32)
    big = fresh_int(1_000_000)
    assert shared(big) is big
    assert shared(20) == 20 and len(shared_ints._table) == 32  # grown, then capped
    assert list(shared_range(10, 40)) == list(range(10, 40))
    assert list(shared_range(35, 40)) == list(range(35, 40))
    assert list(shared_range(3, 3)) == []


@pytest.mark.parametrize("start,stop", [(0, 0), (0, 10), (4000, 5000), (9000, 9100), (0, 20_000)])
def test_shared_range_is_range(start, stop):
    got = list(shared_range(start, stop))
    assert got == list(range(start, stop))
    if got:
        assert got[-1] is shared(fresh_int(stop - 1))


def test_records_of_two_namespaces_share_their_numbers_and_rows_restore_them():
    a, b = project("team/a", 600), project("team/b", 600, first_line=1)
    ra, rb = a.records(), b.records()
    assert [r.seq for r in ra] == list(range(600)) and [r.line_no for r in ra] == list(range(1, 601))
    assert all(x.seq is y.seq and x.line_no is y.line_no for x, y in zip(ra, rb, strict=True))
    back = record_from_row(record_row(ra[500]), "team/a")
    assert back == ra[500] and back.seq is ra[500].seq and back.line_no is ra[500].line_no


def test_recall_term_ids_and_slots_are_shared_and_scores_unchanged():
    a, b = project("team/a", 400), project("team/b", 400)
    engine = RecallEngine()
    for space in (a, b):
        engine.load(space.namespace, space.records(), space.config)
    ia, ib = engine.indexes["team/a"], engine.indexes["team/b"]
    shared_terms = [t for t in ia._terms if t in ib._tid and ia._tid[t] == ib._tid[t] and ia._tid[t] > 256]
    assert shared_terms  # same vocabulary, same order: same ids
    assert all(ia._tid[t] is ib._tid[t] for t in shared_terms)
    assert ia.docs[399].slot is ib.docs[399].slot
    hits = engine.recall("word399 shared", k=3).hits
    assert [h.id for h in hits][:2] == ["team/a-399", "team/b-399"]  # equal scores: id ascending
    assert hits[0].score == hits[1].score > hits[2].score
