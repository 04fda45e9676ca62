"""Store lines decoded in C into their records (`decode_store_line`, issue 32): every line reads as the
orjson path reads it, to the record, the problem and the sequence. A line the decoder cannot read the
same way (an integer past 64 bits, an unknown member, flags, a key order Harn does not write, bad JSON)
is left to that path; the records it makes are invisible to the cyclic collector."""

from __future__ import annotations

import gc

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import IN_TEXT, decode_store_line


def _store(i: str, value, text=None, **extra) -> dict:
    return {"type": "store", "id": i, "namespace": "ns", "key": f"k/{i}", "value": value,
            "text": serde_compact(value) if text is None else text, "tags": ["note"],
            "stored_at": "2026-03-01T00:00:50.070463585+00:00", **extra}


def _line(event: dict) -> bytes:
    try:
        return orjson.dumps(event) + b"\n"
    except TypeError:  # (an integer orjson cannot write: written as Harn's serde_json writes it)
        return serde_compact(event).encode() + b"\n"


def _project(path, *, decoded: bool) -> MemoryNamespace:
    space = MemoryNamespace("ns", str(path))
    tail = JsonlTail(str(path), decode=decode_store_line if decoded else None)
    for batch in tail.iter_batches():
        space.apply_lines(batch.lines)
    return space


def _seen(space: MemoryNamespace) -> tuple:
    return ([r.to_json() | {"line": r.line_no} for r in space.records()], [r.to_json() for r in space.hidden],
            [(p.line, p.code, p.message, p.severity) for p in space.problems], space.seq, space.event_count,
            space.last_event_at, sorted(space.forgotten))


def _both(path, data: bytes) -> tuple[MemoryNamespace, MemoryNamespace]:
    path.write_bytes(data)
    fast, plain = _project(path, decoded=True), _project(path, decoded=False)
    assert _seen(fast) == _seen(plain)
    return fast, plain


BIG = 1 << 70
# Lines the decoder must leave to orjson, each with what orjson makes of it.
LEFT_TO_ORJSON = [
    _line(_store("big-int", {"n": BIG}, text="x")),  # orjson reads a float; msgspec would keep the int
    _line(_store("big-int-scalar", BIG, text="x")),
    _line(_store("big-neg", -(1 << 63) - 1, text="x")),
    _line(_store("big-prov", {"a": 1}, provenance={"run": BIG})),
    _line(_store("unknown-member", {"a": 1}, extra_member=[1, 2])),
    _line(_store("flags", {"a": 1}, flags={"pinned": True})),
    _line(_store("empty-flags", {"a": 1}, flags={})),
    _line(_store("bad-status", {"a": 1}, status=5)),  # Harn's store drops it; the record has no status
    b'{"id":"order","type":"store","namespace":"ns","key":"k","value":1,"text":"1","tags":[],"stored_at":"t"}\n',
]
# Lines orjson refuses (the decoder must not accept them either).
REFUSED = [
    b'{"type":"store","id":"inf","namespace":"ns","key":"k","value":{"a":1e400},"text":"x","tags":[],"stored_at":"t"}\n',
    b'{"type":"store","id":"utf8","namespace":"ns","key":"k","value":"\xff","text":"x","tags":[],"stored_at":"t"}\n',
    b'{"type":"store","id":"surrogate","namespace":"ns","key":"k","value":"\\ud800","text":"x","tags":[],"stored_at":"t"}\n',
    b'{"type":"store","id":"two","namespace":"ns","key":"k","value":1,"text":"1","tags":[],"stored_at":"t"} {"a":1}\n',
    b'{"type":"store","id":"trailing","namespace":"ns","key":"k","value":[1,],"text":"x","tags":[],"stored_at":"t"}\n',
]
# An integer past 1.8e308 where msgspec keeps it exact and nothing of the record shows it: orjson
# refuses each of these lines (found by a differential fuzzer in review).
HUGE = b"1" + b"0" * 309
_HEAD = b'{"type":"store","id":"h","namespace":"ns","key":"k","text":"x","tags":[],"stored_at":"t",'
HIDDEN_HUGE = [
    _HEAD + b'"value":1,"seq":' + HUGE + b"}\n",  # a member the projection sets
    _HEAD + b'"value":1,"line_no":-' + HUGE + b"}\n",
    _HEAD + b'"value":' + HUGE + b',"value":1}\n',  # an earlier duplicate member (msgspec keeps the last)
    _HEAD + b'"value":{"a":' + HUGE + b',"a":1}}\n',  # a duplicate key inside the value
    _HEAD + b'"value":[{"a":' + HUGE + b',"a":1}]}\n',
    _HEAD + b'"value":1,"provenance":' + HUGE + b',"provenance":2}\n',
    _HEAD + b'"value":1,"provenance":{"r":' + HUGE + b',"r":2}}\n',
    _HEAD + b'"va\\u006Cue":' + HUGE + b',"value":1}\n',  # the duplicate's name spelled with an escape
    _HEAD + b'"value" :' + HUGE + b',"value":1}\n',  # ...or with a space before its colon
]


