"""Forget one stage of a pipeline checkpoint (harn-formats §B).

Harn rewrites `.harn/checkpoints/<pipeline>.json` non-atomically (truncate +
write, §B.3); we replace it atomically (temp + rename), in Harn's exact
pretty format, so Harn's next load sees the old file or the whole new one.
A running pipeline keeps its in-memory copy and would write the key back:
`recently_modified` lets the caller ask for confirmation first, and
`expect_mtime` refuses when the file changed after the user looked at it.
"""

from __future__ import annotations

import os
import time

import orjson

from harn_ls.actions import ActionFailed, atomic_write, ensure_inside
from harn_ls.actions.proposals import _check_segment, _inside
from harn_ls.formats.checkpoints import render_checkpoint_json

_MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024


def _root_for(ws) -> str:
    """The project, or the state root when HARN_STATE_DIR puts it elsewhere: writes stay inside it."""
    state = os.path.abspath(ws.paths.state_root)
    root = os.path.abspath(ws.root)
    return root if state == root or state.startswith(root.rstrip(os.sep) + os.sep) else state


def checkpoint_path(ws, pipeline: str) -> str:
    _check_segment(pipeline, "pipeline name")
    path = os.path.join(ws.paths.checkpoint_dir, pipeline + ".json")
    root = _root_for(ws)
    if root == os.path.abspath(ws.root):
        return _inside(ws, path)
    ensure_inside(root, path)
    return path


def recently_modified(ws, pipeline: str, seconds: float = 5) -> bool:
    """True when the file changed in the last `seconds`: a pipeline may be running against it."""
    try:
        mtime = os.stat(checkpoint_path(ws, pipeline)).st_mtime
    except FileNotFoundError:
        return False
    return time.time() - mtime <= seconds


def forget_stage(ws, pipeline: str, key: str, expect_mtime: float | None = None) -> dict:
    path = checkpoint_path(ws, pipeline)
    if not isinstance(key, str):
        raise ActionFailed("refused: stage key must be a string")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise ActionFailed(f"refused: {path} does not exist") from None
    except OSError as exc:
        raise ActionFailed(f"refused: cannot open {path}: {exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        data = fh.read(_MAX_CHECKPOINT_BYTES + 1)
    if expect_mtime is not None and st.st_mtime != expect_mtime:
        raise ActionFailed(f"refused: {os.path.basename(path)} changed since it was shown; look again first")
    if len(data) > _MAX_CHECKPOINT_BYTES:
        raise ActionFailed(f"refused: {path} is too large to rewrite")
    try:
        mapping = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # Possibly caught mid-write by Harn (§B.3): never "repair" it into something else.
        raise ActionFailed(f"refused: {os.path.basename(path)} is not valid JSON right now ({exc}); try again") from None
    if not isinstance(mapping, dict):
        raise ActionFailed(f"refused: {os.path.basename(path)} is not a JSON object")
    if key not in mapping:
        raise ActionFailed(f"refused: {pipeline} has no stage {key!r}")
    del mapping[key]
    # Harn re-saves a loaded file with top-level keys sorted and nested values as loaded.
    text = render_checkpoint_json(mapping, sort_nested=False)
    atomic_write(_root_for(ws), path, text)
    ws.apply([path])
    new_mtime = os.stat(path).st_mtime
    return {
        "message": f"Forgot stage {key!r} of {pipeline}: it reruns on the next `harn run`",
        "pipeline": pipeline,
        "key": key,
        "path": path,
        "remaining": sorted(mapping),
        "mtime": new_mtime,
    }
