"""The only code in harn-ls that writes to disk.

Every write is atomic (temp file in the same directory, fsync, `os.replace`,
fsync of the directory) or an append of whole lines (one `write` of all the
lines with O_APPEND, then fsync). Paths are checked to stay inside the project
with symlinks resolved before anything is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets as _secrets
import shutil
import stat
import threading as _threading
import time as _time
import uuid
from collections.abc import Mapping

from harn_ls.actions import append_journal
from harn_ls.util.message_text import quote
from harn_ls.util.portable import fd_path
from harn_ls.util.refusal import ActionFailed, ensure_inside  # noqa: F401 (re-exported)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(project_root: str, directory: str) -> None:
    ensure_inside(project_root, directory)
    os.makedirs(directory, exist_ok=True)
    ensure_inside(project_root, directory)  # re-check: a racing symlink swap is refused too


# New files get what Rust's `std::fs::write` / `OpenOptions::create` give them (0o666, 0o777 for
# folders, both less the umask), so a file harn-ls creates has the mode Harn's would have.
NEW_FILE_MODE = 0o666
NEW_DIR_MODE = 0o777
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _open_dir_inside(project_root: str, directory: str) -> int:
    """An fd of `directory`, checked (through the fd itself) to be inside the project.

    Every later step works relative to this fd, so a folder swapped for a
    symlink after the check cannot redirect the write.
    """
    real = ensure_inside(project_root, directory)
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    try:
        st = os.fstat(fd)
        where = fd_path(fd)
        if where is None:  # the kernel cannot say (portable path): the folder at the checked path must be this very inode
            cur = os.stat(real)
            where = real if (cur.st_dev, cur.st_ino) == (st.st_dev, st.st_ino) else ""
        real_root = os.path.realpath(project_root)
        if where != real_root and not where.startswith(real_root + os.sep):
            raise ActionFailed(f"refused: {quote(directory)} moved outside the project while writing")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _target_stat(dir_fd: int, base: str, path: str) -> os.stat_result | None:
    """lstat of the target at write time: a symlink or a non-file there is refused."""
    try:
        st = os.stat(base, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise ActionFailed(f"refused: {quote(path)} is a symlink; harn-ls does not write through links")
    if not stat.S_ISREG(st.st_mode):
        raise ActionFailed(f"refused: {quote(path)} is not a regular file")
    return st


def atomic_write(project_root: str, path: str, data: bytes | str, *, exclusive: bool = False) -> None:
    """Write `path` so a reader sees the old file or the whole new one, never a part.

    A replaced file keeps its permission bits and, where allowed, its owner
    and group (a 0600 checkpoint stays 0600); a new file gets 0o666 less the
    umask, as Harn's writes do. The folder is pinned by an fd checked to be
    inside the project, and the target is lstat-ed again right before the
    rename: a symlink swapped in after the first check is refused, never
    followed. exclusive=True refuses to replace an existing file (link(2) is atomic).
    """
    ensure_inside(project_root, path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(path) or "."
    base = os.path.basename(path)
    make_dirs(project_root, directory)
    _sweep_stale(directory, f".{base}.harn-ls-", ".tmp", folders=False)
    dir_fd = _open_dir_inside(project_root, directory)
    try:
        before = _target_stat(dir_fd, base, path)
        mode = stat.S_IMODE(before.st_mode) if before is not None else None
        tmp = f".{base}.harn-ls-{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                     mode if mode is not None else NEW_FILE_MODE, dir_fd=dir_fd)
        try:
            try:
                if before is not None:
                    _keep_owner_and_mode(fd, before)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
                if exclusive:
                    try:
                        os.link(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                    except FileExistsError:
                        raise ActionFailed(f"refused: {quote(path)} already exists") from None
                    os.unlink(tmp, dir_fd=dir_fd)
                else:
                    now = _target_stat(dir_fd, base, path)  # re-check right before the rename
                    if now is not None and (before is None or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino)):
                        _keep_owner_and_mode(fd, now)  # replaced meanwhile: keep the newer file's mode
                    os.replace(tmp, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _keep_owner_and_mode(fd: int, st: os.stat_result) -> None:
    """Give the (open) temp file the replaced file's owner/group where permitted, and its mode.

    chown first: it may clear set-id bits, which the chmod afterwards restores.
    """
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except OSError:
        with contextlib.suppress(OSError):  # not root: at least keep the group when we are a member of it
            os.fchown(fd, -1, st.st_gid)
    os.fchmod(fd, stat.S_IMODE(st.st_mode))


def _sweep_stale(directory: str, prefix: str, suffix: str, folders: bool, older_than: float = 600.0) -> None:
    """Remove our own leftovers of a killed writer: temp files, or (`folders`) staging directories,
    never symlinks then; never anyone else's (`<prefix>...<suffix>`), and only once their mtime is
    older than `older_than` seconds."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    cutoff = _time.time() - older_than
    for name in names:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        p = os.path.join(directory, name)
        try:
            st = os.lstat(p)
            if st.st_mtime >= cutoff:
                continue
            if not folders:
                os.unlink(p)
            elif stat.S_ISDIR(st.st_mode):
                shutil.rmtree(p, ignore_errors=True)  # fd-based on Linux: does not follow links inside
        except OSError:
            pass


STAGING_SUFFIX = ".staging"
_STAGING_MARK = ".harn-ls-"


def staging_name(target_base: str) -> str:
    """The hidden sibling a directory is built in before it is renamed into place."""
    return f".{target_base}{_STAGING_MARK}{uuid.uuid4().hex}{STAGING_SUFFIX}"


