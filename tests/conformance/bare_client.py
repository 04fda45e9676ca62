"""A bare LSP client: JSON-RPC framing written here (not pygls's client), over a server process's
stdio or a TCP socket, to hold the server to LSP 3.17 as written rather than to one client's ways."""

from __future__ import annotations

import json
import os
import re
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# Every optional capability this server reads, declared (VS Code-like); BARE declares none.
FULL_CAPS: dict = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True, "showDocument": {"support": True}},
    "workspace": {"configuration": True, "workspaceFolders": True, "codeLens": {"refreshSupport": True},
                  "textDocumentContent": {"dynamicRegistration": False}, "executeCommand": {}},
    "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                     "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "source"]}}},
                     "codeLens": {}, "synchronization": {},
                     "documentSymbol": {"hierarchicalDocumentSymbolSupport": True}},
}
BARE_CAPS: dict = {}


class BareClient:
    def __init__(self, send, recv, proc: subprocess.Popen | None = None) -> None:
        self._send, self._recv, self.proc = send, recv, proc
        self.buf = b""
        self.next_id = 0
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self.selector: selectors.BaseSelector | None = None

    # -- transports --------------------------------------------------------------------
    @classmethod
    def stdio(cls, *args: str, env: dict | None = None) -> BareClient:
        proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "serve", *args], cwd=str(REPO),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, **(env or {})})

        def send(data: bytes) -> None:
            proc.stdin.write(data)
            proc.stdin.flush()

        # a selector, not select.select: that refuses a descriptor over 1023, which a test process that
        # opened many files before (the whole suite in one run) hands out
        readable = selectors.DefaultSelector()
        readable.register(proc.stdout, selectors.EVENT_READ)

        def recv(timeout: float) -> bytes:
            ready = readable.select(timeout)
            return os.read(proc.stdout.fileno(), 65536) if ready else b"\0timeout"
        client = cls(send, recv, proc)
        client.selector = readable
        return client

    @classmethod
    def tcp(cls, port: int, host: str = "127.0.0.1") -> BareClient:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=20)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

        def recv(timeout: float) -> bytes:
            sock.settimeout(timeout)
            try:
                return sock.recv(65536)
            except TimeoutError:
                return b"\0timeout"
            except OSError:
                return b""
        client = cls(sock.sendall, recv)
        client.sock = sock
        return client

    # -- framing -----------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self._send(data)

    def send(self, msg: dict, header: str = "Content-Length") -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        self._send(f"{header}: {len(body)}\r\n\r\n".encode() + body)

    def read(self, timeout: float = 20.0) -> dict | None:
        """The next message; None when the server closed the stream; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(rb"\r\n\r\n", self.buf)
            if m:
                head = self.buf[:m.start()].decode("ascii")
                length = int(re.search(r"(?im)^content-length:\s*(\d+)", head).group(1))
                rest = self.buf[m.end():]
                if len(rest) >= length:
                    self.buf = rest[length:]
                    return json.loads(rest[:length])
            left = deadline - time.monotonic()
            assert left > 0, "timed out waiting for the server"
            chunk = self._recv(left)
            if chunk == b"\0timeout":
                continue
            if not chunk:
                return None
            self.buf += chunk

    def answer_server_request(self, msg: dict) -> None:
        self.server_requests.append(msg)
        if msg["method"] == "workspace/configuration":
            result: Any = [None] * len(msg["params"].get("items", []))
        elif msg["method"] == "window/showDocument":
            result = {"success": True}
        else:
            result = None
        self.send({"id": msg["id"], "result": result})

    def wait_response(self, rid, timeout: float = 20.0) -> dict:
        while True:
            msg = self.read(timeout)
            assert msg is not None, "server closed the stream"
            if "method" in msg and "id" in msg:
                self.answer_server_request(msg)
            elif "method" in msg:
                self.notifications.append(msg)
            elif msg.get("id") == rid:
                return msg

    def request(self, method: str, params: Any = None, timeout: float = 20.0) -> dict:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        return self.wait_response(rid, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    def wait_notification(self, method: str, pred=lambda m: True, timeout: float = 20.0) -> dict:
        for n in self.notifications:
            if n["method"] == method and pred(n):
                return n
        deadline = time.monotonic() + timeout
        while True:
            msg = self.read(max(0.01, deadline - time.monotonic()))
            assert msg is not None, "server closed the stream"
            if "method" in msg and "id" in msg:
                self.answer_server_request(msg)
            elif "method" in msg:
                self.notifications.append(msg)
                if msg["method"] == method and pred(msg):
                    return msg

    def wait_server_request(self, method: str, timeout: float = 10.0) -> dict:
        """The first request `method` the server sent (each answered as it came)."""
        deadline = time.monotonic() + timeout
        while True:
            for r in self.server_requests:
                if r["method"] == method:
                    return r
            assert time.monotonic() < deadline, f"no {method} within {timeout} s"
            msg = self.read(max(0.01, deadline - time.monotonic()))
            assert msg is not None, "server closed the stream"
            if "method" in msg and "id" in msg:
                self.answer_server_request(msg)
            elif "method" in msg:
                self.notifications.append(msg)

    def initialize(self, project: Path | None, caps: dict, options: dict | None = None) -> dict:
        params = {"processId": None, "capabilities": caps, "clientInfo": {"name": "bare-conformance-client"},
                  "initializationOptions": options or {}}
        if project is not None:
            params["rootUri"] = project.as_uri()
            params["workspaceFolders"] = [{"uri": project.as_uri(), "name": project.name}]
        res = self.request("initialize", params)
        self.notify("initialized", {})
        return res

    def exit_status(self, timeout: float = 20.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.selector is not None:
                self.selector.close()
            for pipe in (self.proc.stdout, self.proc.stderr):  # (closed, or each client leaves two fds open)
                if pipe is not None:
                    pipe.close()
        else:
            self.sock.close()
