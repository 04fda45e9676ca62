"""Saving the span store (harn_ls/state_spans.py) of a project after requests anchored new spans.

Not on every request: the first request that leaves anchors unsaved schedules one save on the
project thread a few seconds later (off the event loop), which writes whatever the requests of
those seconds anchored. The settle after start saves it too, with the state cache."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

log = logging.getLogger(__name__)
SAVE_DELAY_S = 5.0


async def run_noting_spans(proj, fn: Callable[[], Any]) -> Any:
    """`await proj.run(fn)` for a request that may anchor spans; schedules the store's save if due."""
    def _call() -> tuple[Any, bool]:
        out = fn()
        return out, proj.fact_spans.take_save_request()

    out, save_due = await proj.run(_call)
    if save_due:
        asyncio.get_running_loop().call_later(SAVE_DELAY_S, _submit_save, proj)
    return out


def _submit_save(proj) -> None:
    if proj.closed:
        return
    try:
        proj.submit(_save, proj)
    except RuntimeError:  # the project's thread pool shut down meanwhile
        pass


def _save(proj) -> None:
    try:
        proj.fact_spans.save_store()
    except Exception:  # a cache is a convenience: never let it break the project thread
        log.exception("saving the span store failed")
