"""Is a Harn process holding one of its lock files right now? (harn-formats §O.6, §O.7)

Pure and read-only: nothing here creates, truncates, writes or deletes a file.

* Checkpoint lock `<state_root>/checkpoints/<pipeline>.lock` (later Harn):
  `flock(2)` `LOCK_EX`, taken by the VM for the length of one checkpoint
  mutation (lock, re-read, mutate, atomic write, unlock).
* Session writer leases `<store dir>/agent-run-writers/<blake3(session id)>.lock`:
  `flock` `LOCK_EX`, held by the one process writing that session for its
  whole lifetime; `project.lock` is held shared by every live writer.

"Held" means some process has an flock on the file; the file existing means
nothing (Harn never deletes it). Two ways to find out, neither writes:

* `/proc/locks` (Linux): the `FLOCK` entries name `major:minor:inode`; matching
  them against `lstat()` of the lock file disturbs nobody. Used for every lock.
* a probe: open the existing file read-only (never `O_CREAT`), try
  `LOCK_SH|LOCK_NB`, release at once. Only for checkpoint locks and only when
  `/proc/locks` cannot be read (macOS, a container without procfs, or
  `HARN_LS_PORTABLE=1`, see harn_ls/util/portable.py): a Harn checkpoint writer that tries its lock
  during that instant retries after 1 ms (it waits up to 5 s), whereas a
  session writer makes a single zero-timeout attempt and would fail, so
  session leases are never probed.

Results: True (held), False (not held, or no lock file), None (cannot tell).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import BinaryIO

from harn_ls.util.portable import linux_facility

PROC_LOCKS = "/proc/locks"
SESSION_LOCK_DIR = "agent-run-writers"
PROJECT_LOCK = "project.lock"
MAX_PROC_LOCKS_BYTES = 8 * 1024 * 1024


def checkpoint_lock_path(checkpoint_json: str) -> str:
    """`Path::with_extension("lock")`: `a.b.json` -> `a.b.lock` (the last extension is replaced)."""
    directory, name = os.path.split(checkpoint_json)
    stem, dot, _ext = name.rpartition(".")
    base = stem if dot and stem else name
    return os.path.join(directory, base + ".lock")


def session_lock_dir(session_store_path: str) -> str:
    """`agent-run-writers/` beside `session-store.sqlite`."""
    return os.path.join(os.path.dirname(session_store_path), SESSION_LOCK_DIR)


def session_lock_path(session_store_path: str, session_id: str) -> str | None:
    digest = blake3_hex(session_id.encode("utf-8"))
    if digest is None:
        return None
    return os.path.join(session_lock_dir(session_store_path), digest + ".lock")


# ------------------------------------------------------------------ /proc/locks

class FlockTable:
    """The flocks the kernel reports: (major, minor, inode) -> 'WRITE' | 'READ'.

    From `open_flock_table`, `/proc/locks` is opened at once but read only when a lock file asked about
    exists: the kernel makes the first read of it in a process wait for an RCU grace period (3-15 ms of
    wall time here), and most projects have no lock file at all. A read that fails once the file is open
    counts as no flock held."""

    __slots__ = ("_fh", "_held")

    def __init__(self, held: dict[tuple[int, int, int], str] | None = None, fh: BinaryIO | None = None) -> None:
        self._held = held
        self._fh = fh

    @property
    def held(self) -> dict[tuple[int, int, int], str]:
        if self._held is None:
            self._held = {}
            try:
                if self._fh is not None:
                    with self._fh as fh:
                        self._held = _parse_flock_table(fh.read(MAX_PROC_LOCKS_BYTES))
            except (OSError, ValueError):
                pass
        return self._held

    def state(self, path: str) -> bool:
        try:
            st = os.lstat(path)
        except OSError:
            return False  # no lock file: nobody holds it (the table is not read)
        if not stat.S_ISREG(st.st_mode):
            return False
        return (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in self.held


def read_flock_table(path: str = PROC_LOCKS) -> FlockTable | None:
    """Parse `/proc/locks`; None when it cannot be read (not Linux, no procfs, HARN_LS_PORTABLE)."""
    if not linux_facility("proc_locks"):
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_PROC_LOCKS_BYTES)
    except OSError:
        return None
    return FlockTable(_parse_flock_table(data))


def _parse_flock_table(data: bytes) -> dict[tuple[int, int, int], str]:
    held: dict[tuple[int, int, int], str] = {}
    for raw in data.decode("ascii", "replace").splitlines():
        # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; blocked waiters carry "->"
        parts = raw.split()
        if len(parts) < 6 or "->" in parts or parts[1] != "FLOCK":
            continue
        dev = parts[5].split(":")
        if len(dev) != 3:
            continue
        try:
            key = (int(dev[0], 16), int(dev[1], 16), int(dev[2]))
        except ValueError:
            continue
        held[key] = "WRITE" if parts[3] == "WRITE" or held.get(key) == "WRITE" else parts[3]
    return held


def open_flock_table(path: str = PROC_LOCKS) -> FlockTable | None:
    """`read_flock_table`, read when first needed (see FlockTable); None when it cannot be opened."""
    if not linux_facility("proc_locks"):
        return None
    try:
        return FlockTable(fh=open(path, "rb"))
    except OSError:
        return None


# ------------------------------------------------------------------ probe

def probe_flock(path: str) -> bool | None:
    """Try a shared non-blocking flock on an existing lock file and release it at once.

    Never creates the file (no O_CREAT), never follows a symlink. True when
    another holder has it exclusively, False when free or absent, None when
    the file cannot be opened.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return True
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)  # closing drops our lock in any case


