"""A big run record is read in parts (formats/json_raw, runs._record_in_parts) instead of parsed
whole: every value, problem and transcript event equals a whole parse's; bytes a whole parse
would refuse give None, so the caller parses them whole and reports them as for any record;
documents made from a record read so are byte-identical, it is never kept, and reading it holds
its bytes and one event at a time, not the whole parse."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import tracemalloc

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.formats import json_raw
from harn_ls.formats import runs as runs_fmt
from harn_ls.formats.transcripts import LazyEvents
from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, render_uri
from tests.unit.test_cache import project  # noqa: F401  (fixture)


def _plain(value):
    """A value with every RawArray / LazyEvents made a list (what a whole parse holds)."""
    if isinstance(value, (json_raw.RawArray, LazyEvents, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_scalars = (st.none() | st.booleans() | st.integers(-(2 ** 63), 2 ** 64 - 1) | st.integers(-(10 ** 40), 10 ** 40)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
            | st.sampled_from(['"', "\\", '\\"', "[", "]{", "}", '"]"', "\\\\", "\u2028", "é🙂"]))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=6) | st.sampled_from(["events", "id", "\\"]), inner, max_size=4),
                       max_leaves=30)
# events big enough to be kept apart (json_raw.MIN_ELEMENT_BYTES), with any value inside
_events = st.lists(st.builds(lambda v, n: {"text": "w" * n, "v": v}, _values, st.integers(70, 90)), min_size=1, max_size=5)
_transcripts = st.fixed_dictionaries({"events": _events}, optional={"messages": _values | _events, "id": _values,
                                                                      "assets": _values, "state": _values})
_documents = st.dictionaries(st.text(max_size=6) | st.sampled_from(["stages", "id"]), _values, max_size=4).flatmap(
    lambda d: _transcripts.map(lambda t: {**d, "transcript": t}))


@settings(max_examples=300, deadline=None)
@given(_documents, st.sampled_from([None, 2]), st.sampled_from([b"", b" \n", b"\t\r\n "]))
def test_parts_give_the_whole_parse(doc, indent, pad):
    # (the standard library writes integers past 64 bits as they are; orjson reads them as floats)
    raw = pad + json.dumps(doc, indent=indent, ensure_ascii=False).encode("utf-8", "surrogatepass") + pad
    parts = runs_fmt._record_in_parts(raw)
    assert isinstance(parts["transcript"]["events"], json_raw.RawArray)  # (big enough: kept apart)
    assert _plain(parts) == orjson.loads(raw)


_BIG = [{"text": "w" * 80, "n": i} for i in range(3)]


def _doc(**top) -> bytes:
    return orjson.dumps({"transcript": {"events": _BIG}, **top})


@pytest.mark.parametrize("raw", [
    # a repeated key: the last value wins, and the bytes of the others are still checked as a whole parse
    # checks them (msgspec keeps only the last, unread)
    _doc()[:-1] + b', "status": 1e400, "status": "completed"}',
    _doc()[:-1] + b', "status": "\xff", "status": "completed"}',
    b'{"transcript": {"events": ["\xff"], "events": ' + orjson.dumps(_BIG) + b"}}",
    b'{"transcript": {"events": [1E400], "events": ' + orjson.dumps(_BIG) + b"}}",
    b'{"transcript": {"events": [{"t": "\xc3("}], "events": ' + orjson.dumps(_BIG) + b"}, \"x\": 1}",
    # an event as deep as orjson allows on its own, three levels too deep inside the record
    b'{"transcript": {"events": [' + b"[" * 1022 + b"]" * 1022 + b"]}}",
    b'{"transcript": {"events": [{"a": ' + b"[" * 1021 + b"]" * 1021 + b"}]}}",
])
def test_what_a_whole_parse_refuses_is_refused_in_parts_too(raw):
    with pytest.raises((orjson.JSONDecodeError, RecursionError)):
        orjson.loads(raw)
    assert runs_fmt._record_in_parts(raw) is None


@pytest.mark.parametrize("depth", [200, 1019, 1021])
def test_a_deep_event_a_whole_parse_takes_reads_the_same(depth):
    """Up to the deepest a whole parse takes (the record, its transcript and the array around it:
    1,021 more). Near that, msgspec's own recursion limit (Python's, on 3.11) may refuse to split
    first: the record is then parsed whole, the same value."""
    raw = b'{"transcript": {"events": [' + b"[" * depth + b"]" * depth + b"]}}"
    parts = runs_fmt._record_in_parts(raw)
    if parts is None:
        assert depth > 200
        return
    events = parts["transcript"]["events"]
    assert isinstance(events, json_raw.RawArray) and list(events) == orjson.loads(raw)["transcript"]["events"]


def test_an_array_of_tiny_elements_stays_with_the_whole_parse():
    """`[0,0,...]`: a Raw each (48 bytes and a list slot) would cost ~28x the bytes, a whole parse
    8 bytes an element: that array is parsed with the record, a big-element array beside it kept apart."""
    raw = orjson.dumps({"transcript": {"messages": [0] * 50_000, "events": _BIG}})
    parts = runs_fmt._record_in_parts(raw)
    assert type(parts["transcript"]["messages"]) is list and isinstance(parts["transcript"]["events"], json_raw.RawArray)
    assert _plain(parts) == orjson.loads(raw)
    zeros = orjson.dumps({"transcript": {"events": [0] * 500_000}})
    tracemalloc.start()
    try:
        assert runs_fmt._record_in_parts(zeros) is None  # (the commas tell before a Raw is made)
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert top < len(zeros), (top, len(zeros))


def test_a_worker_snapshot_is_never_read_in_parts(tmp_path, monkeypatch):
    """The model keeps worker snapshots: a RawArray in one would keep its file's bytes alive."""
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
    path = tmp_path / "worker-w.json"
    path.write_bytes(orjson.dumps({"id": "w", "status": "running", "transcript": {"id": "t", "events": _BIG}}))
    snap = runs_fmt.read_worker_snapshot(str(path))
    assert snap.transcript is not None and not snap.problems
    assert type(snap.data["transcript"]["events"]) is list


