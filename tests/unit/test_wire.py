"""harn_ls/lsp/wire.py: messages encoded by orjson mean exactly what pygls's json.dumps wrote,
the header counts the bytes sent, and what orjson refuses is still sent as before."""

from __future__ import annotations

import json

from lsprotocol import types as T
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage

from harn_ls.lsp.server import response_converter
from harn_ls.lsp.wire import Encoded, OrjsonWire, encode_body
from tests.helpers.pygls_json import pygls_default as _default


def _messages():
    lens = T.CodeLens(range=T.Range(start=T.Position(line=2, character=1), end=T.Position(line=2, character=3)),
                      command=T.Command(title="3 facts · é", command="harnState.open", arguments=["harn-state:/x.md"]),
                      data={"t": "facts", "start": 3})
    hover = T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value="**x** \u202e ünïcødé \u2028 😀"))
    results = [
        None, [], {"items": [], "nextPage": None}, {1: "int key", None: "none key", 2.5: "float key"},
        [{"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 0}},
          "data": {"t": "facts", "uri": "file:///p/s%C3%A9.py", "start": i + 1, "end": i + 2}} for i in range(50)],
        [lens, (1, 2, "tuple")], hover, T.TextDocumentContentResult(text="# doc\n\x00\x1b[2J\x7f\x85"),
        {"big": 2 ** 70}, {"surrogate": "file-\udcff.py"}, {"nan": 1e400 * 0},
    ]
    out = [JsonRPCResponseMessage(id=i, result=r, jsonrpc="2.0") for i, r in enumerate(results)]
    out.append(JsonRPCNotification(method="window/logMessage", jsonrpc="2.0",
                                   params=T.LogMessageParams(type=T.MessageType.Warning, message="née")))
    return out


def test_orjson_body_means_what_json_dumps_wrote():
    default = _default(response_converter())
    for message in _messages():
        ours = encode_body(message, default)
        theirs = json.dumps(message, default=default)
        # NaN: json.dumps writes the non-JSON token NaN, orjson null; compare what a client parses
        if "NaN" in theirs:
            assert json.loads(ours)["result"] == {"nan": None}
            continue
        assert json.loads(ours.decode("utf-8")) == json.loads(theirs), message


def test_what_orjson_refuses_is_sent_as_json_dumps_wrote_it():
    default = _default(response_converter())
    for result in ({"big": 2 ** 70}, {"surrogate": "file-\udcff.py"}):
        message = JsonRPCResponseMessage(id=1, result=result, jsonrpc="2.0")
        assert encode_body(message, default) == json.dumps(message, default=default).encode("utf-8")


def test_unencodable_object_still_raises():
    class Opaque:
        __slots__ = ()

    def default(obj):
        raise TypeError(f"cannot encode {type(obj).__name__}")

    try:
        encode_body({"x": Opaque()}, default)
    except TypeError as exc:
        assert "Opaque" in str(exc)
    else:
        raise AssertionError("an object neither encoder takes was encoded")


class _Writer:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.chunks.append(data)


class _Protocol(OrjsonWire):
    CONTENT_TYPE = "application/vscode-jsonrpc"
    CHARSET = "utf-8"

    def __init__(self, include_headers: bool = True) -> None:
        self.writer = _Writer()
        self._include_headers = include_headers
        self.errors: list[Exception] = []
        self._server = self

    def _serialize_message(self, obj):
        return _default(response_converter())(obj)

    def _report_server_error(self, error, source) -> None:
        self.errors.append(error)


def _split(frame: bytes) -> tuple[dict, bytes]:
    head, _, body = frame.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode("ascii").split("\r\n"))
    return headers, body


def test_content_length_counts_bytes_of_a_non_ascii_body():
    proto = _Protocol()
    message = JsonRPCResponseMessage(id=3, result={"title": "ünïcødé 😀" * 10}, jsonrpc="2.0")
    proto._send_data(message)
    (frame,) = proto.writer.chunks
    headers, body = _split(frame)
    assert int(headers["Content-Length"]) == len(body)
    assert headers["Content-Type"] == "application/vscode-jsonrpc; charset=utf-8"
    assert json.loads(body.decode("utf-8")) == {"id": 3, "jsonrpc": "2.0", "result": {"title": "ünïcødé 😀" * 10}}


def test_without_headers_nothing_empty_and_errors_reported():
    proto = _Protocol(include_headers=False)
    proto._send_data(None)
    proto._send_data({})
    assert proto.writer.chunks == []
    proto._send_data({"jsonrpc": "2.0", "method": "x", "params": [1]})
    assert proto.writer.chunks == [b'{"jsonrpc":"2.0","method":"x","params":[1]}']

    class Opaque:
        __slots__ = ()

    proto._send_data({"x": Opaque()})
    assert len(proto.errors) == 1 and len(proto.writer.chunks) == 1


def test_pre_encoded_result_is_written_as_is_and_decoded_by_the_fallback():
    import orjson

    default = _default(response_converter())
    lenses = [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "data": [7, 2, 3]}]
    encoded = Encoded(orjson.dumps(lenses))
    message = JsonRPCResponseMessage(id=4, result=encoded, jsonrpc="2.0")
    assert json.loads(encode_body(message, default)) == {"id": 4, "jsonrpc": "2.0", "result": lenses}
    # the json.dumps fallback (something else in the message orjson refuses) decodes it
    both = {"lenses": encoded, "big": 2 ** 70}
    assert json.loads(encode_body(both, default)) == {"lenses": lenses, "big": 2 ** 70}


class _Gone(BaseException):
    """Raised by the writer past a few writes: ends a send loop (not caught by `except Exception`)."""


def test_a_failing_transport_is_reported_once_not_in_a_loop():
    # A client that left: every write fails. The failure is logged (the client log handler sends
    # the record as window/logMessage) and reported (window/showMessage); both are writes that fail
    # too. They must not report again: before the guard each failure started two more.
    import logging

    from harn_ls.lsp.server import _log_to_client, create_server

    server = create_server()
    writes = []

    class ClosedWriter:
        def write(self, data):
            writes.append(data)
            if len(writes) > 20:
                raise _Gone
            raise RuntimeError("the transport is closed")

    server.protocol.writer = ClosedWriter()
    root = logging.getLogger("harn_ls")  # (where _log_to_client puts its handler)
    before = list(root.handlers)
    _log_to_client(server)
    try:
        server.protocol.notify("harn/status", {"state": "ready"})
        assert 1 <= len(writes) <= 3  # the message, then at most the log record and the report, once
        writes.clear()
        server.protocol.notify("harn/status", {"state": "ready"})  # the next send tries again (no stuck flag)
        assert 1 <= len(writes) <= 3
    finally:
        root.handlers[:] = before
