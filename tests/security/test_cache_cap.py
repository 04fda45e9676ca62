"""Issue 27 item 9: one cap for everything in the cache folder; `cache clear` removes all of a project's files.

Before: 30 rewritten 8 MB checkpoints left 476 MB in the cache after the project was deleted: the
checkpoint history (and the other per-project files) were outside `HARN_LS_CACHE_MAX_MB`, which
counted only the state folders, and eviction dropped only those. Now the cap counts every file under
the cache root, the history holds at most a quarter of it, eviction drops whole project folders
(those of deleted projects first), and `cache clear` removes the project's whole folder. Scaled
down here: a 4 MB cap and 400 KB checkpoints.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from harn_ls.cache.checkpoint_history import CheckpointHistory
from harn_ls.cache.dirs import _tree_bytes, cache_root, project_cache_dir
from harn_ls.model.workspace import Workspace
from tests.lsp.conftest import REPO, SAMPLE

CAP_MB = 4


def _env(monkeypatch, tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(cache))
    monkeypatch.setenv("HARN_LS_CACHE_MAX_MB", str(CAP_MB))
    monkeypatch.delenv("HARN_LS_CACHE", raising=False)
    return cache


def _rewrite_checkpoints(proj: Path, rounds: int, size: int) -> None:
    hist = CheckpointHistory.for_project(str(proj))
    assert hist is not None
    for i in range(rounds):
        for pipeline in ("ingest", "review", "report"):
            hist.record(pipeline, (b'{"stage": "%d", "blob": "' % i) + os.urandom(size // 2).hex().encode()[:size] + b'"}')


def test_history_and_state_stay_under_one_cap(tmp_path, monkeypatch):
    _env(monkeypatch, tmp_path)
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    assert Workspace.load(str(proj), cache=True).save_cache()  # the state cache
    _rewrite_checkpoints(proj, 30, 400 * 1024)  # 90 versions of 400 KB: 36 MB written
    total = _tree_bytes(cache_root())
    assert total <= CAP_MB * 1024 * 1024, f"{total} bytes in the cache, cap {CAP_MB} MB"
    hist = CheckpointHistory.for_project(str(proj))
    assert all(hist.versions(p) for p in ("ingest", "review", "report"))  # the newest of each is kept


def test_a_deleted_projects_folder_is_evicted_within_the_cap(tmp_path, monkeypatch):
    _env(monkeypatch, tmp_path)
    gone = tmp_path / "proj-old"
    shutil.copytree(SAMPLE, gone, symlinks=True)
    assert Workspace.load(str(gone), cache=True).save_cache()
    _rewrite_checkpoints(gone, 6, 400 * 1024)
    old_folder = project_cache_dir(str(gone))
    assert os.path.isdir(old_folder) and _tree_bytes(old_folder) > 512 * 1024
    shutil.rmtree(gone)  # the project is deleted
    # another project fills the cache past the cap: the deleted project's whole folder goes first
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    assert Workspace.load(str(proj), cache=True).save_cache()
    _rewrite_checkpoints(proj, 10, 400 * 1024)
    assert not os.path.exists(old_folder)
    assert _tree_bytes(cache_root()) <= CAP_MB * 1024 * 1024


def test_cache_clear_removes_every_file_of_the_project(tmp_path, monkeypatch):
    cache = _env(monkeypatch, tmp_path)
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    assert Workspace.load(str(proj), cache=True).save_cache()
    _rewrite_checkpoints(proj, 2, 10 * 1024)
    folder = Path(project_cache_dir(str(proj)))
    assert (folder / "state").is_dir() and (folder / "checkpoint-history").is_dir()
    done = subprocess.run([sys.executable, "-m", "harn_ls", "cache", "clear", str(proj)], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO), HARN_LS_CACHE_DIR=str(cache)))
    assert done.returncode == 0 and done.stdout.strip() == f"removed {folder}"
    assert not folder.exists()
