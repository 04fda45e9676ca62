"""`serve --tcp`: a key, a session per connection, a clean one-line failure.

A real server process, bare clients on sockets. The attacks are what reaches a loopback port in
practice: a local process that does not know the token (or guesses one), a browser page that
POSTs a JSON-RPC body to http://127.0.0.1:PORT/, a second editor on the same port.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time

from tests.conformance.bare_client import BARE_CAPS, REPO, BareClient
from tests.conformance.tcp_server import TcpServer
from tests.lsp.conftest import copy_sample

ACCEPT = {"id": 1, "method": "workspace/executeCommand", "params": {
    "command": "harnState.acceptProposal", "arguments": [{"id": "x"}]}}


def _initialize(token) -> dict:
    opts = {} if token is None else {"token": token}
    return {"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {},
                                                         "initializationOptions": opts}}


def test_token_file_is_user_only_and_removed_when_the_server_stops(tmp_path):
    server = TcpServer(tmp_path)
    try:
        mode = stat.S_IMODE(os.stat(server.token_path).st_mode)
        assert mode == 0o600, oct(mode)
        assert stat.S_IMODE(os.stat(server.token_path.parent).st_mode) == 0o700
        assert len(server.token) >= 40
    finally:
        server.stop()
    assert not server.token_path.exists()


def test_no_token_wrong_token_and_other_first_messages_are_refused_and_closed(tmp_path):
    project = copy_sample(tmp_path)
    server = TcpServer(tmp_path)
    try:
        for first in (_initialize(None), _initialize("guess-" + server.token[6:]), _initialize(123), ACCEPT):
            c = BareClient.tcp(server.port)
            if first is not ACCEPT:
                first["params"]["rootUri"] = project.as_uri()
            c.send(first)
            msg = c.read()
            assert msg["id"] == 1 and msg["error"]["code"] == -32600, msg
            assert str(server.token_path) in msg["error"]["message"] and server.token not in msg["error"]["message"]
            assert c.read() is None  # closed
            c.close()
        # the refused connections ran nothing: no project was opened, the server still serves
        c = BareClient.tcp(server.port)
        assert c.initialize(None, BARE_CAPS, {"token": server.token})["result"]["serverInfo"]["name"] == "harn-ls"
        c.close()
        assert server.alive()
    finally:
        server.stop()


def test_http_post_with_a_json_rpc_body_is_refused_before_anything_runs(tmp_path):
    server = TcpServer(tmp_path)
    try:
        body = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{},'
                b'"initializationOptions":{"token":"' + server.token.encode() + b'"}}}')
        # even with the token in the body: HTTP is not LSP's framing
        request = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                   % len(body)) + body
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(request)
            assert s.recv(65536) == b""  # closed without a byte of answer
        assert server.alive()
    finally:
        server.stop()


def test_each_connection_is_its_own_session_and_leaving_ends_only_it(tmp_path):
    one = copy_sample(tmp_path / "a")
    two = copy_sample(tmp_path / "b")
    server = TcpServer(tmp_path)
    try:
        a = BareClient.tcp(server.port)
        a.initialize(one, BARE_CAPS, {"token": server.token})
        b = BareClient.tcp(server.port)
        b.initialize(two, BARE_CAPS, {"token": server.token})
        sa = a.wait_notification("harn/status")
        sb = b.wait_notification("harn/status")
        assert sa["params"]["root"] == str(one) and sb["params"]["root"] == str(two)
        # answers go to their own socket, about their own folder
        for client, root in ((a, one), (b, two)):
            found = client.request("workspace/symbol", {"query": ""})["result"]
            assert found and all(str(root) in (s["location"]["uri"] if "uri" in s["location"] else "")
                                 or s["location"]["uri"].startswith("harn-state:") for s in found)
            assert all(str(two if root == one else one) not in str(s) for s in found)
        # a leaves with a clean connect-and-close; b is still served, the server still listens
        a.close()
        time.sleep(0.5)
        assert b.request("workspace/symbol", {"query": ""})["result"]
        c = BareClient.tcp(server.port)
        c.send(_initialize(None))
        assert c.read()["error"]["code"] == -32600
        c.close()
        # b's exit ends b's session only
        assert b.request("shutdown")["result"] is None
        b.notify("exit")
        assert b.read() is None
        assert server.alive()
    finally:
        server.stop()


def test_port_in_use_is_one_line_and_status_2(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "harn_ls", "serve", "--tcp", f"127.0.0.1:{port}"], cwd=str(REPO),
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)})
    assert proc.returncode == 2, proc
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("harn-ls: cannot listen on 127.0.0.1:")
    assert "address already in use" in proc.stderr
    assert not list((tmp_path / "harn-ls").glob("*.token"))  # no key left behind
