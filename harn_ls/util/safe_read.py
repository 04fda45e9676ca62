"""Confined, bounded reads of files that project data names.

A cloned repository decides which files harn-ls reads: a fact's `file_range`
names a source file, a run record names transcripts, a checkpoint directory
lists checkpoint files. Every such read goes through `read_confined`, which
keeps these rules:

* the real path (symlinks resolved) lies inside the project root; a symlink
  that leaves is refused with a reason naming the link and its target, never
  followed;
* the final component is opened with `O_NOFOLLOW` (a symlink swapped in after
  the check is not followed) and `O_NONBLOCK` (opening a FIFO never waits for
  a writer);
* `fstat` must say "regular file": `/dev/zero`, a FIFO, a socket or a
  directory is refused before a single byte is read;
* at most `cap` bytes are read; a larger file is refused with
  "too large: N MB, cap M MB; not loaded" (a file that grows while being read
  is caught too).

Size caps for each kind of file live here, in one place.

This module is the one way harn-ls opens a file of the project: `read_confined` (whole,
capped), `open_project_file` (a stream, for logs read from an offset) and `open_confined`
(an fd). `tests/security/test_every_reader.py` walks the package and fails on any
other `open()`, `os.open`, `read_bytes`/`read_text` or `sqlite3.connect` that is not on its
allowlist (the cache folder harn-ls owns, `/proc`, and the writes of `actions/`).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import BinaryIO

MB = 1024 * 1024

# -- caps (bytes) -------------------------------------------------------------------
# Chosen well above what Harn writes for real projects, and low enough that a hostile
# file cannot exhaust memory: parsed JSON costs up to ~20x its size.
CHECKPOINT_CAP = 16 * MB        # one `.harn/checkpoints/<pipeline>.json`
RUN_RECORD_CAP = 32 * MB        # one `.harn-runs/*.json` run record / worker snapshot
MEMORY_LINE_CAP = 16 * MB       # one line of a memory `events.jsonl` (longer lines are skipped unread)
MAX_MEMORY_FACTOR = 20          # peak memory for parsing one file / line <= 20x its size
_DICT_COST = 200                # bytes a parsed small dict costs in CPython (object + slot in its parent)
_LIST_COST = 72                 # ... an empty list
SMALL_CONTAINERS = 256         # below this many containers the density rule does not apply
SOURCE_FILE_CAP = 8 * MB        # a source file a fact's `file_range` points at
VECTOR_FILE_CAP = 4 * MB        # one cached embedding `vectors/<hint>/<hash>.json`
SMALL_STATE_CAP = 1 * MB        # a git pointer (`.git`, `HEAD`, `gitdir`), a consumer cursor
UNCAPPED = sys.maxsize          # a log read as a stream from an offset (bounded per line by its reader)


class ReadRefused(OSError):
    """The file was not read; `reason` is a user-facing sentence."""

    def __init__(self, path: str, reason: str, kind: str = "refused") -> None:
        super().__init__(errno.EPERM, reason, path)
        self.path = path
        self.reason = reason
        self.kind = kind  # refused | outside | not-regular | too-large

    def __str__(self) -> str:
        return self.reason


def mb(n: int) -> str:
    value = n / MB
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def too_large_message(size: int, cap: int) -> str:
    return f"too large: {mb(size)} MB, cap {mb(cap)} MB; not loaded"


def is_under(path: str, root: str) -> bool:
    """`path` is `root` or inside it, by name: both absolute and normalised (no `..`), no link resolved."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _inside(real: str, root: str) -> bool:
    return is_under(real, os.path.realpath(root))


def resolves_inside(path: str, root: str) -> bool:
    """`path`, every link on it resolved, is `root` (resolved too) or inside it."""
    return _inside(os.path.realpath(path), root)


def first_link(path: str, root: str) -> str | None:
    """The first symlink component of `path` (at or below `root`), for naming it in a problem."""
    root = os.path.abspath(root)
    path = os.path.abspath(path)
    if not is_under(path, root):
        return None
    current = root
    for part in path[len(root):].split(os.sep):
        if not part:
            continue
        current = os.path.join(current, part)
        if os.path.islink(current):
            return current
    return None


CODE_LINK_OUT = "HL-LINK-001"  # a symlink whose target is outside the project: reported, never followed
CODE_LINK_LOOP = "HL-LINK-002"  # a symlink that loops (ELOOP, or onto a folder that holds it): reported, never followed


