"""A big run record is read in pieces (formats/json_pieces, runs.read_run_record_lean) instead of
parsed whole: every value, problem and transcript event equals a whole parse's; bytes a whole
parse would refuse (or that the pieces reader does not take) give None, so the caller reads them
whole; documents made from a record read so are byte-identical, and it is never kept."""

from __future__ import annotations

import dataclasses
import os
import tempfile

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls import workspace_runs
from harn_ls.formats import json_pieces
from harn_ls.formats import runs as runs_fmt
from harn_ls.formats.transcripts import LazyEvents
from harn_ls.render import RenderSettings, render_uri
from harn_ls.workspace import Workspace
from tests.unit.test_cache import project  # noqa: F401  (fixture)


def _plain(value):
    """A value with every LazyArray / LazyEvents made a list (what a whole parse holds)."""
    if isinstance(value, (json_pieces.LazyArray, LazyEvents, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_scalars = (st.none() | st.booleans() | st.integers(-(2 ** 63), 2 ** 64 - 1)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
            | st.sampled_from(['"', "\\", '\\"', "[", "]{", "}", '"]"', "\\\\"]))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=6) | st.sampled_from(["events", "id", "\\"]), inner, max_size=4),
                       max_leaves=30)
_transcripts = st.fixed_dictionaries({}, optional={"events": st.lists(_values, max_size=5), "messages": _values,
                                                   "id": _values, "assets": _values, "state": _values})
_documents = st.dictionaries(st.text(max_size=6) | st.sampled_from(["transcript", "stages", "id"]),
                             _values | _transcripts, max_size=5)


def _lean(raw: bytes, directory) -> dict:
    """`raw` written to a file and read in pieces through it: the plain values (read back while
    the file is open)."""
    path = os.path.join(str(directory), "record.json")
    with open(path, "wb") as fh:
        fh.write(raw)
    fd = os.open(path, os.O_RDONLY)
    src = json_pieces.PieceFile(fd, os.fstat(fd))
    try:
        return _plain(runs_fmt._lean_object(src))
    finally:
        src.close()


# Windows of the scan, blocks of the walk and chunks of the read-backs, down to one byte: their
# edges fall inside strings, escapes, keys, numbers and between a backslash and its quote.
_windows = st.sampled_from([1, 2, 3, 5, 7, 16, 64, 1 << 20])


@settings(max_examples=300, deadline=None)
@given(_documents, st.sampled_from([0, orjson.OPT_INDENT_2]), st.sampled_from([b"", b" \n", b"\t\r\n "]),
       _windows, _windows, _windows)
def test_pieces_give_the_whole_parse(doc, option, pad, scan_window, block, chunk):
    raw = pad + orjson.dumps(doc, option=option) + pad
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(json_pieces, "MAX_SHARE", 1)  # (small documents are mostly quotes and brackets)
        mp.setattr(json_pieces, "SCAN_WINDOW", scan_window)
        mp.setattr(json_pieces, "BLOCK", block)
        mp.setattr(json_pieces, "READ_CHUNK", chunk)
        assert _lean(raw, tmp) == orjson.loads(raw)


@pytest.mark.parametrize("window", [1, 2, 3, 4, 5, 6])
def test_backslash_runs_across_scan_windows(window, tmp_path, monkeypatch):
    """A quote escaped (or not) by a run of backslashes that starts windows before it."""
    monkeypatch.setattr(json_pieces, "MAX_SHARE", 1)
    monkeypatch.setattr(json_pieces, "SCAN_WINDOW", window)
    for run in range(0, 9):
        text = "a" + "\\" * run + '"]{' + "\\" * run
        doc = {"k": [text, {"x": text + "[}"}], "transcript": {"events": [text, {"t": text}, [text]], "messages": []}}
        raw = orjson.dumps(doc)
        assert _lean(raw, tmp_path) == doc
    # an odd run before a document's closing quote escapes it: the string never ends
    with pytest.raises(json_pieces.NotPlain):
        _lean(b'{"a": "x\\\\\\"}', tmp_path)


@pytest.mark.parametrize("raw", [
    b"", b"  ", b"[]", b"{", b'{"a": 1', b'{"a": 1}}', b'{"a": 1} x', b'{"a" 1}', b'{"a": 1,}', b"{,}",
    b'{"a": [1, 2}', b'{"a": tru}', b'{"a": "x}', b'{"a": "\\ud800"}', b'{"a": NaN}', b'{"a": 1e999}',
    b'\xef\xbb\xbf{"a": 1}', b'{"a": "\xff"}', b'{"a": "x\ny"}', b'{"transcript": {"events": [1, ]}}',
    b'{"transcript": {"events": [{"a": 1} {"b": 2}]}}', b'{"a": ' + b"[" * 600 + b"]" * 600 + b"}",
    b'{"a": "\\\\"x"}', b"{'a': 1}", b'{"a": 01}',
])
def test_what_a_whole_parse_might_refuse_is_not_read_in_pieces(raw, tmp_path):
    with pytest.raises(json_pieces.NotPlain):
        _lean(raw, tmp_path)


