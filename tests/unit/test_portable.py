"""The portable paths (harn_ls/util/portable.py) that macOS takes, forced here with HARN_LS_PORTABLE=1:
lock state without /proc/locks, watching without inotify, where an fd points without /proc/self/fd,
the start trace without /proc/self/stat. Each against real processes, locks and files."""

from __future__ import annotations

import os
import sys

import pytest

from harn_ls.actions import _open_dir_inside
from harn_ls.formats import locks as L
from harn_ls.formats import state_files as sf
from harn_ls.lsp import start_trace
from harn_ls.util import portable
from harn_ls.util.refusal import ActionFailed
from harn_ls.watch.observer import StateWatcher
from tests.helpers.lock_holder import lock_holder  # noqa: F401  (fixture)
from tests.unit.test_watch import Recorder, append, project


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv(portable.PORTABLE_ENV, "1")


def test_the_switch_turns_every_linux_facility_off(monkeypatch):
    monkeypatch.delenv(portable.PORTABLE_ENV, raising=False)
    native = sys.platform.startswith("linux")
    assert all(portable.linux_facility(f) is native for f in portable.FACILITIES)
    for value in ("1", "true", "yes", "on"):
        monkeypatch.setenv(portable.PORTABLE_ENV, value)
        assert not any(portable.linux_facility(f) for f in portable.FACILITIES)
    monkeypatch.setenv(portable.PORTABLE_ENV, "0")
    assert all(portable.linux_facility(f) is native for f in portable.FACILITIES)
    with pytest.raises(ValueError):
        portable.linux_facility("procfs")  # a typo is an error, not a silent "no"


def test_no_lock_table_checkpoints_probed_sessions_unknown(tmp_path, forced, lock_holder):  # noqa: F811
    assert L.read_flock_table() is None and L.open_flock_table() is None
    (tmp_path / "checkpoints").mkdir()
    writers = tmp_path / "agent-run-writers"
    writers.mkdir()
    ck = tmp_path / "checkpoints" / "deploy.lock"
    session = writers / ("ab" * 32 + ".lock")
    for f in (ck, session):
        f.write_bytes(b"")
    assert {lk.name: lk.held for lk in sf.read_locks(str(tmp_path))} == {"deploy": False, "ab" * 32: None}
    holder = lock_holder(ck)
    lock_holder(session)
    assert {lk.name: lk.held for lk in sf.read_locks(str(tmp_path))} == {"deploy": True, "ab" * 32: None}
    assert L.checkpoint_running(str(tmp_path / "checkpoints" / "deploy.json")) is True
    holder.stdin.close()
    holder.wait(timeout=10)
    assert L.checkpoint_running(str(tmp_path / "checkpoints" / "deploy.json")) is False
    assert L.running_session_writers(str(tmp_path / "session-store.sqlite")) is None  # never probed: unknown


def test_the_probe_never_creates_a_lock_file(tmp_path, forced):
    (tmp_path / "checkpoints").mkdir()
    assert L.checkpoint_running(str(tmp_path / "checkpoints" / "a.json")) is False
    assert not (tmp_path / "checkpoints" / "a.lock").exists()


def test_watching_polls_and_still_reports_changes(tmp_path, forced):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = StateWatcher(paths, rec, poll_interval=0.2)
    w.start()
    try:
        assert w.polling  # no inotify on the portable path
        log = root / ".harn" / "memory" / "ns" / "events.jsonl"
        append(log)
        assert rec.wait_path(str(log))
    finally:
        w.stop()


def test_where_an_fd_points_falls_back_to_the_inode(tmp_path, forced):
    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    fd = os.open(proj / ".harn", os.O_RDONLY)
    try:
        assert portable.fd_path(fd) is None
    finally:
        os.close(fd)
    fd = _open_dir_inside(str(proj), str(proj / ".harn"))  # the (dev, inode) check passes for the real folder
    os.close(fd)
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    (proj / "link").symlink_to(evil)
    with pytest.raises(ActionFailed):
        _open_dir_inside(str(proj), str(proj / "link"))


def test_where_an_fd_points_from_the_kernel_when_not_forced(tmp_path, monkeypatch):
    monkeypatch.delenv(portable.PORTABLE_ENV, raising=False)
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc/self/fd is Linux's")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert portable.fd_path(fd) == str(tmp_path)
    finally:
        os.close(fd)


def test_start_trace_has_no_process_start_time(forced):
    assert start_trace._process_start_epoch() is None
