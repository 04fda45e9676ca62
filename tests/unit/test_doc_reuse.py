"""Run and transcript pages made from big files are given again while nothing they were made from
changed (render/doc_reuse.py), and made again as soon as anything did: the record's bytes (in place,
same size), the run's turn log, the model object the workspace holds for it, the page or the
settings. Bounded, and never for small files."""

from __future__ import annotations

import dataclasses
import os

import orjson
import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, doc_reuse, render_uri
from tests.unit.test_cache import project  # noqa: F401  (fixture)

RUN = "run-big"
TRANSCRIPT = "tr-big"
SMALL_WINDOW = dataclasses.replace(RenderSettings(), transcript_window_bytes=2000)


def _record(path, word: str, n: int = 60, assets: list | None = None) -> None:
    events = [{"kind": "message", "role": "user" if i % 2 else "assistant", "text": f"{word} {i} " + "w" * 80}
              for i in range(n)]
    doc = {"_type": "run_record", "id": RUN, "status": "done", "stages": [{"id": "s1", "status": "done"}],
           "transcript": {"_type": "transcript", "id": TRANSCRIPT, "events": events, "messages": [],
                          **({"assets": assets} if assets else {})}}
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def _rewrite_same_size(path, old: bytes, new: bytes) -> None:
    data = path.read_bytes().replace(old, new)
    with open(path, "r+b") as fh:
        fh.write(data)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # (a coarse clock may not have moved)


@pytest.fixture
def big(project, monkeypatch):
    monkeypatch.setattr(doc_reuse, "REUSE_MIN_BYTES", 1000)  # the test records count as big
    path = project / ".harn-runs" / f"{RUN}.json"
    _record(path, "alpha")
    ws = Workspace.load(str(project))
    return ws, path


def _page(ws, page: int = 0, settings: RenderSettings = SMALL_WINDOW) -> str:
    return render_uri(ws, f"harn-state:/transcripts/{TRANSCRIPT}.md?page={page}", settings)


def _made(ws) -> int:
    return ws.doc_reuse.made if getattr(ws, "doc_reuse", None) is not None else 0


def test_an_unchanged_page_is_given_again_without_reading_the_record(big):
    ws, _path = big
    first = _page(ws)
    made = _made(ws)
    assert "alpha" in first
    assert _page(ws) == first and _made(ws) == made
    run_doc = render_uri(ws, f"harn-state:/runs/{RUN}.md", RenderSettings())
    assert render_uri(ws, f"harn-state:/runs/{RUN}.md", RenderSettings()) == run_doc and _made(ws) == made + 1


def test_a_record_rewritten_in_place_is_read_again(big):
    ws, path = big
    before = _page(ws)
    _rewrite_same_size(path, b"alpha", b"omega")  # the same inode and size: only the times tell
    after = _page(ws)
    assert "omega" in after and "alpha" not in after and after != before


def test_a_new_model_object_means_a_new_page(big):
    ws, path = big
    _page(ws)
    made = _made(ws)
    ws.apply_changes([str(path)])  # the workspace reads the record again: new run and transcript objects
    _page(ws)
    assert _made(ws) == made + 1


def test_the_turn_log_is_part_of_what_a_page_is_made_of(big):
    ws, path = big
    sidecar = path.parent / f"{RUN}-llm" / "llm_transcript.jsonl"
    sidecar.parent.mkdir()
    sidecar.write_text('{"type":"message","role":"user","content":"hi"}\n')
    ws.apply_changes([str(path), str(sidecar)])
    run = ws.runs[RUN]
    assert run.llm_transcript_path == str(sidecar)
    uri = f"harn-state:/runs/{RUN}.md"
    first = render_uri(ws, uri, RenderSettings())
    made = _made(ws)
    with open(sidecar, "a") as fh:  # the turn log grows; the record and the model objects do not change
        fh.write('{"type":"message","role":"assistant","content":"there"}\n')
    assert ws.runs[RUN] is run
    again = render_uri(ws, uri, RenderSettings())
    assert _made(ws) == made + 1
    assert again == render_uri(Workspace.load(ws.root), uri, RenderSettings())  # what a fresh model shows
    assert first is not again


def test_pages_and_settings_are_kept_apart_and_bounded(big):
    ws, _path = big
    pages = [_page(ws, p) for p in range(3)]
    private = _page(ws, 0, dataclasses.replace(SMALL_WINDOW, show_private=True))
    assert len(set(pages)) == 3  # three different windows
    made = _made(ws)
    assert [_page(ws, p) for p in range(3)] == pages and _made(ws) == made
    assert _page(ws, 0, dataclasses.replace(SMALL_WINDOW, show_private=True)) == private
    for p in range(3, 3 + doc_reuse.MAX_DOCS):
        _page(ws, p)
    assert len(ws.doc_reuse._docs) == doc_reuse.MAX_DOCS
    made = _made(ws)
    _page(ws, 0)  # pushed out by the pages after it: made again
    assert _made(ws) == made + 1


