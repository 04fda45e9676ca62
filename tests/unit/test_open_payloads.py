"""A long-running server never gathers open files: the payload files a namespace restored from the
state cache holds open (cache/store.py) are closed when a rescan or a reset log drops it. The server
freezes the cyclic collector (lsp/project.py), so a namespace and its reader, which refer to each
other, are never freed by it: before, every rescan left ~3 files per restored namespace open."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import threading
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
    cache files its model held open are closed once the project thread is done — before, each dropped
    project kept them open for the server's life."""
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


def test_a_closed_project_frees_its_model(warm_project, frozen_collector, monkeypatch):
    """The model of a closed project is frozen out of the collector's view with everything else and
    holds reference cycles: nothing freed it, and each folder removed or re-read for new settings kept
    its whole model (+142 MB a time at 100k events). Once the server has let go of it, one full pass
    over what is frozen frees it."""
    import weakref

    from harn_ls.lsp import project as project_module
    from harn_ls.lsp.project import Project, keep_out_of_collector

    monkeypatch.setattr(project_module, "COLLECT_AFTER_CLOSE_S", 0.2)

    async def load() -> Project:
        proj = Project(str(warm_project), on_changes=lambda *_: None)
        await proj.load()
        return proj

    proj = asyncio.run(load())
    model = weakref.ref(proj.loaded)
    keep_out_of_collector()  # (as the server does after a load)
    proj.close()
    del proj
    for thread in threading.enumerate():
        if thread.name == "harn-ws-close":
            thread.join(60)
    assert model() is None
    assert gc.get_freeze_count() > 0  # (what is alive is frozen again)
