"""The cold load's shortcuts give exactly what the full paths give: the JSONL tail's inline line
path (against `_parse_line`, which judges every line on its own), transcript summaries (against the
full transcript views, problems in the same order), run records read for a listing (against the
full read), and the plain-class MemoryRecord (equality, copies, never hashable)."""

from __future__ import annotations

import os
import tempfile

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harn_ls.formats import jsonl
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import MemoryRecord, memory_record
from harn_ls.formats.runs import read_run_record
from harn_ls.formats.transcripts import transcript_from_value, transcript_summary_from_value
from harn_ls.util.safe_read import SMALL_CONTAINERS, json_density_problem

# -- the JSONL tail ------------------------------------------------------------------------

_DENSE = b'{"type":"store","v":[' + b",".join([b"{}"] * (SMALL_CONTAINERS + 50)) + b"]}"
_SPARSE_LONG = orjson.dumps({"type": "store", "id": "a", "text": "{[" * 40 + "x" * 2000})
_LINES = st.one_of(
    st.sampled_from([b"", b"   ", b"\t\r", b"{}", b"[]", b"3", b'"s"', b"{", b'{"a":1}\r', b"\xff\xfe", b'{"a":"\xff"}',
                     _DENSE, _DENSE + b"\r", _SPARSE_LONG, b"[" * 300 + b"]" * 300, b"{" * 400]),
    st.dictionaries(st.text(max_size=5), st.recursive(st.none() | st.integers(-2**60, 2**60) | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=3), kids, max_size=4),
                    max_leaves=12), max_size=5).map(orjson.dumps),
    st.binary(max_size=40),
)


def _reference(tail: jsonl.JsonlTail, data: bytes) -> list[tuple]:
    """Each complete line judged alone by `_parse_line` (blank lines dropped, CR stripped; no line
    here reaches the 16 MB limit)."""
    out = []
    offset = 0
    for n, raw in enumerate(data.split(b"\n")[:-1], 1):
        start, offset = offset, offset + len(raw) + 1
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        if not raw.strip():
            continue
        line = tail._parse_line(raw, n, start)
        out.append((line.line_no, line.offset, line.value, line.problem.code if line.problem else None,
                    line.problem.message if line.problem else None))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_LINES, max_size=6), min_size=1, max_size=4))
@example([[_DENSE, b'{"type":"store"}', b"   ", b"{}", _DENSE + b"\r", b"[1]"]])
def test_tail_inline_path_equals_judging_each_line_alone(appends):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.jsonl")
        tail = jsonl.JsonlTail(path, chunk_bytes=64)
        got = []
        written = b""
        for group in appends:
            chunk = b"".join(raw.replace(b"\n", b" ") + b"\n" for raw in group)
            with open(path, "ab") as fh:
                fh.write(chunk)
            written += chunk
            for line in tail.read_new().lines:
                got.append((line.line_no, line.offset, line.value, line.problem.code if line.problem else None,
                            line.problem.message if line.problem else None))
        want = _reference(jsonl.JsonlTail(path), written)
        assert got == want
        assert tail.offset == len(written)


def test_dense_line_is_refused_before_parsing_and_the_rest_loads(tmp_path):
    path = tmp_path / "events.jsonl"
    assert json_density_problem(_DENSE) is not None
    path.write_bytes(b'{"type":"open","backend":"bm25"}\n' + _DENSE + b"\n" + b'{"type":"forget","forgotten_ids":[]}\n')
    lines = jsonl.JsonlTail(str(path)).read_new().lines
    assert [ln.problem.code if ln.problem else None for ln in lines] == [None, jsonl.CODE_TOO_DENSE, None]
    assert lines[1].value is None and lines[1].line_no == 2
    assert [ln.value["type"] for ln in lines if ln.value] == ["open", "forget"]


# -- transcripts and run records ----------------------------------------------------------------

_ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6),
                 st.sampled_from(["public", "internal", "private", "message", "tool_result"]),
                 st.lists(st.one_of(st.text(max_size=4), st.dictionaries(st.sampled_from(["type", "text", "visibility"]),
                          st.text(max_size=6), max_size=3)), max_size=3),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_EVENT = st.one_of(_ANY, st.dictionaries(
    st.sampled_from(["role", "kind", "text", "id", "blocks", "metadata", "visibility", "other"]), _ANY, max_size=6))
