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

from harn_ls.formats import json_pieces
from harn_ls.formats import runs as runs_fmt
from harn_ls.formats.transcripts import LazyEvents
from harn_ls.model import runs as workspace_runs
from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, render_uri
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


def _escaped_by_hand(data: bytes, maybe: list[int], carried: int) -> list[int]:
    """The quotes of `maybe` an odd run of backslashes ends right before, counted a byte at a time."""
    out = []
    for q in maybe:
        i = q - 1
        while i >= 0 and data[i] == 0x5C:
            i -= 1
        if (q - 1 - i + (carried if i < 0 else 0)) % 2:
            out.append(q)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\\", b'"', b"a", b"\\\\\\"]), max_size=60), st.integers(0, 5))
def test_escaped_quotes_are_counted_as_byte_by_byte(parts, carried):
    import numpy as np

    data = b"".join(parts)
    view = np.frombuffer(data, dtype=np.uint8)
    maybe = [i for i in range(1, len(data)) if data[i] == 0x22 and data[i - 1] == 0x5C]
    got = json_pieces._escaped_quotes(np, view, np.array(maybe, dtype=np.int64), carried) if maybe else []
    assert got == _escaped_by_hand(data, maybe, carried)


def test_a_record_of_long_backslash_runs_is_scanned_with_arrays(tmp_path, monkeypatch):
    """Megabytes of backslashes before quotes: the same answer as the whole parse (the runs are
    counted by arrays, not a Python step per backslash)."""
    calls = []
    real = json_pieces._escaped_quotes
    monkeypatch.setattr(json_pieces, "_escaped_quotes", lambda *a: calls.append(1) or real(*a))
    text = "\\" * 400_000 + '"' + "x" + "\\" * 3 + '"'  # escaped quotes after even runs of escaped backslashes
    doc = {"transcript": {"events": [{"text": text}, {"text": "\\" * 300_000}], "messages": []}, "k": [text]}
    raw = orjson.dumps(doc)
    assert len(raw) > 2_000_000
    assert _lean(raw, tmp_path) == doc
    assert calls  # the windows with escaped quotes went through the array count


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
                       "messages": [{"role": "user", "content": "hi"}, 3], "assets": ["a.png", 4]},
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
    assert not ws._transcript_cache  # (a record read in pieces holds its file open: never kept)


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


def test_the_density_rule_is_met_window_by_window(project, monkeypatch):
    """`{` bytes inside strings, one in 11 bytes: too few for the scan's share, too many for the
    density rule (counted over every window, as a whole read counts them): left to the whole read,
    which refuses the file as before."""
    monkeypatch.setattr(json_pieces, "SCAN_WINDOW", 4096)
    path = project / ".harn-runs" / "braces.json"
    path.write_bytes(b'{"id": "braces", "task": "' + b"{xxxxxxxxxx" * 20_000 + b'"}')
    assert runs_fmt.read_run_record_lean(str(path)) is None
    whole = runs_fmt.read_run_record(str(path))
    assert whole.data is None and [p.code for p in whole.problems] == [runs_fmt.CODE_TOO_LARGE]


def _events_record(path, word: str, n: int = 40) -> None:
    events = [{"kind": "message", "role": "user" if i % 2 else "assistant", "text": f"{word} {i} " + "w" * 50}
              for i in range(n)]
    doc = {"_type": "run_record", "id": "run-ev", "status": "done",
           "transcript": {"_type": "transcript", "id": "tr-ev", "events": events, "messages": []}}
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def _rewrite_in_place(path, old: bytes, new: bytes) -> None:
    """The same file (inode) with `old` replaced by `new` (equal lengths: the same size)."""
    data = path.read_bytes().replace(old, new)
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate()


