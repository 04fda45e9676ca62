"""lsp/transport.py: LSP's header part read as written, and pre-encoded JSON embedded exactly."""

from __future__ import annotations

import asyncio
import json

import orjson
import pytest

from harn_ls.lsp.transport import FramedWriter, FrameError, as_encoded, parse_body, read_frame


def frames(data: bytes, max_body: int = 1 << 20) -> list:
    async def run():
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        out = []
        while True:
            try:
                body = await read_frame(r, max_body)
            except FrameError as exc:
                out.append(("error", str(exc)))
                continue
            if body is None:
                return out
            out.append(body)
    return asyncio.run(run())


def test_header_names_in_any_case_and_extra_headers():
    data = (b"content-length: 2\r\n\r\n{}"
            b"CONTENT-LENGTH:3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1]"
            b"Content-Length: 4\n\n\"ab\"")
    assert frames(data) == [b"{}", b"[1]", b'"ab"']


def test_not_lsp_headers_are_frame_errors_and_the_next_message_is_read():
    data = (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" b"Content-Type: x\r\n\r\n" b"Content-Length: -1\r\n\r\n"
            b"Content-Length: 99999999999\r\n\r\n" b"Content-Length: 2\r\n\r\n{}")
    got = frames(data, max_body=1000)
    assert [g[0] if isinstance(g, tuple) else g for g in got] == ["error", "error", "error", "error", b"{}"]
    assert "GET / HTTP/1.1" in got[0][1] and "without Content-Length" in got[1][1] and "cap" in got[3][1]


def test_a_stream_that_ends_mid_message_is_the_end():
    assert frames(b"Content-Length: 10\r\n\r\n{}") == []


def test_parse_body_takes_what_json_takes():
    assert parse_body(b'{"a": "\\ud800"}') == {"a": "\ud800"}  # orjson refuses a lone surrogate; json reads it
    with pytest.raises(ValueError):
        parse_body(b'{"a": ')


def test_embedded_json_is_swapped_in_exactly_and_once():
    sent = []
    w = FramedWriter(sent.append)
    lenses = [{"range": {"start": {"line": i, "character": 0}}, "data": [1, i, i]} for i in range(500)]
    placeholder = w.embed(orjson.dumps(lenses))
    w.write(json.dumps({"jsonrpc": "2.0", "id": 3, "result": placeholder}).encode())
    head, body = sent[0].split(b"\r\n\r\n", 1)
    assert head == b"Content-Length: %d" % len(body)
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 3, "result": lenses}
    # the same text written again (data that happens to hold it) is not swapped a second time
    w.write(json.dumps({"text": placeholder}).encode())
    assert json.loads(sent[1].split(b"\r\n\r\n", 1)[1]) == {"text": placeholder}


def test_data_cannot_spell_another_writers_placeholder():
    a, b = FramedWriter(lambda _f: None), FramedWriter(lambda _f: None)
    assert a.embed(b"1").split(":")[1] != b.embed(b"1").split(":")[1]


def test_as_encoded_falls_back_to_the_value():
    class Plain:
        writer = None
    assert as_encoded(Plain(), {"text": "x"}) == {"text": "x"}
    sent = []

    class Framed:
        writer = FramedWriter(sent.append)
    value = {"text": "lone \ud800 surrogate"}
    assert as_encoded(Framed(), value) is value  # orjson refuses it: json.dumps writes it as before
    ph = as_encoded(Framed(), {"text": "é"})
    Framed.writer.write(json.dumps({"result": ph}).encode())
    assert json.loads(sent[-1].split(b"\r\n\r\n", 1)[1]) == {"result": {"text": "é"}}


def test_a_content_length_of_thousands_of_digits_is_a_frame_error_not_a_crash():
    """Sent before any token over TCP: 5,000 digits pass isdigit(), and int() refuses more than 4,300
    (ValueError), which no session handler catches; it is a bad header like any other."""
    got = frames(b"Content-Length: " + b"0" * 5000 + b"\r\n\r\n" + b"Content-Length: 2\r\n\r\n{}")
    assert got[0][0] == "error" and "bad Content-Length" in got[0][1] and got[1] == b"{}"
