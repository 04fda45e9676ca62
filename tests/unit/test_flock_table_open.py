"""`open_flock_table`: the kernel's lock table opened at once and read only when a lock file asked
about exists (its first read in a process waits for the kernel); it answers as `read_flock_table`."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from harn_ls.formats import locks as L
from harn_ls.formats import state_files as sf

PROC_LOCKS = "1: FLOCK  ADVISORY  WRITE 12 fd:01:5678 0 EOF\n2: POSIX  ADVISORY  WRITE 13 fd:01:99 0 EOF\n" \
             "3: -> FLOCK  ADVISORY  WRITE 14 fd:01:77 0 EOF\n4: FLOCK  ADVISORY  READ 15 fd:01:42 0 EOF\n"


def test_same_table_as_read_flock_table(tmp_path):
    fake = tmp_path / "locks"
    fake.write_text(PROC_LOCKS)
    table = L.open_flock_table(str(fake))
    assert table is not None and table.held == L.read_flock_table(str(fake)).held
    assert table.held == {(0xFD, 0x01, 5678): "WRITE", (0xFD, 0x01, 42): "READ"}
    assert L.open_flock_table(str(tmp_path / "missing")) is None  # (as read_flock_table: cannot tell)
    assert L.read_flock_table(str(tmp_path / "missing")) is None


def test_not_read_without_a_lock_file(tmp_path):
    table = L.open_flock_table()
    assert table is not None
    assert table.state(str(tmp_path / "none.lock")) is False
    (tmp_path / "dir.lock").mkdir()
    assert table.state(str(tmp_path / "dir.lock")) is False
    assert table._held is None  # no lock file: the kernel's table was never read


def test_a_held_flock_is_seen_and_a_released_one_is_not(tmp_path):
    lock = tmp_path / "main.lock"
    lock.write_text("")
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held = L.open_flock_table()
        assert held.state(str(lock)) is True and L.read_flock_table().state(str(lock)) is True
        assert held._held is not None
        fcntl.flock(fd, fcntl.LOCK_UN)
        assert L.open_flock_table().state(str(lock)) is False
    finally:
        os.close(fd)


def test_read_locks_lists_lock_files_with_their_state(tmp_path):
    assert sf.read_locks(str(tmp_path)) == []
    ck = tmp_path / "checkpoints"
    ck.mkdir()
    lock = ck / "ingest.lock"
    lock.write_text("")
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert [(lk.kind, lk.name, lk.held) for lk in sf.read_locks(str(tmp_path))] == [("checkpoint", "ingest", True)]
    finally:
        os.close(fd)
    assert [lk.held for lk in sf.read_locks(str(Path(tmp_path)))] == [False]
