"""Saving the span store (harn_ls/cache/spans.py) of a project after requests anchored new spans.

Not on every request: the first request that leaves anchors unsaved schedules one save on the
project thread a few seconds later (off the event loop), which writes whatever the requests of
those seconds anchored. The save (a few ms) waits until no watcher batch was applied for a
second: a batch is followed by the client's hovers and lenses, which it would hold up. The
settle after start saves the store too, with the state cache."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
SAVE_DELAY_S = 5.0
QUIET_AFTER_BATCH_S = 1.0  # no batch applied for this long before the save
MAX_POSTPONED = 30  # then it is written anyway (a project whose logs never stop growing)


async def run_noting_spans(proj, fn: Callable[[], Any]) -> Any:
    """`await proj.run(fn)` for a request that may anchor spans; schedules the store's save if due."""
    def _call() -> tuple[Any, bool]:
        out = fn()
        return out, proj.fact_spans.take_save_request()

    out, save_due = await proj.run(_call)
    if save_due:
        asyncio.get_running_loop().call_later(SAVE_DELAY_S, _submit_save, proj)
    return out


def _submit_save(proj, postponed: int = 0) -> None:
    if proj.closed:
        return
    since_batch = time.time() - proj.last_batch_at
    if since_batch < QUIET_AFTER_BATCH_S and postponed < MAX_POSTPONED:
        asyncio.get_running_loop().call_later(QUIET_AFTER_BATCH_S - since_batch, _submit_save, proj, postponed + 1)
        return
    with contextlib.suppress(RuntimeError):  # (the project's thread pool shut down meanwhile)
        proj.submit(_save, proj)


def _save(proj) -> None:
    try:
        proj.fact_spans.save_store()
    except Exception:  # a cache is a convenience: never let it break the project thread
        log.exception("saving the span store failed")
