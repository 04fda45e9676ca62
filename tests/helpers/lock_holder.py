"""A real second process holding an `flock` on a path until released, as a running Harn save does."""

from __future__ import annotations

import subprocess
import sys

import pytest

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_SH if sys.argv[2] == "sh" else fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def lock_holder():
    """`hold(path, mode="ex")` starts the holder and returns once the lock is taken."""
    procs = []

    def hold(path, mode="ex"):
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), mode], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "held"
        procs.append(proc)
        return proc

    yield hold
    for proc in procs:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=10)
