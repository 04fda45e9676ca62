"""Workspace.full_run_record keeps a few parsed run records (paging through a transcript re-reads
nothing), bounded by count and by their files' bytes: a parsed record is about twice its file."""

from __future__ import annotations

import os

from harn_ls.formats import runs as runs_fmt
from harn_ls.model import runs as workspace_runs
from harn_ls.model.workspace import Workspace
from tests.unit.test_cache import project  # noqa: F401  (fixture)


def _paths(ws) -> list[str]:
    return sorted(ws._run_paths)


def test_cached_record_is_reused_and_equals_a_fresh_read(project):
    ws = Workspace.load(str(project))
    paths = _paths(ws)
    assert paths, "the sample project has run records"
    first = ws.full_run_record(paths[0])
    assert ws.full_run_record(paths[0]) is first
    fresh = runs_fmt.read_run_record(paths[0])
    assert (first.id, first.stages, first.transcripts and [t.id for t in first.transcripts]) == \
        (fresh.id, fresh.stages, fresh.transcripts and [t.id for t in fresh.transcripts])
    # the file changed: read again
    st = os.stat(paths[0])
    os.utime(paths[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert ws.full_run_record(paths[0]) is not first


def test_byte_budget_keeps_only_the_last_record(project, monkeypatch):
    ws = Workspace.load(str(project))
    paths = _paths(ws)
    budget = os.path.getsize(paths[0])  # one record fits, not two
    monkeypatch.setattr(workspace_runs, "FULL_RUNS_CACHE_BYTES", budget)
    for p in paths:
        ws.full_run_record(p)
    assert len(ws._transcript_cache) == 1 and next(iter(ws._transcript_cache))[0] == paths[-1]
    monkeypatch.setattr(workspace_runs, "FULL_RUNS_CACHE_BYTES", 1 << 40)
    ws._transcript_cache.clear()
    for p in paths * 2:
        ws.full_run_record(p)
    assert len(ws._transcript_cache) == min(4, len(paths))
