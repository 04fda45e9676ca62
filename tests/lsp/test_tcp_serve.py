"""`harn-ls serve --tcp`: loopback only, and no client can choose a program to run.

A real server process on a TCP port, a hand-written JSON-RPC client on a socket. The
client plays an attacker that reached the port: it claims a trusted workspace and
names its own `harn` (a script that would leave a marker file), then asks for a probe.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lsp.conftest import HARN_DOUBLE, REPO, copy_sample

DOC = 'pipeline main() {\n  let x: int = "oops"\n}\n'


def _serve(*args: str, env: dict | None = None) -> subprocess.Popen:
    """The server, its first stderr line (`first_line`) and the token that line names (`token`)."""
    proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "serve", *args], cwd=str(REPO),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})
    proc.first_line = proc.stderr.readline().decode()
    m = re.search(r"token in (\S+) \(pass it", proc.first_line)
    proc.token = Path(m.group(1)).read_text().strip() if m else None
    return proc


def _answer(msg: dict) -> dict:
    """A command's answer: its result, or the payload of the error it refused with."""
    if "error" in msg:
        assert msg["error"]["code"] in (-32803, -32602), msg
        return msg["error"]["data"]
    return msg["result"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RpcClient:
    def __init__(self, port: int) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.buf = b""
        self.next_id = 0
        self.notifications: list[dict] = []

    def send(self, msg: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read(self) -> dict:
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "server closed the connection"
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            assert chunk, "server closed the connection"
            rest += chunk
        self.buf = rest[length:]
        return json.loads(rest[:length])

    def request(self, method: str, params) -> dict:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        while True:
            msg = self._read()
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg:  # server -> client request: answer empty
                result = [None] * len(msg["params"].get("items", [])) if msg["method"] == "workspace/configuration" else None
                self.send({"id": msg["id"], "result": result})
            elif "method" in msg:
                self.notifications.append(msg)

    def notify(self, method: str, params) -> None:
        self.send({"method": method, "params": params})

    def close(self) -> None:
        self.sock.close()


def _attack(port: int, project: Path, evil_harn: Path, token: str) -> tuple[dict, RpcClient]:
    """Initialize as a client (with the server's token: these are the rules for an admitted one) that
    names its own harn and says it trusts the folder; ask for a probe."""
    c = RpcClient(port)
    init = c.request("initialize", {
        "processId": None, "rootUri": project.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": project.as_uri(), "name": "p"}],
        "initializationOptions": {"settings": {"harnState": {"harnPath": str(evil_harn), "trustedByDefault": True}},
                                  "workspaceTrusted": True, "token": token},
    })
    assert init["result"]["serverInfo"]["name"] == "harn-ls"
    c.notify("initialized", {})
    c.notify("workspace/didChangeConfiguration", {"settings": {"harnState": {"harnPath": str(evil_harn)}}})
    target = project / "pipelines" / "probe_target.harn"
    target.write_text(DOC)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": target.as_uri(), "languageId": "harn", "version": 1,
                                                       "text": DOC}})
    deadline = time.monotonic() + 60
    while True:  # the project loads in the background after `initialized`
        result = c.request("workspace/executeCommand", {"command": "harnState.probeTypecheck",
                                                        "arguments": [{"uri": target.as_uri()}]})
        if _answer(result).get("message") != "no Harn project is open" or time.monotonic() > deadline:
            return _answer(result), c
        time.sleep(0.1)


def _shutdown(c: RpcClient, proc: subprocess.Popen) -> None:
    try:
        c.request("shutdown", None)
        c.notify("exit", None)
        c.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    """A `harn` the attacker names: running it leaves a marker file."""
    marker = tmp_path / "PWNED"
    script = tmp_path / "proj-evil" / "harn"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho ran > {marker}\necho '{{}}'\n")
    script.chmod(0o755)
    return script, marker


def test_probe_refused_over_tcp_without_allow_probes(tmp_path, evil):
    project = copy_sample(tmp_path)
    script, marker = evil
    port = _free_port()
    proc = _serve("--tcp", f"127.0.0.1:{port}")
    result, c = _attack(port, project, script, proc.token)
    try:
        assert result["ok"] is False
        assert "--allow-probes" in result["message"]
        time.sleep(0.3)
        assert not marker.exists()
    finally:
        _shutdown(c, proc)
    assert f"listening on 127.0.0.1:{port} (probes off" in proc.first_line


