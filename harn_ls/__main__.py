"""`python -m harn_ls` and the `harn-ls` script: run the CLI, then leave without tearing the heap down."""

import contextlib
import gc
import os
import sys

# The collector would rescan every object the CLI's modules create as they load (~3 ms over 8
# collections); it is paused for the import only: each command decides for itself once parsed
# (one-shot commands keep it off, `serve` freezes what it loaded).
_collector_was_on = gc.isenabled()
gc.disable()
try:
    from harn_ls.cli.main import main
finally:
    if _collector_was_on:
        gc.enable()


def _exit(code: int) -> None:
    """Exit with `code`. A one-shot command over a big project leaves millions of objects
    (records, facts, parsed values); the interpreter's own exit frees them one by one and runs a
    last collection over all of them (~1.2 s of CPU at 100k events, after the answer is out).
    When no other thread is still running, harn-ls's exit hooks (harn_ls/util/exit_hooks.py) and logging's
    shutdown run, the streams are flushed and the
    process ends without that teardown; otherwise (a server still stopping) it exits normally."""
    # threading never loaded (~4 ms a one-shot command need not pay): no thread was started, since
    # harn-ls starts its threads only through it
    threading = sys.modules.get("threading")
    others = [] if threading is None else [
        t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    if others:
        raise SystemExit(code)
    hooks = sys.modules.get("harn_ls.util.exit_hooks")  # loaded if any hook was registered
    if hooks is not None:
        hooks.run_all()
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.shutdown()  # flushes and closes the handlers, as its own exit hook would
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: the answer was already refused downstream
            stream.flush()
    os._exit(code)


def run() -> None:
    _exit(main())


if __name__ == "__main__":
    run()