def test_duplicate_keys_keep_the_last_value_in_the_first_place_as_a_whole_parse_does():
    big = orjson.dumps(_BIG)
    raw = b'{"a": 1, "transcript": {"events": [1], "id": "x", "events": ' + big + b'}, "a": 4}'
    parts = runs_fmt._record_in_parts(raw)
    assert _plain(parts) == orjson.loads(raw) == {"a": 4, "transcript": {"events": _BIG, "id": "x"}}
    assert list(parts) == ["a", "transcript"] and isinstance(parts["transcript"]["events"], json_raw.RawArray)


@pytest.mark.parametrize("raw", [
    b"", b"  ", b"[]", b"{", b'{"a": 1', b'{"a": 1}}', b'{"a": 1} x', b'{"a" 1}', b'{"a": 1,}', b"{,}",
    b'{"a": [1, 2}', b'{"a": tru}', b'{"a": "x}', b'{"a": "\\ud800"}', b'{"a": NaN}', b'{"a": 1e999}',
    b'\xef\xbb\xbf{"a": 1}', b'{"a": "\xff"}', b'{"a": "x\ny"}', b'{"transcript": {"events": [1, ]}}',
    b'{"transcript": {"events": [{"a": 1} {"b": 2}]}}', b'{"a": ' + b"[" * 1100 + b"]" * 1100 + b"}",
    b'{"a": "\\\\"x"}', b"{'a': 1}", b'{"a": 01}',
    # what msgspec only skips and orjson refuses: inside an event, a float past f64, invalid UTF-8, a
    # lone surrogate, a number of 400 digits; in a key, invalid UTF-8
    b'{"transcript": {"events": [{"n": 1E400}]}}', b'{"transcript": {"events": [{"t": "\xc3("}]}}',
    b'{"transcript": {"events": ["\\udc00"]}}', b'{"transcript": {"messages": [' + b"9" * 400 + b"]}}",
    b'{"\xff": 1}', b'{"transcript": {"\xfe": [1]}}',
])
def test_what_a_whole_parse_refuses_is_not_read_in_parts(raw):
    try:
        whole = orjson.loads(raw)
    except (orjson.JSONDecodeError, RecursionError):
        whole = None
    assert not isinstance(whole, dict)  # (refused, or not a record)
    assert runs_fmt._record_in_parts(raw) is None


def _record_fields(run) -> dict:
    out = {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name not in ("transcripts", "data")}
    out["data"] = _plain(run.data)
    out["transcripts"] = [
        {f.name: _plain(getattr(t, f.name)) for f in dataclasses.fields(t)} for t in run.transcripts]
    return out