# ------------------------------------------------------------------ what callers use

def checkpoint_running(checkpoint_json: str, table: FlockTable | None = None) -> bool | None:
    """True while a Harn process holds this checkpoint's `<pipeline>.lock` (a save in progress), from the
    kernel's lock table (or, without /proc, a non-blocking probe of an existing lock file); never creates
    the lock file. None = cannot tell. This replaces any guess from the file's modification time."""
    lock = checkpoint_lock_path(checkpoint_json)
    if table is None:
        table = read_flock_table()
    if table is not None:
        return table.state(lock)
    return probe_flock(lock)


def session_running(session_store_path: str, session_id: str, table: FlockTable | None = None) -> bool | None:
    """True while a Harn process holds the writer lease of this session (never probed: see module doc)."""
    lock = session_lock_path(session_store_path, session_id)
    if lock is None:
        return None
    if table is None:
        table = read_flock_table()
    return None if table is None else table.state(lock)


def running_session_writers(session_store_path: str, table: FlockTable | None = None) -> int | None:
    """How many `<hash>.lock` session leases in `agent-run-writers/` are held right now."""
    directory = session_lock_dir(session_store_path)
    if table is None:
        table = read_flock_table()
    if table is None:
        return None
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    count = 0
    for name in names[:10_000]:
        if name.endswith(".lock") and name != PROJECT_LOCK and table.state(os.path.join(directory, name)):
            count += 1
    return count


# ------------------------------------------------------------------ BLAKE3 (one chunk)

_IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
_PERM = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)
_CHUNK_START, _CHUNK_END, _ROOT = 1, 2, 8
_M32 = 0xFFFFFFFF
_CHUNK_LEN = 1024
# the state words each G mixes in a round: four columns, then four diagonals
_ROUND = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
          (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & _M32


def _g(s: list[int], a: int, b: int, c: int, d: int, mx: int, my: int) -> None:
    s[a] = (s[a] + s[b] + mx) & _M32
    s[d] = _rotr(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotr(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b] + my) & _M32
    s[d] = _rotr(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotr(s[b] ^ s[c], 7)


def _compress(cv: tuple[int, ...], block: bytes, block_len: int, flags: int) -> tuple[int, ...]:
    m = [int.from_bytes(block[i:i + 4], "little") for i in range(0, 64, 4)]
    s = list(cv) + list(_IV[:4]) + [0, 0, block_len, flags]  # chunk counter 0
    for rnd in range(7):
        for i, (a, b, c, d) in enumerate(_ROUND):
            _g(s, a, b, c, d, m[2 * i], m[2 * i + 1])
        if rnd < 6:
            m = [m[i] for i in _PERM]
    return tuple(s[i] ^ s[i + 8] for i in range(8))


def blake3_hex(data: bytes) -> str | None:
    """BLAKE3-256 hex of an input of at most one chunk (1024 bytes); None for longer input."""
    if len(data) > _CHUNK_LEN:
        return None
    blocks = [data[i:i + 64] for i in range(0, len(data), 64)] or [b""]
    cv: tuple[int, ...] = _IV
    for index, block in enumerate(blocks):
        flags = (_CHUNK_START if index == 0 else 0)
        if index == len(blocks) - 1:
            flags |= _CHUNK_END | _ROOT
        cv = _compress(cv, block.ljust(64, b"\0"), len(block), flags)
    return b"".join(w.to_bytes(4, "little") for w in cv).hex()
