"""Records share their empty flags and equal tag tuples (memory at 100k); the values readers see
are unchanged, and nothing reached through a record modifies what another record holds."""

from __future__ import annotations

import sys

import orjson

from harn_ls.cache.rows import record_from_row, record_row
from harn_ls.formats import memory_record as records_module
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import EMPTY_FLAGS, shared_tags


def store(i, tags, **extra):
    return {"type": "store", "id": i, "namespace": "ns", "key": f"k-{i}", "value": {"v": i}, "text": f"t {i}",
            "tags": tags, "stored_at": "2026-01-01T00:00:00Z", **extra}


def project(*events) -> MemoryNamespace:
    space = MemoryNamespace("ns", "/x/events.jsonl")
    space.apply_lines([JsonlLine(n + 1, 0, e) for n, e in enumerate(events)])
    return space


def test_equal_tags_are_one_tuple_and_values_unchanged():
    space = project(store("a", ["dec" + "ision", "note"]), store("b", ["decision", "note"]), store("c", ["note"]))
    a, b, c = space.get("a"), space.get("b"), space.get("c")
    assert a.tags == ("decision", "note") and c.tags == ("note",)
    assert a.tags is b.tags
    assert a.tags[1] is c.tags[0]  # (interned)


def test_empty_flags_shared_but_never_modified_through_a_reader():
    space = project(store("a", []), store("b", [], flags={"pinned": True}), store("c", []))
    a, b, c = space.get("a"), space.get("b"), space.get("c")
    assert a.flags is c.flags is EMPTY_FLAGS and b.flags == {"pinned": True}
    out = a.to_json()
    out["flags"]["x"] = 1
    assert a.flags == {} and c.flags == {} and EMPTY_FLAGS == {}


def test_update_merges_flags_into_a_new_dict():
    space = project(store("a", []), store("c", []),
                    {"type": "update", "id": "a", "flags": {"auto_surface": True}, "tags": ["x", 3, "y"],
                     "updated_at": "2026-01-02T00:00:00Z"})
    assert space.get("a").flags == {"auto_surface": True} and space.get("a").tags == ("x", "y")
    assert space.get("c").flags == {} and EMPTY_FLAGS == {}


def test_restored_row_equals_projected_record():
    space = project(store("a", ["note"]), store("b", ["note"], flags={"k": 1}))
    for r in space.records():
        back = record_from_row(record_row(r), "ns")
        assert back == r and back.tags is r.tags
    assert record_from_row(record_row(space.get("a")), "ns").flags is EMPTY_FLAGS


def test_past_the_cap_tags_are_still_right_but_not_kept(monkeypatch):
    monkeypatch.setattr(records_module, "_SHARED_TAGS", {})
    monkeypatch.setattr(records_module, "_TAGS_SEEN_ONCE", {})
    monkeypatch.setattr(records_module, "_SHARED_TAGS_CAP", 2)
    for _ in range(2):  # (shared from the second sighting)
        assert shared_tags(["a"]) == ("a",) and shared_tags(["b"]) == ("b",)
    got = shared_tags(iter(["c", "d"]))
    again = shared_tags(["c", "d"])
    assert got == again == ("c", "d") and len(records_module._SHARED_TAGS) == 2 and ("c", "d") not in records_module._SHARED_TAGS
    assert shared_tags(["a"]) is records_module._SHARED_TAGS[("a",)]
    for _ in range(3):
        assert shared_tags(["c", "d"]) == ("c", "d")
    assert ("c", "d") not in records_module._SHARED_TAGS and len(records_module._SHARED_TAGS) == 2  # past the cap: never kept


def test_tags_seen_once_do_not_use_up_the_shared_table(monkeypatch):
    # A fact's tags name its evidence: thousands of one-off tuples must not keep the ordinary
    # combinations of every later namespace from being shared.
    monkeypatch.setattr(records_module, "_SHARED_TAGS", {})
    monkeypatch.setattr(records_module, "_TAGS_SEEN_ONCE", {})
    monkeypatch.setattr(records_module, "_SHARED_TAGS_CAP", 4)
    monkeypatch.setattr(records_module, "_TAGS_SEEN_ONCE_CAP", 50)
    for i in range(120):  # one-off tuples, more than the seen-once table holds
        assert shared_tags([f"fact:evidence_ref:src/m{i}.py:1-2", "fact"]) == (f"fact:evidence_ref:src/m{i}.py:1-2", "fact")
    assert records_module._SHARED_TAGS == {} and len(records_module._TAGS_SEEN_ONCE) <= 50
    first = shared_tags(["bug", "ledger"])
    second = shared_tags(["bug" + "", "led" + "ger"])
    assert first is second and records_module._SHARED_TAGS == {("bug", "ledger"): first}
    space = project(store("x", ["bug", "ledger"]), store("y", ["bug", "ledger"]))
    assert space.get("x").tags is space.get("y").tags is first
    # every tag string is interned, shared tuple or not
    one_off = shared_tags(["only" + "-once", "fact"])
    assert one_off[0] is sys.intern("only-once") and one_off[1] is first_fact_tag()


def first_fact_tag() -> str:
    return sys.intern("fact")


def test_duplicate_ids_one_then_several_stores():
    space = project(store("a", []), store("b", []), store("a", ["second"]),
                    {"type": "update", "id": "a", "tags": ["upd"], "updated_at": "2026-01-02T00:00:00Z"},
                    store("a", ["third"]))
    assert space.get("a").tags == ("third",) and space.get("b").tags == ()
    assert [r.tags for r in space.by_key("k-a")] == [(), ("upd",), ("third",)]
    space.apply_lines([JsonlLine(9, 0, {"type": "forget", "id": "f", "forgotten_ids": ["a", "b"],
                                        "forgotten_at": "2026-01-03T00:00:00Z"})])
    assert space.get("a") is None and space.get("b") is None and space.records() == []


def test_provenance_is_kept_packed_and_reads_back_equal():
    prov = {"agent": "claude-code", "run_id": "run_019ca6bc-f72c-7ed1-a4b8-fbbf51a88f44", "n": 18446744073709551615,
            "x": [-0.0, 5e-324, 1.7976931348623157e308, None, "é\u2028"]}
    space = project(store("a", [], provenance=prov), store("b", [], provenance="cli"), store("c", [], provenance={}),
                    store("d", []))
    a = space.get("a")
    assert type(a._provenance) is bytes and a.provenance == prov and a.provenance is not a.provenance
    assert a.to_json()["provenance"] == prov
    assert space.get("b").provenance == "cli" and space.get("c").provenance == {} and space.get("d").provenance is None
    # the row's bytes are those of the dict itself, and a row decoded gives an equal, packed record
    row = orjson.dumps(record_row(a))
    assert row == orjson.dumps(record_row(a)[:8] + [prov] + record_row(a)[9:])
    back = record_from_row(orjson.loads(row), "ns")
    assert back == a and type(back._provenance) is bytes
    # an update's provenance is packed too; one without provenance keeps the packed one as it is
    space.apply_lines([JsonlLine(9, 0, {"type": "update", "id": "a", "text": "new", "updated_at": "2026-01-02T00:00:00Z"}),
                       JsonlLine(10, 0, {"type": "update", "id": "b", "provenance": {"agent": "x"},
                                         "updated_at": "2026-01-02T00:00:00Z"})])
    assert space.get("a")._provenance is a._provenance and space.get("a").provenance == prov
    assert space.get("b").provenance == {"agent": "x"} and type(space.get("b")._provenance) is bytes