def _odd_record(path) -> None:
    """A record whose transcript has events a view skips or complains about, and a stage transcript."""
    events = [{"kind": "message", "role": "user", "text": "hi [there] \"quoted\" \\ back" + " and more" * 20,
               "visibility": "public"},
              7, {"role": 5, "blocks": "not a list", "visibility": "nobody"}, None,
              {"role": "assistant", "blocks": [{"type": "text", "text": "ok {}"}], "metadata": [1]}]
    doc = {"_type": "run_record", "id": "run-odd", "status": "done", "stages": [
        {"id": "s1", "usage": {"input_tokens": 3}, "transcript": {"id": "tr-stage", "events": [{"text": "x"}]}}],
        "transcript": {"_type": "transcript", "id": "tr-top", "version": 9, "events": events,
                       "messages": [{"role": "user", "content": "hi"}, 3], "assets": ["a.png", 4]},
        "tool_recordings": [{"tool_name": "t", "duration_ms": 3, "timestamp": "2026-01-01T00:00:00Z"}]}
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def test_a_record_read_in_parts_equals_the_whole_read(project, monkeypatch):
    _odd_record(project / ".harn-runs" / "run-odd.json")
    paths = sorted(str(p) for p in (project / ".harn-runs").glob("*.json"))
    for path in paths:
        for summaries in (False, True):
            monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1 << 40)
            whole = runs_fmt.read_run_record(path, summaries=summaries)
            monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
            parts = runs_fmt.read_run_record(path, summaries=summaries)
            assert _record_fields(parts) == _record_fields(whole), path
    odd = runs_fmt.read_run_record(str(project / ".harn-runs" / "run-odd.json"))
    assert odd.problems and isinstance(odd.transcripts[0].events, LazyEvents)
    assert [e.index for e in odd.transcripts[0].events] == [0, 2, 4]  # (the numbers and null skipped)


def test_unreadable_dense_or_half_written_records_are_reported_as_before(project, monkeypatch):
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
    runs_dir = project / ".harn-runs"
    absent = runs_fmt.read_run_record(str(runs_dir / "absent.json"))
    assert absent.data is None and [p.code for p in absent.problems] == [runs_fmt.CODE_UNREADABLE]
    dense = runs_dir / "dense.json"
    dense.write_bytes(b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    dense_run = runs_fmt.read_run_record(str(dense))
    assert dense_run.data is None and [p.code for p in dense_run.problems] == [runs_fmt.CODE_TOO_LARGE]
    half = runs_dir / "half.json"
    half.write_bytes(b'{"_type": "run_record", "id": "half", "transcript": {"events": [{"text": "a"}')
    half_run = runs_fmt.read_run_record(str(half))
    assert half_run.data is None and half_run.retry  # the half-written file: read again on its next change
    assert [p.code for p in half_run.problems] == [runs_fmt.CODE_INVALID_JSON]
    bad = runs_dir / "bad-event.json"
    bad.write_bytes(b'{"_type": "run_record", "id": "bad", "transcript": {"events": [{"text": "a\xff"}]}}')
    bad_run = runs_fmt.read_run_record(str(bad))
    assert bad_run.data is None and [p.code for p in bad_run.problems] == [runs_fmt.CODE_INVALID_UTF8]


def _documents(ws) -> dict[str, str]:
    settings_small = dataclasses.replace(RenderSettings(), transcript_window_bytes=300)
    out = {}
    for tid in sorted(ws.transcripts):
        for page in range(3):
            uri = f"harn-state:/transcripts/{tid}.md?page={page}"
            out[uri] = render_uri(ws, uri, settings_small)
    for rid in sorted(ws.runs):
        for uri in (f"harn-state:/runs/{rid}.md", f"harn-state:/runs/{rid}.md?normalized=1"):
            out[uri] = render_uri(ws, uri, RenderSettings())
    return out


def test_documents_from_records_read_in_parts_are_identical_and_not_kept(project, monkeypatch):
    _odd_record(project / ".harn-runs" / "run-odd.json")
    ws = Workspace.load(str(project))
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1 << 40)
    whole = _documents(ws)
    ws._transcript_cache.clear()
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)  # every record read in parts
    assert _documents(ws) == whole
    assert not ws._transcript_cache  # (a record read in parts holds its bytes: never kept)


def test_a_changed_record_is_read_again(project, monkeypatch):
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
    path = project / ".harn-runs" / "run-odd.json"
    _odd_record(path)
    ws = Workspace.load(str(project))
    uri = "harn-state:/transcripts/tr-top.md"
    before = render_uri(ws, uri, RenderSettings())
    assert "hi \\[there\\]" in before or "hi [there]" in before
    doc = orjson.loads(path.read_bytes())
    doc["transcript"]["events"][0]["text"] = "changed words"
    path.write_bytes(orjson.dumps(doc))
    st_ = os.stat(path)
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000))
    after = render_uri(ws, uri, RenderSettings())
    assert "changed words" in after and after != before


def test_the_density_rule_comes_before_the_parts(project, monkeypatch):
    """`{` bytes inside strings, one in 11 bytes: the density rule (counted over the whole file, as
    for any record) refuses it before anything is split or parsed."""
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
    path = project / ".harn-runs" / "braces.json"
    path.write_bytes(b'{"id": "braces", "task": "' + b"{xxxxxxxxxx" * 20_000 + b'"}')
    run = runs_fmt.read_run_record(str(path))
    assert run.data is None and [p.code for p in run.problems] == [runs_fmt.CODE_TOO_LARGE]


