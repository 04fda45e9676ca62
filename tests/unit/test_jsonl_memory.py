"""The tail reader and the memory projection (harn-formats §C.3), incremental equal to cold."""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.formats.jsonl import CODE_INVALID_JSON, CODE_INVALID_UTF8, CODE_NOT_OBJECT, JsonlLine, JsonlTail
from harn_ls.formats.memory import CODE_HIDDEN_BY_TOMBSTONE, CODE_UNKNOWN_TYPE, MemoryNamespace


def _line(value, n):
    return JsonlLine(n, 0, value)


def store(i, key=None, **extra):
    return {"type": "store", "id": i, "namespace": "ns", "key": key or f"k-{i}", "value": {"v": i}, "text": f"t {i}",
            "tags": [], "stored_at": f"2026-01-01T00:00:{len(i):02d}Z", **extra}


def line(obj) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def test_torn_last_line_is_kept_for_later(tmp_path):
    p = tmp_path / "events.jsonl"
    full = line(store("a")) + line(store("b"))
    p.write_bytes(full[:-10])
    tail = JsonlTail(str(p))
    first = tail.read_new()
    assert [ln.value["id"] for ln in first.lines] == ["a"]
    assert tail.torn_problem() is not None and tail.torn_problem().line == 2
    with open(p, "ab") as fh:
        fh.write(full[-10:])
    second = tail.read_new()
    assert [ln.value["id"] for ln in second.lines] == ["b"] and not second.reset
    assert second.lines[0].line_no == 2 and tail.torn_problem() is None


def test_shrink_and_replace_restart_from_zero(tmp_path):
    p = tmp_path / "events.jsonl"
    p.write_bytes(line(store("a")) + line(store("b")))
    tail = JsonlTail(str(p))
    assert len(tail.read_new().lines) == 2
    p.write_bytes(line(store("c")))  # truncated and rewritten: shorter
    batch = tail.read_new()
    assert batch.reset and [ln.value["id"] for ln in batch.lines] == ["c"]
    other = tmp_path / "new.jsonl"
    other.write_bytes(line(store("d")) + line(store("e")) + line(store("f")))
    os.replace(other, p)  # replaced by rename: new inode
    batch = tail.read_new()
    assert batch.reset and [ln.value["id"] for ln in batch.lines] == ["d", "e", "f"]
    # same size, rewritten in place with different first bytes
    data = p.read_bytes()
    p.write_bytes(data.replace(b'"d"', b'"x"'))
    batch = tail.read_new()
    assert batch.reset and batch.lines[0].value["id"] == "x"
    os.unlink(p)
    batch = tail.read_new()
    assert batch.missing and batch.reset


def test_bad_lines_become_problems_and_the_rest_loads(tmp_path):
    p = tmp_path / "events.jsonl"
    p.write_bytes(line(store("a")) + b'{"type": "store", "id":\n' + b"\xff\xfe{}\n" + b"[1,2]\n" + b"\n"
                  + line({"type": "teleport", "id": "z"}) + line(store("b")) + b"\r\n" + line(store("c")).replace(b"\n", b"\r\n"))
    ns = MemoryNamespace("ns", str(p))
    ns.apply_lines(JsonlTail(str(p)).read_new().lines)
    assert [r.id for r in ns.records()] == ["a", "b", "c"]
    codes = [(pr.line, pr.code) for pr in ns.problems]
    assert codes == [(2, CODE_INVALID_JSON), (3, CODE_INVALID_UTF8), (4, CODE_NOT_OBJECT), (6, CODE_UNKNOWN_TYPE)]


def test_wrong_field_types_are_reported():
    ns = MemoryNamespace("ns", "/x/events.jsonl")

    ns.apply_lines([_line({**store("a"), "tags": "oops"}, 1), _line({**store("b"), "stored_at": 5}, 2), _line(store("c"), 3),
                    _line({"type": "forget", "id": "f", "forgotten_ids": "c"}, 4)])
    assert [r.id for r in ns.records()] == ["c"]
    assert [p.line for p in ns.problems] == [1, 2, 4]


