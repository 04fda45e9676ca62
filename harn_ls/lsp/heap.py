"""The server process's C heap (glibc malloc), so that what a big transient phase frees goes back
to the system instead of staying in the process's RSS for its whole life.

glibc serves a request of at least `M_MMAP_THRESHOLD` bytes with its own mapping, unmapped when
freed; but it raises that threshold to the size of every such block freed (up to 32 MB), so after
the first save of the state cache (a 12 MB rows buffer) every buffer below 12 MB comes from the
main heap, and the heap is only given back from its top. At 100k events that kept ~35 MB of a
cold start's save and ~20 MB of a 10 MB transcript's parse in the RSS. `tune()` fixes the
thresholds (which turns the raising off); `trim()` (`malloc_trim(0)`, ~5 ms on a 300 MB heap)
also returns the free pages inside the heap after the phases that leave many small holes (the
load, the recall build, the save, a big run record's document).

Elsewhere than glibc (musl, macOS) both do nothing: the functions are absent there.
"""

from __future__ import annotations

import ctypes
import functools
import logging

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
# A block this big or bigger is its own mapping, given back when freed: the save's buffers, a run
# record's bytes. Smaller ones (a recall query's score buffers: ~2 MB for 240k records at 1M events)
# stay in the heap, reused without page faults (256 KB: ~5 MB less peak RSS at 100k, but such
# buffers would then be mapped and faulted in afresh on every query).
MMAP_THRESHOLD = 4 * 1024 * 1024
TRIM_THRESHOLD = 1024 * 1024  # free memory at the heap's top beyond this is given back at once

@functools.cache
def _glibc() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return None
    return lib if hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim") else None


def tune() -> bool:
    """Fix glibc's mmap and trim thresholds for this process (the server, once at start). True if set."""
    lib = _glibc()
    if lib is None:
        return False
    return bool(lib.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(lib.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def trim() -> bool:
    """Give the heap's free pages back to the system (after a big transient phase). True if any was."""
    lib = _glibc()
    if lib is None:
        return False
    try:
        return bool(lib.malloc_trim(0))
    except Exception:  # (never let housekeeping fail a step)
        log.exception("malloc_trim failed")
        return False
