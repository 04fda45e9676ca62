"""A real `harn-ls serve --tcp` process for the conformance tests, with its token read from the file it names."""

from __future__ import annotations

import os
import re
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conformance.bare_client import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TcpServer:
    def __init__(self, tmp: Path, *args: str, port: int | None = None, env: dict | None = None) -> None:
        self.port = port or free_port()
        self.runtime = tmp / "runtime"
        self.runtime.mkdir(exist_ok=True, mode=0o700)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harn_ls", "serve", "--tcp", f"127.0.0.1:{self.port}", *args], cwd=str(REPO),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "XDG_RUNTIME_DIR": str(self.runtime), **(env or {})})
        self.first_line = self._line(30)
        m = re.search(r"token in (\S+) \(pass it", self.first_line)
        assert m, self.first_line
        self.token_path = Path(m.group(1))
        self.token = self.token_path.read_text().strip()

    def _line(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        buf = b""
        # a selector, not select.select: that refuses a descriptor over 1023 (a test process with many files open)
        with selectors.DefaultSelector() as readable:
            readable.register(self.proc.stderr, selectors.EVENT_READ)
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                assert left > 0, "the server printed nothing"
                if readable.select(left):
                    chunk = os.read(self.proc.stderr.fileno(), 4096)
                    assert chunk, f"the server ended: {self.proc.wait()}"
                    buf += chunk
        return buf.decode()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
