"""LSP 3.17's base protocol and lifecycle, held by a bare client (tests/conformance/bare_client.py)
over stdio and over TCP: header names in any case, -32700 for a body that is not JSON, -32002 before
initialize, InvalidRequest after shutdown, and exit status 0 only after shutdown."""

from __future__ import annotations

import pytest

from tests.conformance.bare_client import BARE_CAPS, BareClient
from tests.conformance.tcp_server import TcpServer


@pytest.fixture(params=["stdio", "tcp"])
def connect(request, tmp_path):
    """A function returning a new client on a fresh server (stdio) or connection (TCP, token passed)."""
    servers: list[TcpServer] = []
    clients: list[BareClient] = []

    def make() -> tuple[BareClient, dict]:
        if request.param == "stdio":
            c, opts = BareClient.stdio(), {}
        else:
            if not servers:
                servers.append(TcpServer(tmp_path))
            c, opts = BareClient.tcp(servers[0].port), {"token": servers[0].token}
        clients.append(c)
        return c, opts
    make.kind = request.param
    yield make
    for c in clients:
        c.close()
    for s in servers:
        s.stop()


def test_request_before_initialize_is_server_not_initialized(connect):
    c, opts = connect()
    if connect.kind == "tcp":
        # over TCP nothing runs before an initialize with the token: refused and closed
        c.send({"id": 1, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": "file:///x"}, "position": {"line": 0, "character": 0}}})
        msg = c.read()
        assert msg["id"] == 1 and msg["error"]["code"] == -32600 and "token" in msg["error"]["message"]
        assert c.read() is None  # closed
        return
    c.notify("initialized", {})  # a notification before initialize: dropped, no answer
    c.send({"id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///x"}, "position": {"line": 0, "character": 0}}})
    msg = c.wait_response(1)
    assert msg["error"]["code"] == -32002, msg
    assert c.initialize(None, BARE_CAPS, opts)["result"]["serverInfo"]["name"] == "harn-ls"


def test_lowercase_content_length_header_is_read(connect):
    c, opts = connect()
    c.send({"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {},
                                                        "initializationOptions": opts}}, header="content-length")
    assert c.wait_response(1)["result"]["serverInfo"]["name"] == "harn-ls"
    c.send({"id": 2, "method": "shutdown"}, header="CONTENT-LENGTH")
    assert c.wait_response(2)["result"] is None


def test_body_that_is_not_json_is_a_parse_error_and_the_session_goes_on(connect):
    c, opts = connect()
    c.initialize(None, BARE_CAPS, opts)
    bad = b'{"jsonrpc": "2.0", "id": 5, "method": '
    c.send_raw(b"Content-Length: %d\r\n\r\n" % len(bad) + bad)
    msg = c.wait_response(None)
    assert msg["error"]["code"] == -32700 and msg["id"] is None
    c.send_raw(b"Content-Length: 2\r\n\r\n[]")  # JSON, but not a message object
    assert c.wait_response(None)["error"]["code"] == -32600
    assert c.request("shutdown")["result"] is None  # still serving


def test_request_after_shutdown_is_invalid_request_and_exit_is_0(connect):
    c, opts = connect()
    c.initialize(None, BARE_CAPS, opts)
    assert c.request("shutdown")["result"] is None
    after = c.request("workspace/symbol", {"query": "x"})
    assert after["error"]["code"] == -32600, after
    c.notify("exit")
    if connect.kind == "stdio":
        assert c.exit_status() == 0
    else:
        assert c.read() is None  # this connection's session ended and closed


def test_exit_without_shutdown_is_status_1(connect):
    if connect.kind == "tcp":
        pytest.skip("a TCP session has no process status; its ending is test_tcp_sessions's")
    c, opts = connect()
    c.initialize(None, BARE_CAPS, opts)
    c.notify("exit")
    assert c.exit_status() == 1


def test_second_initialize_is_refused(connect):
    c, opts = connect()
    c.initialize(None, BARE_CAPS, opts)
    again = c.request("initialize", {"processId": None, "capabilities": {}, "initializationOptions": opts})
    assert again["error"]["code"] == -32600


def test_unknown_method_is_method_not_found(connect):
    c, opts = connect()
    c.initialize(None, BARE_CAPS, opts)
    assert c.request("harn/noSuchThing", {})["error"]["code"] == -32601