def test_client_harn_path_ignored_over_tcp_even_with_allow_probes(tmp_path, evil):
    project = copy_sample(tmp_path)
    script, marker = evil
    calls = tmp_path / "double.log"
    port = _free_port()
    proc = _serve("--tcp", f"localhost:{port}", "--allow-probes",
                  env={"HARN_LS_HARN": str(HARN_DOUBLE), "HARN_DOUBLE_LOG": str(calls)})
    result, c = _attack(port, project, script, proc.token)
    try:
        # the probe ran -- with the harn from the server's environment, not the client's
        assert result["ok"] is True, result
        assert result["summary"] == "typecheck fail: 1 error"
        assert calls.exists() and "check" in calls.read_text()
        assert not marker.exists()
    finally:
        _shutdown(c, proc)


def test_harn_flag_beats_environment_and_ipv6_loopback(tmp_path, evil):
    """--harn wins over $HARN_LS_HARN; [::1] is a loopback address too."""
    script, _marker = evil
    calls = tmp_path / "double.log"
    port = _free_port()
    proc = _serve("--tcp", f"[::1]:{port}", "--allow-probes", "--harn", str(HARN_DOUBLE),
                  env={"HARN_LS_HARN": str(script), "HARN_DOUBLE_LOG": str(calls)})
    try:
        c = RpcClient.__new__(RpcClient)
        deadline = time.monotonic() + 60
        while True:
            try:
                c.sock = socket.create_connection(("::1", port), timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        c.sock.close()
    finally:
        proc.terminate()
        proc.wait(10)
    # the flag wins over the environment: the stderr line names the double, not the script
    err = proc.first_line + proc.stderr.read().decode()
    assert f"harn = {HARN_DOUBLE}" in err and str(script) not in err


@pytest.mark.parametrize("spec", ["0.0.0.0:7000", "[::]:7000", "192.168.1.20:7000", "example.com:7000", ":notaport"])
def test_non_loopback_tcp_refused(spec):
    proc = subprocess.run([sys.executable, "-m", "harn_ls", "serve", "--tcp", spec], cwd=str(REPO),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert line.startswith("harn-ls: ") and "\n" not in line
    assert ("loopback addresses only" in line) or ("HOST:PORT" in line)


def test_allow_probes_needs_tcp():
    proc = subprocess.run([sys.executable, "-m", "harn_ls", "serve", "--allow-probes"], cwd=str(REPO),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "--allow-probes is for serve --tcp" in proc.stderr


@pytest.mark.parametrize("allow", [False, True])
def test_escalation_resume_over_tcp_never_runs_the_clients_harn(tmp_path, evil, allow):
    """resumeEscalation also runs `harn`: over TCP the same rules hold as for probes."""
    from tests.lsp.test_hitl import escalate

    project = copy_sample(tmp_path)
    rid = escalate(project, "hitl_escalation_tcp-1")
    script, marker = evil
    calls = tmp_path / "double.log"
    port = _free_port()
    proc = _serve("--tcp", f"127.0.0.1:{port}", *(["--allow-probes"] if allow else []),
                  env={"HARN_LS_HARN": str(HARN_DOUBLE), "HARN_DOUBLE_LOG": str(calls)})
    _probe, c = _attack(port, project, script, proc.token)
    try:
        deadline = time.monotonic() + 60
        while True:
            res = _answer(c.request("workspace/executeCommand", {"command": "harnState.resumeEscalation",
                                                                 "arguments": [{"requestId": rid}]}))
            if "no escalation" not in (res.get("message") or "") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if allow:
            assert res.get("ok") is not False, res  # ran -- with the server's harn
            assert calls.exists() and "orchestrator" in calls.read_text()
        else:
            assert res["ok"] is False and "--allow-probes" in res["message"]
        time.sleep(0.3)
        assert not marker.exists()
    finally:
        _shutdown(c, proc)
