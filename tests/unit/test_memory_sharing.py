"""Records share their empty flags and equal tag tuples (memory at 100k); the values readers see
are unchanged, and nothing reached through a record modifies what another record holds."""

from __future__ import annotations

from harn_ls.formats import memory
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import EMPTY_FLAGS, MemoryNamespace, shared_tags
from harn_ls.state_rows import record_from_row, record_row


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
    monkeypatch.setattr(memory, "_SHARED_TAGS", {})
    monkeypatch.setattr(memory, "_SHARED_TAGS_CAP", 2)
    assert shared_tags(["a"]) == ("a",) and shared_tags(["b"]) == ("b",)
    got = shared_tags(iter(["c", "d"]))
    assert got == ("c", "d") and len(memory._SHARED_TAGS) == 2
    assert shared_tags(["a"]) is memory._SHARED_TAGS[("a",)]


def test_duplicate_ids_one_then_several_stores():
    space = project(store("a", []), store("b", []), store("a", ["second"]),
                    {"type": "update", "id": "a", "tags": ["upd"], "updated_at": "2026-01-02T00:00:00Z"},
                    store("a", ["third"]))
    assert space.get("a").tags == ("third",) and space.get("b").tags == ()
    assert [r.tags for r in space.by_key("k-a")] == [(), ("upd",), ("third",)]
    space.apply_lines([JsonlLine(9, 0, {"type": "forget", "id": "f", "forgotten_ids": ["a", "b"],
                                        "forgotten_at": "2026-01-03T00:00:00Z"})])
    assert space.get("a") is None and space.get("b") is None and space.records() == []