def _check_rel(rel: str) -> list[str]:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) \
            or any(ord(ch) < 0x20 or ord(ch) == 0x7F or ch == "\\" for ch in rel):
        raise ActionFailed(f"refused: {quote(rel)} is not a plain relative path inside the folder")
    return parts


def atomic_write_dir(project_root: str, target_dir: str, files: Mapping[str, bytes | str]) -> None:
    """Create `target_dir` holding exactly `files` ('/'-separated relative paths), all or nothing.

    Everything is written (and fsynced) into a fresh hidden sibling
    `.<name>.harn-ls-<uuid>.staging`, which is then renamed onto `target_dir`
    with one rename(2): a reader -- or a crash -- sees no folder or the
    complete one. The target must not exist (an empty directory is replaced,
    as rename(2) does); a non-empty one is refused and nothing is written.
    A staging folder left by a killed writer is swept once it is 10 minutes old.
    """
    ensure_inside(project_root, target_dir)
    target_dir = os.path.abspath(target_dir)
    parent, base = os.path.split(target_dir)
    if not base:
        raise ActionFailed(f"refused: {quote(target_dir)} has no folder name")
    rels = [(_check_rel(rel), data) for rel, data in files.items()]
    make_dirs(project_root, parent)
    _sweep_stale(parent, f".{base}{_STAGING_MARK}", STAGING_SUFFIX, folders=True)
    staging_base = staging_name(base)
    staging = os.path.join(parent, staging_base)
    ensure_inside(project_root, staging)
    parent_fd = _open_dir_inside(project_root, parent)  # mkdir and the final rename go through this fd
    try:
        os.mkdir(staging_base, NEW_DIR_MODE, dir_fd=parent_fd)
    except BaseException:
        os.close(parent_fd)
        raise
    try:
        dirs = {staging}
        for parts, data in rels:
            if isinstance(data, str):
                data = data.encode("utf-8")
            directory = staging
            for part in parts[:-1]:
                directory = os.path.join(directory, part)
                if directory not in dirs:
                    os.mkdir(directory, NEW_DIR_MODE)
                    dirs.add(directory)
            path = os.path.join(directory, parts[-1])
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, NEW_FILE_MODE)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for directory in sorted(dirs, key=len, reverse=True):  # entries durable before the rename
            _fsync_dir(directory)
        ensure_inside(project_root, target_dir)  # re-check: a racing symlink swap is refused too
        try:
            st = os.stat(base, dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise ActionFailed(f"refused: {quote(target_dir)} is a symlink; harn-ls does not write through links")
        try:
            os.rename(staging_base, base, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise ActionFailed(f"refused: {quote(target_dir)} already exists; nothing was written") from None
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(parent_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(parent_fd)
    os.close(parent_fd)


def append_lines(project_root: str, path: str, lines: list[str]) -> int:
    """Append whole lines with one write; returns the byte offset the lines start at.

    A log whose last line is torn (no newline) first gets a newline, so our
    line never merges into someone else's half-written one. The folder is
    pinned by a checked fd and the log opened with O_NOFOLLOW (a symlink
    swapped in is refused); a new log gets 0o666 less the umask, like Harn's
    `OpenOptions::create`, and an existing one keeps its mode.
    """
    ensure_inside(project_root, path)
    for line in lines:
        if "\n" in line or "\r" in line:
            raise ActionFailed("refused: a memory event line may not contain a raw newline")
    directory = os.path.dirname(path)
    make_dirs(project_root, directory)
    payload = "".join(line + "\n" for line in lines).encode("utf-8")
    dir_fd = _open_dir_inside(project_root, directory)
    try:
        try:
            fd = os.open(os.path.basename(path), os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC,
                         NEW_FILE_MODE, dir_fd=dir_fd)
        except OSError as exc:
            if os.path.islink(path):
                raise ActionFailed(f"refused: {quote(path)} is a symlink; harn-ls does not write through links") from None
            raise ActionFailed(f"refused: cannot open {quote(path)}: {quote(exc)}") from None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ActionFailed(f"refused: {quote(path)} is not a regular file")
        real_path = os.path.realpath(path)
        if append_journal.roll_back_torn_tail(real_path, fd):
            st = os.fstat(fd)
        size = st.st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload
        # a write across pages can be cut by SIGKILL between pages: say first what we write
        record = append_journal.record_intent(real_path, st, size, payload) \
            if append_journal.needs_record(size, len(payload)) else None
        written = 0
        while written < len(payload):
            written += os.write(fd, payload[written:])
        os.fsync(fd)
        append_journal.drop_intent(record)
        return size
    finally:
        os.close(fd)


# -- ids shared by the actions --

_uuid7_lock = _threading.Lock()
_uuid7_last = [0, 0]  # [unix ms, 74 random/counter bits] of the previous id


def uuid7(at_ns: int | None = None) -> str:
    """A UUIDv7 (hyphenated lowercase) like Rust's `Uuid::now_v7()`.

    48-bit Unix milliseconds, then 74 random bits. Ids made from the clock in
    the same (or, if the clock stepped back, an earlier) millisecond reuse the
    previous timestamp and bump the random part, so they sort in creation
    order; an explicit `at_ns` is kept as given (bumped only within its ms).
    """
    explicit = at_ns is not None
    ms = (at_ns if at_ns is not None else _time.time_ns()) // 1_000_000
    with _uuid7_lock:
        if ms == _uuid7_last[0] or (not explicit and ms < _uuid7_last[0]):
            ms = _uuid7_last[0]
            bits = (_uuid7_last[1] + 1 + _secrets.randbits(16)) & ((1 << 74) - 1)
        else:
            bits = _secrets.randbits(74)
        _uuid7_last[0], _uuid7_last[1] = ms, bits
    rand_a, rand_b = bits >> 62, bits & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