_TRANSCRIPT = st.dictionaries(
    st.sampled_from(["_type", "version", "messages", "events", "assets", "id", "summary", "metadata", "state"]),
    st.one_of(_ANY, st.lists(_EVENT, max_size=6)), max_size=9)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TRANSCRIPT, _ANY))
@example({"version": 3, "events": [{"role": 1, "visibility": "odd"}, "x", {"blocks": "b"}, {}], "id": 5})
def test_transcript_summary_equals_the_full_view(value):
    full = transcript_from_value(value, "run:r", path="/p/r.json")
    found = transcript_summary_from_value(value, "run:r", path="/p/r.json")
    if full is None:
        assert found is None
        return
    summary, problems = found
    assert (summary.id, summary.message_count, summary.event_count, summary.asset_count) == (
        full.id, len(full.messages), len(full.events), len(full.assets))
    assert problems == full.problems


@pytest.mark.parametrize("stages", [
    [{"id": "s1", "transcript": {"events": [{"role": "user", "text": "hi"}, {"role": 3}, 7]}}, "junk",
     {"transcript": ["not", "a", "transcript"]}],
    [],
])
def test_run_record_read_for_a_listing_equals_the_full_read(tmp_path, stages):
    path = tmp_path / "run_x.json"
    path.write_bytes(orjson.dumps({"_type": "run_record", "id": "run_x", "status": "complete", "stages": stages,
                                   "transcript": {"id": "t0", "version": 9, "messages": [1, 2],
                                                  "events": [{"kind": "message", "visibility": "weird"}]}}))
    full = read_run_record(str(path))
    listed = read_run_record(str(path), summaries=True)
    assert (listed.id, listed.status, listed.stages, listed.problems) == (full.id, full.status, full.stages, full.problems)
    assert [(s.id, s.message_count, s.event_count, s.asset_count) for s in listed.transcripts] == [
        (t.id, len(t.messages), len(t.events), len(t.assets)) for t in full.transcripts]
    assert full.problems  # the hostile stages above are reported either way


# -- MemoryRecord ---------------------------------------------------------------------------------


def _record(**over) -> MemoryRecord:
    fields = dict(id="m1", namespace="n", key="k", value={"a": 1}, text="t", tags=("x",), stored_at="2026", seq=3,
                  line_no=4)
    fields.update(over)
    return memory_record(**fields)


def test_memory_record_compares_by_fields_and_copies_with_changes():
    a, b = _record(), _record()
    assert a == b and a is not b and a.flags == {}
    # records without flags share one empty mapping, so it must refuse writes (not leak to all)
    for write in (lambda f: f.__setitem__("pinned", True), lambda f: f.update(pinned=True),
                  lambda f: f.setdefault("pinned", True), lambda f: f.pop("x", None), lambda f: f.clear()):
        with pytest.raises(TypeError):
            write(a.flags)
    assert b.flags == {} and orjson.dumps(a.flags) == b"{}" and dict(a.flags) == {}
    c = a.with_changes(text="new", flags={"pinned": True})
    assert (c.text, c.flags, c.id, c.seq) == ("new", {"pinned": True}, "m1", 3)
    assert a.text == "t" and a != c
    assert a != ("m1",) and (a == object()) is False
    with pytest.raises(TypeError):
        a.with_changes(nope=1)
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(AttributeError):
        a.extra = 1  # slots: no stray attributes
    assert "id='m1'" in repr(a)


def test_memory_update_leaves_the_stored_record_untouched(tmp_path):
    ns = MemoryNamespace("n", str(tmp_path / "events.jsonl"))
    store = {"type": "store", "id": "m1", "key": "k", "value": "v", "text": "v", "tags": ["a"], "stored_at": "s",
             "flags": {"f": 1}}
    delta = ns.apply_lines([jsonl.JsonlLine(1, 0, store)])
    first = delta.added[0]
    ns.apply_lines([jsonl.JsonlLine(2, 10, {"type": "update", "id": "m1", "value": "w", "flags": {"g": 2},
                                            "updated_at": "u"})])
    now = ns.get("m1")
    assert (first.value, first.flags, first.updated_at) == ("v", {"f": 1}, None)
    assert (now.value, now.text, now.flags, now.updated_at, now.seq) == ("w", "w", {"f": 1, "g": 2}, "u", first.seq)
