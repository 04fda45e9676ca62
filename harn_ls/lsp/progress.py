"""Long work shown as LSP work-done progress (`window/workDoneProgress/create` + `$/progress`), and as
`harn/loading` for our own status bar.

The work runs on a project thread and only updates a `WorkProgress` (harn_ls/util/progress.py); this
module watches it from the event loop: nothing crosses threads but a few attribute reads. Work that
ends within `SHOW_AFTER_S` shows nothing at all (a small project's load is not worth a flash of a
progress bar). Then: create the token (only for a client that declared `window.workDoneProgress`),
`begin`, a `report` whenever the snapshot changed — at most `REPORT_EVERY_S` apart, percentages
never falling — and `end` with what the work found.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from harn_ls import contract as P
from harn_ls.lsp import messages
from harn_ls.util.progress import WorkProgress, seconds_from_env

log = logging.getLogger(__name__)

SHOW_AFTER_S = 0.5  # shorter work shows no progress (HARN_LS_PROGRESS_AFTER: tests set 0)
REPORT_EVERY_S = 0.25  # at most four reports a second (HARN_LS_PROGRESS_EVERY)


async def with_progress(ls: Any, root: str, work: WorkProgress, task: Awaitable[Any],
                        summary: Callable[[], str] | None = None) -> Any:
    """Await `task` (already running), showing `work` meanwhile; its result (or exception)."""
    fut = asyncio.ensure_future(task)
    try:
        return await _watch(ls, root, work, fut, summary)
    except asyncio.CancelledError:  # whoever waits gave up on the work: so does the work
        fut.cancel()
        raise


async def _watch(ls: Any, root: str, work: WorkProgress, fut: asyncio.Future, summary: Callable[[], str] | None) -> Any:
    done, _ = await asyncio.wait({fut}, timeout=seconds_from_env("HARN_LS_PROGRESS_AFTER", SHOW_AFTER_S))
    if done:
        return fut.result()
    # The token is asked for once and used as soon as the client says yes: a client busy with
    # something else (Neovim sending a big buffer's didOpen) answers late but still gets the rest.
    # An answer that comes after the work ended is left alone: cancelling the request would only
    # make pygls complain to the user about a cancelled future.
    creating = asyncio.ensure_future(_create_token(ls)) if ls.client.work_done_progress else None
    token = None
    last = reported = None  # the (percentage, message) last sent as harn/loading, and as a report
    began = False
    every = seconds_from_env("HARN_LS_PROGRESS_EVERY", REPORT_EVERY_S)
    try:
        while True:
            if creating is not None and creating.done():
                token, creating = creating.result(), None
            snap = work.snapshot()
            if token is not None and not began:
                messages.begin_progress(ls, token, work.title, snap.message or None, cancellable=False,
                                        percentage=snap.percentage or 0)
                began, reported = True, snap[1:3]
            if snap[1:3] != last:
                last = snap[1:3]
                _loading(ls, root, work, done=False)
            if began and token is not None and snap[1:3] != reported:  # (began: token is not None)
                reported = snap[1:3]
                messages.report_progress(ls, token, snap.message or None, snap.percentage)
            if fut.done():
                break
            await asyncio.wait({fut} if creating is None else {fut, creating}, timeout=every,
                               return_when=asyncio.FIRST_COMPLETED)
    finally:
        text = ""
        if fut.done() and not fut.cancelled() and fut.exception() is None and summary is not None:
            try:
                text = summary()
            except Exception:  # a summary is a courtesy: never let it hide the work's result
                log.exception("progress summary failed")
        work.finish(text)
        _loading(ls, root, work, done=True)
        if began and token is not None:
            messages.end_progress(ls, token, text or None)
    return fut.result()


async def _create_token(ls: Any) -> str | None:
    token = f"harn-ls/{uuid.uuid4()}"
    try:
        await ls.work_done_progress.create_async(token)
    except Exception as exc:  # refused: the work is shown in harn/loading only
        log.info("work-done progress not created: %s", exc)
        return None
    return token


def _loading(ls: Any, root: str, work: WorkProgress, done: bool) -> None:
    snap = work.snapshot()
    try:
        ls.protocol.notify(P.LOADING, P.to_wire(P.LoadingParams(
            root=root, title=messages.defuse(work.title), percentage=snap.percentage,
            message=messages.defuse(work.summary if done else snap.message), done=done)))
    except Exception as exc:  # the status bar's courtesy: a closed stream must not break the work
        log.debug("harn/loading not sent: %s", exc)
