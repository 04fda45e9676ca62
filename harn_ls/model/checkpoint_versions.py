"""Checkpoint history kept from the model: after a load or a change, every new version of a checkpoint
file the Workspace holds goes into the cache's history store (cache/checkpoint_history.py).

One code path for `serve` and `watch` alike, so both keep the same history."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from harn_ls.cache.checkpoint_history import MAX_FILE_BYTES, CheckpointHistory
from harn_ls.model.change_kinds import K
from harn_ls.util.safe_read import read_confined

if TYPE_CHECKING:
    from harn_ls.model.change_kinds import ChangeSet
    from harn_ls.model.workspace import Workspace


def keep_history(ws: Workspace, changes: ChangeSet | None = None) -> list[tuple[str, int]]:
    """The one code path that keeps checkpoint history, for `serve` and `watch` alike: open the store
    (outside the project; none with the cache off) on first use, then record every checkpoint file
    after a load or rescan (`changes` None or rescanned), else only the pipelines that changed."""
    if changes is not None and K.CHECKPOINTS not in changes.kinds:
        return []
    if ws.checkpoint_history is None:
        ws.checkpoint_history = CheckpointHistory.for_project(ws.root)
    return record_workspace(ws, None if changes is None or changes.rescanned else changes.pipelines)


def record_workspace(ws: Workspace, pipelines: Iterable[str] | None = None) -> list[tuple[str, int]]:
    """Record the current bytes of the workspace's checkpoint files (all, or `pipelines`); returns new versions."""
    hist = ws.checkpoint_history
    if hist is None:
        return []
    out: list[tuple[str, int]] = []
    names = sorted(ws.checkpoints) if pipelines is None else sorted(p for p in pipelines if p in ws.checkpoints)
    try:
        for name in names:
            cf = ws.checkpoints[name]
            if cf.retry or not cf.exists or cf.size > MAX_FILE_BYTES:
                continue  # half-written or gone: the next change brings the real version
            try:  # the project's checkpoint: through safe_read (a FIFO swapped in since the load is refused)
                data = read_confined(cf.path, ws.root, MAX_FILE_BYTES)
            except OSError:
                continue
            n = hist.record(name, data, check_caps=False)  # (the caps are checked once, after every pipeline)
            if n is not None:
                out.append((name, n))
    finally:  # (also when a write failed: what was recorded before it counts)
        if out:
            hist.check_caps()
    return out