def test_a_line_harn_writes_is_decoded_and_its_value_kept_as_its_text(tmp_path):
    note = {"confidence": 0.74, "source": "chat", "text": "Invoice rounding: \"half-even\", ünïcode \u2028 ok"}
    line = _line(_store("a", note, provenance={"run_id": "r1"}, status="active", scope="project"))
    record = decode_store_line(line.rstrip(b"\n"))
    assert record is not None and record._value is IN_TEXT and record.value == note
    assert record.provenance == {"run_id": "r1"} and record.status == "active" and record.scope == "project"
    fast, _plain = _both(tmp_path / "events.jsonl", line)
    assert fast.get("a").value_in_text


def test_lines_the_decoder_cannot_read_as_orjson_does_are_left_to_orjson(tmp_path):
    for line in LEFT_TO_ORJSON:
        assert decode_store_line(line.rstrip(b"\n")) is None, line
    fast, _plain = _both(tmp_path / "events.jsonl", b"".join(LEFT_TO_ORJSON))
    assert fast.get("big-int").value == {"n": float(BIG)} and fast.get("big-int-scalar").value == float(BIG)
    assert fast.get("big-prov").provenance == {"run": float(BIG)}
    assert fast.get("flags").flags == {"pinned": True} and fast.get("bad-status").status is None
    assert len(fast.records()) == len(LEFT_TO_ORJSON) and not fast.problems


def test_lines_orjson_refuses_are_refused_with_the_same_problem(tmp_path):
    for line in REFUSED:
        assert decode_store_line(line.rstrip(b"\n")) is None, line
    ok = _line(_store("ok", {"a": 1}))
    fast, _plain = _both(tmp_path / "events.jsonl", b"".join(REFUSED) + ok)
    assert [r.id for r in fast.records()] == ["ok"]
    assert [(p.line, p.code) for p in fast.problems] == [(1, "HL-JSONL-001"), (2, "HL-JSONL-002"), (3, "HL-JSONL-001"),
                                                         (4, "HL-JSONL-001"), (5, "HL-JSONL-001")]


def test_an_integer_orjson_refuses_is_refused_wherever_the_line_hides_it(tmp_path):
    for line in HIDDEN_HUGE:
        assert decode_store_line(line.rstrip(b"\n")) is None, line
    fast, _plain = _both(tmp_path / "events.jsonl", b"".join(HIDDEN_HUGE))
    assert fast.records() == [] and {p.code for p in fast.problems} == {"HL-JSONL-001"}
    assert len(fast.problems) == len(HIDDEN_HUGE)


def test_records_compare_unequal_exactly_when_not_equal(tmp_path):
    fast, plain = _both(tmp_path / "events.jsonl", _line(_store("a", {"a": 1})) + _line(_store("b", {"a": 1})))
    assert fast.get("a") == plain.get("a") and not (fast.get("a") != plain.get("a"))  # (folded or not)
    assert fast.get("a") != fast.get("b") and not (fast.get("a") == fast.get("b"))


def test_a_decoded_store_is_projected_as_the_field_checks_project_it(tmp_path):
    events = [
        _store("a", {"a": 1}),
        _store("s", "a string value"),
        _store("n", 7, text="seven"),
        _store("f", {"f": 1e300}),  # orjson spells the exponent "e+300": not kept as the text
        _store("t", {"a": 1}, text='{"a": 1}'),  # a text that is not the compact JSON
        {"type": "forget", "id": "g", "namespace": "ns", "forgotten_ids": ["a"], "forgotten_at": "2026-03-02T00:00:00Z"},
        _store("a", {"again": True}),  # stored after its forget: hidden
        _store("d", {"a": 1}, provenance=None, status=None, tags=[], seq="its own", line_no=-1, updated_at="2020"),
        {"type": "update", "id": "t", "namespace": "ns", "text": "new text", "updated_at": "2026-03-03T00:00:00Z"},
        {"type": "update", "id": "n", "namespace": "ns", "value": {"now": "an object"}},
    ]
    fast, _plain = _both(tmp_path / "events.jsonl", b"".join(map(_line, events)))
    assert fast.get("t").text == "new text" and fast.get("t").value == {"a": 1}
    assert fast.get("d").updated_at is None and fast.get("d").seq == 7 and fast.get("d").line_no == 8
    assert [r.id for r in fast.hidden] == ["a"] and fast.get("a") is None


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 80), max_value=1 << 80),
                       st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_json = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                                    max_size=3), max_leaves=8)
_field = st.sampled_from(["id", "key", "stored_at", "text", "tags", "status", "scope", "provenance", "flags", "value",
                          "namespace", "seq", "updated_at", "other"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.tuples(_json, st.booleans(), st.dictionaries(_field, _json, max_size=2),
                                 st.lists(_field, max_size=1)), min_size=1, max_size=6))
def test_random_store_lines_read_the_same_either_way(tmp_path, events):
    lines = []
    for n, (value, own_text, extra, dropped) in enumerate(events):
        event = _store(f"id{n % 3}", value, text=None if own_text else "plain text") | extra
        for name in dropped:
            event.pop(name, None)
        lines.append(_line(event))
    _both(tmp_path / "events.jsonl", b"".join(lines))


def test_decoded_records_and_the_map_of_them_are_not_tracked_by_the_collector(tmp_path):
    fast, _plain = _both(tmp_path / "events.jsonl", b"".join(_line(_store(f"r{i}", {"n": i})) for i in range(50)))
    assert not any(gc.is_tracked(r) for r in fast.records())
    assert not gc.is_tracked(fast.active)  # (a seq -> record dict of untracked records is not walked either)