def test_small_records_are_always_read_again(project):
    path = project / ".harn-runs" / f"{RUN}.json"
    _record(path, "alpha", n=3)
    assert os.path.getsize(path) < doc_reuse.REUSE_MIN_BYTES
    ws = Workspace.load(str(project))
    _page(ws)
    made = _made(ws)
    _page(ws)
    assert _made(ws) == made + 1
    assert ws.doc_reuse._docs == {}


def test_a_turn_log_that_appears_after_the_record_was_read_is_seen(big, monkeypatch):
    """The record was read before its `-llm/llm_transcript.jsonl` existed; then only the turn log is
    written (the run object stays): the pages are made again, as they would be with nothing kept."""
    from harn_ls.formats import runs as runs_fmt
    from harn_ls.render import documents, parse_uri
    from tests.unit.test_runs_transcripts import LLM_DIR

    ws, path = big
    monkeypatch.setattr(runs_fmt, "LAZY_RECORD_BYTES", 1)  # the record read again for each page, as a big one is
    run = ws.runs[RUN]
    assert run.llm_transcript_path is None
    uris = [f"harn-state:/runs/{RUN}.md", f"harn-state:/runs/{RUN}.md?normalized=1"]
    for u in uris:
        render_uri(ws, u, RenderSettings())
    made = _made(ws)
    sidecar = path.parent / f"{RUN}-llm" / "llm_transcript.jsonl"
    sidecar.parent.mkdir()
    sidecar.write_bytes((LLM_DIR / "llm_transcript.jsonl").read_bytes())
    ws.apply_changes([str(sidecar)])
    assert ws.runs[RUN] is run  # (only the turn log changed)
    again = [render_uri(ws, u, RenderSettings()) for u in uris]
    assert _made(ws) == made + len(uris)
    assert again == [documents._render(ws, parse_uri(u), RenderSettings()) for u in uris]  # nothing kept: the same


def test_a_transcript_with_assets_is_never_kept(project, monkeypatch):
    monkeypatch.setattr(doc_reuse, "REUSE_MIN_BYTES", 1000)
    path = project / ".harn-runs" / f"{RUN}.json"
    _record(path, "alpha", assets=[{"id": "img-1", "name": "shot.png", "kind": "image", "storage_path": "shot.png"}])
    ws = Workspace.load(str(project))
    assert ws.transcripts[TRANSCRIPT].asset_count == 1
    _page(ws)
    made = _made(ws)
    _page(ws)  # (its page shows image files, which are not stamped)
    assert _made(ws) == made + 1


def test_a_run_id_leading_into_a_sibling_folder_is_never_looked_at(project, monkeypatch):
    """A record whose id climbs into `proj-evil` next to the project: neither the reader nor the
    kept page's key touches the turn log planted there."""
    from harn_ls.formats.runs import llm_log_places

    monkeypatch.setattr(doc_reuse, "REUSE_MIN_BYTES", 1000)
    path = project / ".harn-runs" / f"{RUN}.json"
    _record(path, "alpha")
    rid = "../../proj-evil/stolen"
    doc = orjson.loads(path.read_bytes())
    doc["id"] = rid
    path.write_bytes(orjson.dumps(doc))
    planted = project.parent / "proj-evil" / "stolen-llm" / "llm_transcript.jsonl"
    planted.parent.mkdir(parents=True)
    planted.write_text('{"type":"message","role":"user","content":"planted"}\n')
    assert os.path.exists(os.path.join(path.parent, f"{rid}-llm", "llm_transcript.jsonl"))  # (the id does lead there)

    assert llm_log_places(str(path), rid) == [str(project / ".harn-runs" / f"{RUN}-llm" / "llm_transcript.jsonl")]
    ws = Workspace.load(str(project))
    run = ws.runs[rid]
    assert run.llm_transcript_path is None
    stamped = []
    real_stamp = doc_reuse.file_stamp
    monkeypatch.setattr(doc_reuse, "file_stamp", lambda p: stamped.append(p) or real_stamp(p))
    assert doc_reuse.sources(ws, "runs", rid) is not None  # (a big record: kept, under a key of in-project files)
    root = os.path.realpath(project)
    assert stamped and all(os.path.realpath(p).startswith(root + os.sep) for p in stamped)
