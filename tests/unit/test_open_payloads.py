"""A long-running server never gathers open files: the payload files a namespace restored from the
state cache holds open (cache/store.py) are closed when a rescan or a reset log drops it. The server
freezes the cyclic collector (lsp/project.py), so a namespace and its reader, which refer to each
other, are never freed by it: before, every rescan left ~3 files per restored namespace open."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import time
from pathlib import Path

import pytest

from harn_ls.model.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")


def open_files(under: Path) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(under)):
            out.append(target)
    return sorted(out)


@pytest.fixture
def warm_project(tmp_path, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARN_LS_CACHE", raising=False)
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    assert Workspace.load(str(proj), cache=True).save_cache()
    gc.collect()
    return proj


@pytest.fixture
def frozen_collector():
    """The server's way: everything alive moved out of the cyclic collector's view."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.collect()


def server_load(proj: Path) -> Workspace:
    return Workspace.load(str(proj), cache=True, defer_facts=True, keep_rows=False, fold_values=True)


def test_rescans_leave_no_payload_file_open(warm_project, tmp_path, frozen_collector):
    ws = server_load(warm_project)
    held = open_files(tmp_path / "cache")
    assert held, "a restored namespace holds its payloads open (else this test shows nothing)"
    for _ in range(5):
        ws.rescan()
        gc.collect()
        gc.freeze()
        assert len(open_files(tmp_path / "cache")) == len(held)
    assert sorted(ws.memory) and all(s.records() is not None for s in ws.memory.values())



def test_a_closed_project_closes_its_cache_files(warm_project, tmp_path, frozen_collector):
    """A workspace folder removed (or its project loaded again for new settings) closes its project: the
    model stays referenced from what the server froze, but the cache files it held open are closed once
    the project thread is done — before, each dropped project kept them open for the server's life."""
    from harn_ls.lsp.project import Project

    async def load() -> Project:
        proj = Project(str(warm_project), on_changes=lambda *_: None)
        await proj.load()
        return proj

    proj = asyncio.run(load())
    assert open_files(tmp_path / "cache"), "the restored namespaces hold their payloads open"
    proj.close()
    deadline = time.monotonic() + 60
    while open_files(tmp_path / "cache") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert open_files(tmp_path / "cache") == []
