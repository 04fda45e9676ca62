"""Forget one stage of a pipeline checkpoint (harn-formats §B, §O.6).

Done the way current Harn mutates a checkpoint (`CheckpointState::delete`):
take the exclusive `flock` on `<pipeline>.lock` beside the file (created if
missing, never truncated, written or deleted), waiting at most 5 s with
Harn's 1 ms -> 50 ms back-off; re-read the JSON under the lock; drop the key;
write the file atomically (temp + rename, keeping its mode); release. While a
pipeline holds the lock longer than that, the action refuses with a clear
message and writes nothing. `expect_mtime` still refuses when the file
changed after the user looked at it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator

import orjson

from harn_ls.actions import NEW_FILE_MODE, ActionFailed, atomic_write, ensure_inside
from harn_ls.formats.checkpoints import render_checkpoint_json
from harn_ls.formats.locks import checkpoint_lock_path
from harn_ls.model.accept_plan import check_segment, inside_project
from harn_ls.util.message_text import quote
from harn_ls.util.safe_read import reader_root

_MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024


def checkpoint_path(ws, pipeline: str) -> tuple[str, str]:
    """The checkpoint file of `pipeline`, and the root writes stay inside: the project, or the state
    root when HARN_STATE_DIR puts it elsewhere."""
    check_segment(pipeline, "pipeline name")
    path = os.path.join(ws.paths.checkpoint_dir, pipeline + ".json")
    root = reader_root(os.path.abspath(ws.paths.state_root), os.path.abspath(ws.root))
    if root == os.path.abspath(ws.root):
        return inside_project(ws, path), root
    ensure_inside(root, path)
    return path, root


LOCK_DEADLINE = 5.0  # harn_flock::lock_with_deadline(.., Exclusive, 5 s) in CheckpointState::lock
_BACKOFF_START, _BACKOFF_MAX = 0.001, 0.05


@contextlib.contextmanager
def _checkpoint_lock(confine_root: str, json_path: str, timeout: float) -> Iterator[None]:
    """Harn's checkpoint lock: `flock(LOCK_EX)` on `<pipeline>.lock`, polled with LOCK_NB until a deadline."""
    path = checkpoint_lock_path(json_path)
    ensure_inside(confine_root, path)
    # (O_NONBLOCK: a FIFO or device planted under that name is never waited on; the fstat below refuses it)
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, NEW_FILE_MODE)  # like OpenOptions create(true).truncate(false)
    except OSError as exc:
        raise ActionFailed(f"refused: cannot open the checkpoint lock {quote(path)}: {quote(exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ActionFailed(f"refused: {quote(path)} is not a regular file")
        deadline = time.monotonic() + timeout
        delay = _BACKOFF_START
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise ActionFailed(f"refused: cannot lock {quote(path)}: {quote(exc)}") from None
            if time.monotonic() >= deadline:
                raise ActionFailed(
                    f"refused: a pipeline is writing this checkpoint right now: timed out after "
                    f"{timeout:.1f}s waiting for the exclusive lock on {quote(path)} (Harn holds it while it "
                    "saves); nothing was changed, try again in a moment")
            time.sleep(delay)
            delay = min(delay * 2, _BACKOFF_MAX)
        yield
    finally:
        os.close(fd)  # drops the flock; the lock file stays, as Harn's does


def forget_stage(ws, pipeline: str, key: str, expect_mtime: float | None = None,
                 timeout: float = LOCK_DEADLINE) -> dict:
    path, root = checkpoint_path(ws, pipeline)
    if not isinstance(key, str):
        raise ActionFailed("refused: stage key must be a string")
    # Checked once before the lock file is opened (a refusal then creates nothing), and again under the lock.
    _read_under_lock(path, pipeline, key, expect_mtime)
    with _checkpoint_lock(root, path, timeout):
        mapping = _read_under_lock(path, pipeline, key, expect_mtime)
        del mapping[key]
        # Harn re-saves a loaded file with top-level keys sorted and nested values as loaded.
        text = render_checkpoint_json(mapping, sort_nested=False)
        atomic_write(root, path, text)
    ws.apply_changes([path])
    new_mtime = os.stat(path).st_mtime
    return {
        "message": f"Forgot stage {quote(key)} of {quote(pipeline)}: it reruns on the next `harn run`",
        "pipeline": pipeline,
        "key": key,
        "path": path,
        "remaining": sorted(mapping),
        "mtime": new_mtime,
    }


def _read_under_lock(path: str, pipeline: str, key: str, expect_mtime: float | None) -> dict:
    try:
        # O_NONBLOCK: a FIFO swapped in for the checkpoint is refused below, never waited on
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise ActionFailed(f"refused: {quote(path)} does not exist") from None
    except OSError as exc:
        raise ActionFailed(f"refused: cannot open {quote(path)}: {quote(exc)}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ActionFailed(f"refused: {quote(path)} is not a regular file")
        data = fh.read(_MAX_CHECKPOINT_BYTES + 1)
    if expect_mtime is not None and st.st_mtime != expect_mtime:
        raise ActionFailed(f"refused: {quote(os.path.basename(path))} changed since it was shown; look again first")
    if len(data) > _MAX_CHECKPOINT_BYTES:
        raise ActionFailed(f"refused: {quote(path)} is too large to rewrite")
    try:
        mapping = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # Possibly caught mid-write by an older Harn (§B.3): never "repair" it into something else.
        raise ActionFailed(
            f"refused: {quote(os.path.basename(path))} is not valid JSON right now ({quote(exc)}); try again") from None
    if not isinstance(mapping, dict):
        raise ActionFailed(f"refused: {quote(os.path.basename(path))} is not a JSON object")
    if key not in mapping:
        raise ActionFailed(f"refused: {quote(pipeline)} has no stage {quote(key)}")
    return mapping