def test_a_piece_read_after_the_file_changed_raises_changed(tmp_path):
    path = tmp_path / "run-ev.json"
    _events_record(path, "alpha")
    lean = runs_fmt.read_run_record_lean(str(path))
    events = lean.transcripts[0].events
    assert events[3].text.startswith("alpha 3 ")
    _rewrite_in_place(path, b"alpha", b"omega")  # (same size; mtime and ctime move)
    with pytest.raises(json_pieces.Changed):
        events[3]
    with pytest.raises(json_pieces.Changed):
        list(events)
    # a change the fstat cannot see (the same size, mtime and ctime): the pieces' CRC-32 sees it
    lean = runs_fmt.read_run_record_lean(str(path))
    raw_events = lean.data["transcript"]["events"]
    _rewrite_in_place(path, b"omega 3", b"OMEGA 3")
    st_ = os.stat(path)
    raw_events._src._stamp = (st_.st_size, st_.st_mtime_ns, st_.st_ctime_ns)
    assert raw_events[2]["text"].startswith("omega 2 ")  # (an unchanged piece still reads)
    with pytest.raises(json_pieces.Changed):
        raw_events[3]
    # a file cut short
    lean = runs_fmt.read_run_record_lean(str(path))
    with open(path, "r+b") as fh:
        fh.truncate(100)
    with pytest.raises(json_pieces.Changed):
        lean.transcripts[0].events[39]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open fds through /proc")
def test_a_record_rewritten_during_a_render_gives_the_new_document(project, monkeypatch):
    """A rewrite in place while the transcript is rendered (after its scan): the document is made
    again from the new file, equal to one made from it at rest, never a mix; the fds are closed."""
    from harn_ls.render import documents

    monkeypatch.setattr(workspace_runs, "LEAN_RECORD_BYTES", 1)
    path = project / ".harn-runs" / "run-ev.json"
    _events_record(path, "alpha")
    ws = Workspace.load(str(project))
    small = dataclasses.replace(RenderSettings(), transcript_window_bytes=1000)
    uri = "harn-state:/transcripts/tr-ev.md?page=1"
    before = render_uri(ws, uri, small)
    _events_record(path, "omega")
    at_rest = render_uri(ws, uri, small)
    assert "omega" in at_rest and "alpha" not in at_rest and "alpha" in before
    _events_record(path, "alpha")
    fds = _open_fds()
    real = documents.render_event
    calls = []

    def rewriting(i, ev, ctx):
        if not calls:
            _rewrite_in_place(path, b"alpha", b"omega")
        calls.append(i)
        return real(i, ev, ctx)

    monkeypatch.setattr(documents, "render_event", rewriting)
    during = render_uri(ws, uri, small)
    assert during == at_rest and "alpha" not in during
    assert _open_fds() == fds

    def always_rewriting(i, ev, ctx):
        _rewrite_in_place(path, b"omega", b"alpha") if b"omega" in path.read_bytes() else \
            _rewrite_in_place(path, b"alpha", b"omega")
        return real(i, ev, ctx)

    monkeypatch.setattr(documents, "render_event", always_rewriting)
    text = render_uri(ws, uri, small)
    assert "changed while this document was read" in text and "alpha" not in text and "omega" not in text
    assert _open_fds() == fds


def test_a_record_replaced_by_rename_during_a_render_gives_the_new_document(project, monkeypatch):
    """Harn's own way to write (a .tmp renamed over the record): the fd still reads the file that
    was scanned, but the rename moved its ctime (one link less), so the document is made again
    from the new file: equal to one made from it at rest."""
    from harn_ls.render import documents

    monkeypatch.setattr(workspace_runs, "LEAN_RECORD_BYTES", 1)
    path = project / ".harn-runs" / "run-ev.json"
    _events_record(path, "omega")
    ws = Workspace.load(str(project))
    small = dataclasses.replace(RenderSettings(), transcript_window_bytes=1000)
    uri = "harn-state:/transcripts/tr-ev.md?page=1"
    at_rest = render_uri(ws, uri, small)
    _events_record(path, "alpha")
    real = documents.render_event
    calls = []

    def renaming(i, ev, ctx):
        if not calls:
            tmp = path.with_suffix(".json.tmp")
            _events_record(tmp, "omega")
            os.replace(tmp, path)
        calls.append(i)
        return real(i, ev, ctx)

    monkeypatch.setattr(documents, "render_event", renaming)
    assert render_uri(ws, uri, small) == at_rest