def _record_fields(run) -> dict:
    out = {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name not in ("transcripts", "data")}
    out["data"] = _plain(run.data)
    out["transcripts"] = [
        {f.name: _plain(getattr(t, f.name)) for f in dataclasses.fields(t)} for t in run.transcripts]
    return out


def _odd_record(path) -> None:
    """A record whose transcript has events a view skips or complains about, and a stage transcript."""
    events = [{"kind": "message", "role": "user", "text": "hi [there] \"quoted\" \\ back", "visibility": "public"},
              7, {"role": 5, "blocks": "not a list", "visibility": "nobody"}, None,
              {"role": "assistant", "blocks": [{"type": "text", "text": "ok {}"}], "metadata": [1]}]
    doc = {"_type": "run_record", "id": "run-odd", "status": "done", "stages": [
        {"id": "s1", "usage": {"input_tokens": 3}, "transcript": {"id": "tr-stage", "events": [{"text": "x"}]}}],
        "transcript": {"_type": "transcript", "id": "tr-top", "version": 9, "events": events,
                       "messages": [{"role": "user", "content": "hi"}, 3], "assets": ["a.png", 4], "id": "tr-top"},
        "tool_recordings": [{"tool_name": "t", "duration_ms": 3, "timestamp": "2026-01-01T00:00:00Z"}]}
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def test_a_record_read_in_pieces_equals_the_whole_read(project):
    _odd_record(project / ".harn-runs" / "run-odd.json")
    paths = sorted(str(p) for p in (project / ".harn-runs").glob("*.json"))
    for path in paths:
        for summaries in (False, True):
            lean = runs_fmt.read_run_record_lean(path, summaries=summaries)
            assert lean is not None, path
            assert _record_fields(lean) == _record_fields(runs_fmt.read_run_record(path, summaries=summaries)), path
    odd = runs_fmt.read_run_record_lean(paths[-1] if paths[-1].endswith("run-odd.json") else
                                        str(project / ".harn-runs" / "run-odd.json"))
    assert odd.problems and isinstance(odd.transcripts[0].events, LazyEvents)
    assert [e.index for e in odd.transcripts[0].events] == [0, 2, 4]  # (the numbers and null skipped)


def test_unreadable_or_dense_records_are_left_to_the_whole_read(project):
    runs_dir = project / ".harn-runs"
    assert runs_fmt.read_run_record_lean(str(runs_dir / "absent.json")) is None
    dense = runs_dir / "dense.json"
    dense.write_bytes(b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    assert runs_fmt.read_run_record_lean(str(dense)) is None
    assert runs_fmt.read_run_record(str(dense)).data is None  # (refused by the density check, as before)
    half = runs_dir / "half.json"
    half.write_bytes(b'{"_type": "run_record", "id": "half", "transcript": {"events": [{"text": "a"}')
    assert runs_fmt.read_run_record_lean(str(half)) is None
    whole = runs_fmt.read_run_record(str(half))
    assert whole.data is None and whole.retry  # the whole read still reports the half-written file


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


def test_documents_from_records_read_in_pieces_are_identical_and_not_kept(project, monkeypatch):
    _odd_record(project / ".harn-runs" / "run-odd.json")
    ws = Workspace.load(str(project))
    monkeypatch.setattr(workspace_runs, "LEAN_RECORD_BYTES", 1 << 40)
    whole = _documents(ws)
    ws._transcript_cache.clear()
    monkeypatch.setattr(workspace_runs, "LEAN_RECORD_BYTES", 1)  # every record read in pieces
    assert _documents(ws) == whole
    assert not ws._transcript_cache  # (a record read in pieces holds its file's bytes: never kept)


def test_a_changed_record_is_read_again(project, monkeypatch):
    monkeypatch.setattr(workspace_runs, "LEAN_RECORD_BYTES", 1)
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


def test_a_document_made_of_quotes_or_brackets_is_left_to_the_whole_parse(tmp_path):
    """The scan's arrays cost several bytes per quote and bracket: past one in MAX_SHARE bytes it
    declines (the whole parse, with its density check, takes such a file)."""
    many_strings = b'{"a": [' + b",".join([b'""'] * 50_000) + b"]}"
    with pytest.raises(json_pieces.NotPlain):
        _lean(many_strings, tmp_path)
    assert _lean(b'{"a": ["' + b"x" * 400 + b'"]}', tmp_path) == {"a": ["x" * 400]}