def test_projection_rules():
    ns = MemoryNamespace("ns", "/x/events.jsonl")

    events = [
        store("a", tags=["x"]),
        store("dup", key="first"),
        store("dup", key="second"),
        {"type": "update", "id": "dup", "namespace": "ns", "text": "patched", "flags": {"f": True}, "updated_at": "u1"},
        {"type": "update", "id": "a", "namespace": "ns", "value": [1, 2.0], "updated_at": "u2"},
        {"type": "open", "id": "o1", "namespace": "ns", "backend": "vector", "opened_at": "x"},
        {"type": "open", "id": "o2", "namespace": "ns", "backend": "hybrid", "bm25_weight": 0.3, "opened_at": "y"},
        store("later-forgotten"),
        {"type": "forget", "id": "f1", "namespace": "ns", "predicate": {"id": "later-forgotten"},
         "forgotten_ids": ["later-forgotten", "ghost"], "forgotten_at": "z"},
        store("ghost"),  # stored after its id was forgotten: hidden forever
        {"type": "update", "id": "ghost", "namespace": "ns", "text": "nope", "updated_at": "u3"},
    ]
    ns.apply_lines([_line(e, i + 1) for i, e in enumerate(events)])
    recs = ns.records()
    assert [(r.id, r.key) for r in recs] == [("a", "k-a"), ("dup", "first"), ("dup", "second")]
    assert recs[2].text == "patched" and recs[2].flags == {"f": True} and recs[1].text == "t dup"
    assert recs[0].value == [1, 2.0] and recs[0].text == "[1,2.0]"  # a value patch refreshes text (serde JSON)
    assert [r.seq for r in recs] == [0, 1, 2]
    assert ns.config["backend"] == "hybrid" and ns.config["bm25_weight"] == 0.3
    assert ns.config["embed_model_hint"] == "default"
    assert [r.id for r in ns.hidden] == ["ghost"]
    assert [p.code for p in ns.problems] == [CODE_HIDDEN_BY_TOMBSTONE]


def _project(lines):
    ns = MemoryNamespace("ns", "/x/events.jsonl")

    ns.apply_lines([_line(e, i + 1) for i, e in enumerate(lines)])
    return ns


ids = st.sampled_from(["a", "b", "c", "d"])
event = st.one_of(
    ids.map(lambda i: store(i)),
    st.tuples(ids, st.text(max_size=5)).map(lambda t: {"type": "update", "id": t[0], "namespace": "ns", "text": t[1],
                                                       "flags": {t[1] or "k": True}, "updated_at": "u"}),
    st.lists(ids, max_size=2).map(lambda forgotten: {"type": "forget", "id": "f", "namespace": "ns", "predicate": "x",
                                              "forgotten_ids": forgotten, "forgotten_at": "z"}),
)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(event, max_size=30), cuts=st.lists(st.integers(min_value=1, max_value=8), max_size=10))
def test_incremental_equals_cold(events, cuts, tmp_path_factory):
    """Appending in random batches through the tail reader gives the cold projection."""
    d = tmp_path_factory.mktemp("inc")
    p = d / "events.jsonl"
    p.write_bytes(b"")
    tail = JsonlTail(str(p))
    inc = MemoryNamespace("ns", str(p))
    pos = 0
    for cut in cuts + [len(events)]:
        chunk = events[pos:pos + cut]
        pos += cut
        with open(p, "ab") as fh:
            for e in chunk:
                fh.write(line(e))
        inc.apply_lines(tail.read_new().lines)
    cold = MemoryNamespace("ns", str(p))
    cold.apply_lines(JsonlTail(str(p)).read_new().lines)
    assert [r for r in inc.records()] == [r for r in cold.records()]
    assert inc.forgotten == cold.forgotten and inc.seq == cold.seq