def _events_record(path, word: str, n: int = 40) -> None:
    events = [{"kind": "message", "role": "user" if i % 2 else "assistant", "text": f"{word} {i} " + "w" * 50}
              for i in range(n)]
    doc = {"_type": "run_record", "id": "run-ev", "status": "done",
           "transcript": {"_type": "transcript", "id": "tr-ev", "events": events, "messages": []}}
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def test_a_record_rewritten_during_a_render_gives_one_document_never_a_mix(project, monkeypatch):
    """The record's bytes are read once per document: a rewrite (in place or Harn's .tmp + rename)
    while a page is made leaves that page as the bytes read, never a mix; the next page made
    after the change shows the new file."""
    from harn_ls.render import documents

    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
    path = project / ".harn-runs" / "run-ev.json"
    _events_record(path, "alpha")
    ws = Workspace.load(str(project))
    small = dataclasses.replace(RenderSettings(), transcript_window_bytes=1000)
    uri = "harn-state:/transcripts/tr-ev.md?page=1"
    at_rest = render_uri(ws, uri, small)
    real = documents.render_event
    calls = []

    def rewriting(i, ev, ctx):
        if not calls:
            tmp = path.with_suffix(".json.tmp")
            _events_record(tmp, "omega")
            os.replace(tmp, path)
        calls.append(i)
        return real(i, ev, ctx)

    monkeypatch.setattr(documents, "render_event", rewriting)
    during = render_uri(ws, uri, small)
    assert during == at_rest and "omega" not in during
    monkeypatch.setattr(documents, "render_event", real)
    st_ = os.stat(path)
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000))
    after = render_uri(ws, uri, small)
    assert "omega" in after and "alpha" not in after


def test_a_big_record_read_in_parts_holds_its_bytes_not_its_whole_parse(tmp_path, monkeypatch):
    """What reading a 2 MB record allocates at its peak: in parts, its bytes and little more; parsed
    whole, several times the file (every event's dicts and strings at once)."""
    path = tmp_path / "run-big.json"
    events = [{"kind": "message", "role": "assistant", "text": f"step {i} " + "word " * 40, "metadata": {"i": i}}
              for i in range(8_000)]
    path.write_bytes(orjson.dumps({"_type": "run_record", "id": "big", "transcript": {"id": "t", "events": events}}))
    size = path.stat().st_size
    assert size > 2 << 20

    def peak(lazy_from: int) -> int:
        monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", lazy_from)
        tracemalloc.start()
        try:
            run = runs_fmt.read_run_record(str(path), summaries=True)
            _, top = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert run.data is not None and run.transcripts[0].event_count == 8_000
        return top

    whole, parts = peak(1 << 40), peak(1)
    assert parts < 1.6 * size < whole / 2, (size, parts, whole)


def test_the_bench_sized_record_reads_the_same_in_parts():
    """The bench's 14 MB record, when generated: the same record as a whole parse (skipped if absent)."""
    found = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "bench", "out", "large",
                                          ".harn-runs", "*.json")), key=os.path.getsize)
    if not found or os.path.getsize(found[-1]) < runs_fmt.LAZY_RECORD_BYTES:
        pytest.skip("bench/out/large not generated")
    with open(found[-1], "rb") as fh:
        raw = fh.read()
    assert _plain(runs_fmt._record_in_parts(raw)) == orjson.loads(raw)


@pytest.mark.parametrize("summaries", [False, True])
def test_each_event_of_a_record_read_in_parts_is_parsed_once(tmp_path, monkeypatch, summaries):
    """Reading a big record parses each transcript event once (the check that it is what a whole
    parse gives, which also marks the events a view must look at again), not a second time for the
    view; only an event with a problem (or one a view skips) is parsed again, for its problem."""
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)
    events = [{"kind": "message", "role": "user", "text": f"clean {i} " + "w" * 60} for i in range(50)]
    events[7] = {"role": 5, "text": "a role that is not text " + "w" * 60}
    events[30] = ["not", "an", "event", "w" * 60]
    path = tmp_path / "run-once.json"
    path.write_bytes(orjson.dumps({"_type": "run_record", "id": "once", "transcript": {"id": "t", "events": events}}))
    real, calls = orjson.loads, []

    def counting(data):
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(orjson, "loads", counting)
    run = runs_fmt.read_run_record(str(path), summaries=summaries)
    monkeypatch.setattr(orjson, "loads", real)
    assert len(calls) == 1 + 50 + 2  # (the record without its events, each event, the two with a problem)
    assert [p.message for p in run.problems] == [
        "transcript run:once: events[7]: field 'role' is int, expected str; shown as absent",
        "transcript run:once: events[30] is not an object; skipped"]
    if summaries:
        assert run.transcripts[0].event_count == 49
    else:
        assert [e.index for e in run.transcripts[0].events][6:9] == [6, 7, 8] and len(run.transcripts[0].events) == 49