def link_problem(path: str, root: str) -> tuple[str, str] | None:
    """(code, message) when `path` is a symlink harn-ls will not follow: it loops, or its target is
    outside `root`. None for anything else (not a link, a link that stays inside, a dangling link)."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
        target = os.readlink(path)
    except OSError:
        return None
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return CODE_LINK_LOOP, f"symlink {path} -> {target} loops; not followed"
        return None  # dangling: nothing there to read
    real = os.path.realpath(path)
    holder = os.path.realpath(os.path.dirname(path))
    if is_under(holder, real):
        return CODE_LINK_LOOP, f"symlink {path} -> {target} points back to a folder that holds it (a loop); not followed"
    if not _inside(real, root):
        return CODE_LINK_OUT, f"symlink {path} -> {target} leaves the project; not followed"
    return None


def confinement_problem(path: str, root: str) -> str | None:
    """None when `path` (symlinks resolved) stays inside `root`, else the reason."""
    real = os.path.realpath(path)
    if _inside(real, root):
        return None
    link = first_link(path, root)
    if link is not None:
        try:
            target = os.readlink(link)
        except OSError:
            target = "?"
        return f"symlink {link} -> {target} leaves the project; not followed"
    return f"{path} resolves outside the project ({real}); not read"


def read_confined(path: str, root: str | None, cap: int) -> bytes:
    """The bytes of a regular file inside `root`, at most `cap` of them.

    `root=None` skips the confinement check (a root the user's environment put elsewhere).
    Raises FileNotFoundError when absent, ReadRefused when refused, OSError otherwise."""
    fd, st = open_confined(path, root, cap)
    try:
        return read_opened(fd, st, path, cap)
    finally:
        os.close(fd)


def open_confined(path: str, root: str | None, cap: int) -> tuple[int, os.stat_result]:
    """An fd and its fstat for a regular file inside `root` of at most `cap` bytes, with every check
    of `read_confined` but the read itself (the caller closes the fd).
    Raises FileNotFoundError when absent, ReadRefused when refused, OSError otherwise."""
    if root is not None:
        why = confinement_problem(path, root)
        if why is not None:
            if not os.path.lexists(path):
                raise FileNotFoundError(errno.ENOENT, "no such file", path)
            raise ReadRefused(path, why, "outside")
    real = os.path.realpath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # swapped for a symlink after the check
            raise ReadRefused(path, "became a symlink while being opened; not followed", "outside") from None
        if exc.errno == errno.ENXIO:  # a socket
            raise ReadRefused(path, "not a regular file; not read", "not-regular") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadRefused(path, "not a regular file (a device, FIFO, socket or directory); not read", "not-regular")
        if st.st_size > cap:
            raise ReadRefused(path, too_large_message(st.st_size, cap), "too-large")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_opened(fd: int, st: os.stat_result, path: str, cap: int) -> bytes:
    """The bytes of an fd from `open_confined`, at most `cap` of them (a file that grew past the
    cap since its fstat is refused)."""
    chunks = []
    left = cap + 1
    # The first read asks for the whole file (and a byte more, to see it grew): one chunk, which
    # the join returns as it is. Reading 1 MB at a time held every chunk and their joined copy
    # at once (twice the file: 28 MB for the bench's 14 MB run record).
    want = max(st.st_size + 1, 1 * MB)
    while left > 0:
        chunk = os.read(fd, min(left, want))
        want = 1 * MB
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > cap:
        raise ReadRefused(path, too_large_message(max(len(data), os.fstat(fd).st_size), cap), "too-large")
    return data


def few_containers(data: bytes) -> bool:
    """True when `data` holds at most SMALL_CONTAINERS `{`/`[` bytes: the density rule always
    passes it, so a hot path may parse such a line without calling `json_density_problem`."""
    return len(data) <= SMALL_CONTAINERS or data.count(b"{") + data.count(b"[") <= SMALL_CONTAINERS


def json_density_problem(data: bytes) -> str | None:
    """None when parsing `data` as JSON stays within MAX_MEMORY_FACTOR x its size, else the reason.

    A line made of millions of `{}` costs ~72 bytes per 3 input bytes once parsed (~36x with the
    rest). Every container needs a `{` or `[` byte, so counting them (inside strings too, which
    only over-counts) bounds the cost before anything is parsed."""
    dicts, lists, size = data.count(b"{"), data.count(b"["), len(data)
    if dicts + lists <= SMALL_CONTAINERS:
        return None
    cost = dicts * _DICT_COST + lists * _LIST_COST
    budget = (MAX_MEMORY_FACTOR - 4) * size  # leave room for the bytes, the decoded text, the strings
    if cost <= budget:
        return None
    return (f"{dicts + lists} JSON objects/arrays in {mb(size)} MB would take about "
            f"{cost // size}x its size in memory (cap {MAX_MEMORY_FACTOR}x); not loaded")


def open_project_file(path: str, root: str | None) -> BinaryIO:
    """A binary file object for a regular file inside `root` (every check of `open_confined` but the
    size cap: a log, streamed or read from an offset, is bounded per line by its reader).
    Raises FileNotFoundError, ReadRefused, OSError."""
    fd, _st = open_confined(path, root, UNCAPPED)
    return os.fdopen(fd, "rb")


def source_text(path: str, root: str) -> str:
    """A project source file's text (a regular file inside the project, capped at SOURCE_FILE_CAP; a
    FIFO refused, never waited on), "" when it cannot be read: what a lens or a hover of a file the
    client has not opened reads."""
    try:
        return read_confined(path, root, SOURCE_FILE_CAP).decode("utf-8", errors="replace")
    except (ReadRefused, OSError):
        return ""


def reader_root(directory: str, project_root: str) -> str:
    """The root a reader of `directory` confines its reads to: the project, when the directory is in
    it by name (a symlink inside that leads out is refused); the directory itself, when the user's
    environment put it elsewhere (`HARN_STATE_DIR=/var/harn`: honoured, but nothing leaves it)."""
    d, r = os.path.abspath(directory), os.path.abspath(project_root)
    return project_root if is_under(d, r) else directory


def refusal_text(exc: OSError) -> str:
    """A user-facing sentence for a failed open (ReadRefused carries its own)."""
    if isinstance(exc, ReadRefused):
        return exc.reason
    return f"cannot read ({exc.strerror or type(exc).__name__})"


def regular_file_size(path: str) -> int | None:
    """Size of a regular file (following links), None for anything else; never blocks."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def stat_stamp(st: os.stat_result) -> list:
    """[device, inode, size, mtime_ns, ctime_ns]: what tells, without reading it, that a file may
    have changed since (the state cache's validators; a kept document's key)."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def file_stamp(path: str) -> list | None:
    """`stat_stamp` of the file `path` leads to; None when it cannot be stat'ed."""
    try:
        return stat_stamp(os.stat(path))
    except (OSError, ValueError):
        return None
