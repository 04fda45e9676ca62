"""What harn-ls must do before its process ends, run by a normal exit and by the fast one alike.

`python -m harn_ls` leaves a one-shot command through `os._exit` (harn_ls/__main__.py), which skips
the interpreter's teardown and with it the `atexit` handlers. harn-ls's own handlers are registered
here instead: each with `atexit` too (a normal exit runs it once), and `run_all()` runs them before
the fast exit and unregisters them, so none runs twice. Other libraries' handlers are theirs: the
fast exit is taken only when no thread of theirs still runs (see __main__), and logging is shut
down there by its public `logging.shutdown()`.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable

_HOOKS: list[Callable[[], None]] = []


def register(fn: Callable[[], None]) -> Callable[[], None]:
    """Decorator: run `fn` when the process ends, however it ends."""
    _HOOKS.append(fn)
    atexit.register(fn)
    return fn


def run_all() -> None:
    while _HOOKS:
        fn = _HOOKS.pop()
        atexit.unregister(fn)
        with contextlib.suppress(Exception):  # an exit hook that fails must not keep the others from running
            fn()
