"""Linux-only facilities, and the portable path each one has, chosen at run time.

harn-ls runs on Linux and macOS (and is built for both). Where Linux offers something better, it is
used when present; everywhere else, and whenever `HARN_LS_PORTABLE=1` is set, the portable path is
taken instead. The switch exists so that the portable paths run here, on Linux, in the test suite
(`make test-portable` runs the whole LSP suite with it), the way a macOS machine runs them.

| facility      | Linux                                   | portable path                                         |
|---------------|-----------------------------------------|-------------------------------------------------------|
| `proc_locks`  | `/proc/locks`: who holds an flock       | checkpoint locks: a `LOCK_SH|LOCK_NB` probe, released |
|               |                                         | at once (formats/locks.py); session leases: unknown   |
| `inotify`     | watchdog's inotify observer             | watchdog's polling observer (watch/observer.py)                |
| `proc_fd`     | `/proc/self/fd/N`: where an fd points   | `F_GETPATH` (macOS), else the path's (dev, inode)     |
| `proc_stat`   | `/proc/self/stat`: the process's start  | no start time (start-trace timings count from import) |

`O_NOFOLLOW`, `O_NONBLOCK` and `O_CLOEXEC` are POSIX and mean the same on macOS; `O_DIRECTORY` is
looked up with a fallback. No pygls here: the pure core uses this.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys

PORTABLE_ENV = "HARN_LS_PORTABLE"
FACILITIES = frozenset({"proc_locks", "inotify", "proc_fd", "proc_stat"})


def portable_forced() -> bool:
    """`HARN_LS_PORTABLE=1` (or true/yes/on): every Linux-only facility is switched off."""
    return os.environ.get(PORTABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def linux_facility(name: str) -> bool:
    """May the Linux-only `name` be used? False off Linux and when the portable paths are forced.
    True means "try it": a caller still falls back when it fails (no procfs in a container)."""
    if name not in FACILITIES:
        raise ValueError(f"unknown facility {name!r}")
    return sys.platform.startswith("linux") and not portable_forced()


def fd_path(fd: int) -> str | None:
    """The path an open fd refers to now, from the kernel: None when this platform cannot tell."""
    if linux_facility("proc_fd"):
        with contextlib.suppress(OSError):
            return os.readlink(f"/proc/self/fd/{fd}")
    get_path = getattr(fcntl, "F_GETPATH", None)  # macOS
    if get_path is not None and not portable_forced():
        try:
            raw = fcntl.fcntl(fd, get_path, bytes(1024))
        except OSError:
            return None
        return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


def os_user() -> str:
    """The OS user's login name, or "" (the default reviewer of an answer: never anything from the project)."""
    # start-up: getpass (with pwd) only when asked
    import getpass

    try:
        return getpass.getuser()
    except Exception:
        return ""
