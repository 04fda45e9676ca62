"""`HARN_LS_START_TRACE=1`: the server's start as a timeline on stderr, to find where it goes.

One line per step: wall seconds since the process started, the process's CPU seconds (every thread,
interpreter start-up included) and the step, e.g.
    harn-ls start   0.912 s  cpu   0.874 s  recall ready /path/to/project
The wall clock counts from the process's start time as the kernel gives it (/proc, 10 ms ticks),
else from this module's import. Off (the default), `mark` is one attribute test. Nothing about what
the server answers changes; the lines go to stderr only, which LSP clients show as the server's log.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from harn_ls.util.portable import linux_facility

ENV = "HARN_LS_START_TRACE"
enabled: bool = os.environ.get(ENV) == "1"


def _process_start_epoch() -> float | None:
    """When this process started (seconds since the epoch), from /proc; None elsewhere."""
    if not linux_facility("proc_stat"):
        return None
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        return time.time() - (uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


_started: float = (_process_start_epoch() or time.time()) if enabled else 0.0


def mark(step: str) -> None:
    """One line of the timeline (nothing unless HARN_LS_START_TRACE=1)."""
    if not enabled:
        return
    with contextlib.suppress(OSError, ValueError):  # a closed stderr: the trace is only a diagnostic
        sys.stderr.write(f"harn-ls start {time.time() - _started:7.3f} s  cpu {time.process_time():7.3f} s  {step}\n")
        sys.stderr.flush()
