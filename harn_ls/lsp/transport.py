"""LSP's base protocol on a byte stream: the header part, the JSON body, and one session's read loop.

pygls's own loop (`pygls.io_.run_async`) reads only `Content-Length: N` spelled exactly so (a
lowercase `content-length` made the message vanish), drops a body that is not JSON without an
answer, and ends the process with `sys.exit` on `exit`, so the status was always 0. This loop is
ours and talks to pygls only through its public protocol API: `structure_message`,
`handle_message` and `set_writer` (with `include_headers=False`: the writer below frames each
body). The same loop serves stdio and each TCP connection (lsp/tcp.py).

* Header names are case-insensitive (RFC 7230, which LSP's header part follows); a header line that
  is not `name: value` (an HTTP request line, say), a header block without Content-Length or a
  length over the cap is a `FrameError`: over stdio answered `-32700` and skipped to the next blank
  line, over TCP the connection is closed.
* A body that is not JSON is answered `-32700` (ParseError, id null); JSON that is not a JSON-RPC
  2.0 message object, `-32600` (InvalidRequest); params the protocol cannot structure, the error
  pygls names (`-32602` InvalidParams) with the request's id.
* The lifecycle (initialize, shutdown, exit and the exit status) is the protocol's
  (server.HarnProtocol.handle_message); this loop ends when the protocol says the session ended
  (exit) or the stream does (the client left).

`FramedWriter` may also embed JSON encoded by orjson in a message (`embed`, `as_encoded`): pygls
encodes every message with json.dumps, which took ~7.5 ms for the 542 code lenses of a busy file
(the whole request's budget; they are encoded once per version of its spans) and tens of ms for a
1 MB document with non-ASCII text. The handler returns a placeholder string holding a random nonce
of this writer (data cannot spell it); the writer swaps the placeholder's JSON string for the
bytes. (This replaces a patch of pygls's private `_send_data`; only public API is used.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

log = logging.getLogger("harn_ls")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
SERVER_NOT_INITIALIZED = -32002

MAX_HEADER_LINES = 32
MAX_BODY_BYTES = 256 * 1024 * 1024  # a client's didOpen of a huge file; beyond this the stream is not LSP
# `token: value`; the token characters of RFC 7230 (no space, no separators)
_HEADER_RE = re.compile(rb"^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*\r?\n$")


class FrameError(Exception):
    """The byte stream is not LSP's base protocol here (the message says why, quoting a few bytes)."""


async def read_frame(reader: asyncio.StreamReader, max_body: int = MAX_BODY_BYTES) -> bytes | None:
    """The body of the next message; None when the stream ends (mid-message too).

    FrameError for a header block that is not LSP's; the block's remaining lines up to its blank
    line have been read, so the caller may go on with the next message."""
    length: int | None = None
    error: str | None = None
    lines = 0
    while True:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):  # a "line" longer than the reader's limit
            raise FrameError("a header line over 64 KB") from None
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if lines == 0 and error is None:
                continue  # a stray blank line between messages
            break
        lines += 1
        if error is not None:
            continue
        m = _HEADER_RE.match(line)
        if m is None or lines > MAX_HEADER_LINES:
            error = f"not an LSP header line: {line[:60]!r}" if m is None else "too many header lines"
            continue
        if m.group(1).lower() == b"content-length":
            value = m.group(2)
            if not value.isdigit() or len(value) > 15:  # (int() refuses over 4,300 digits: a ValueError)
                error = f"bad Content-Length {value[:20]!r}"
            elif int(value) > max_body:
                error = f"Content-Length {int(value)} is over the {max_body}-byte cap"
            else:
                length = int(value)
    if error is not None:
        raise FrameError(error)
    if length is None:
        raise FrameError("a header block without Content-Length")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None


def parse_body(body: bytes) -> Any:
    """The JSON value of a body (orjson; json for what orjson refuses but JSON allows, such as an
    escaped lone surrogate); ValueError when it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)  # ValueError (JSONDecodeError, UnicodeDecodeError) when not JSON


def error_body(msg_id: Any, code: int, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def as_encoded(protocol: Any, value: Any, encoded: bytes | None = None) -> Any:
    """A big JSON-ready result to send as orjson's bytes (`encoded`, or `value` encoded now) rather
    than through json.dumps: a placeholder the session's FramedWriter swaps for them, or `value`
    itself under any other writer."""
    embed = getattr(getattr(protocol, "writer", None), "embed", None)
    if embed is None:
        return value
    try:
        return embed(encoded if encoded is not None else orjson.dumps(value))
    except TypeError:  # orjson refuses it (a lone surrogate): json.dumps writes it as it always did
        return value


class FramedWriter:
    """The writer pygls is given (`set_writer(..., include_headers=False)`): each body it writes goes
    out with its Content-Length (bytes of the UTF-8 body), through `send` (bytes -> None)."""

    def __init__(self, send: Callable[[bytes], None], close: Callable[[], Any] | None = None,
                 keep_embedded: int = 64) -> None:
        self._send = send
        self._close = close
        self._lock = threading.Lock()  # pygls writes from the loop; a log record may come from a thread
        self._nonce = secrets.token_hex(16)
        self._embedded: OrderedDict[str, bytes] = OrderedDict()
        self._keep = keep_embedded
        self._serial = 0
        self.closed = False

    def embed(self, json_bytes: bytes) -> str:
        """A placeholder for a result: written as a JSON string, swapped for `json_bytes` on the way
        out. Kept for the next few messages only (a cancelled request's is dropped with the oldest)."""
        self._serial += 1
        key = f"\x00harn-ls-json:{self._nonce}:{self._serial}"
        self._embedded[key] = json_bytes
        while len(self._embedded) > self._keep:
            self._embedded.popitem(last=False)
        return key

    def _swap(self, body: bytes) -> bytes:
        if not self._embedded or self._nonce.encode() not in body:
            return body
        for key in list(self._embedded):
            spelled = json.dumps(key).encode()  # as json.dumps wrote the placeholder string
            if spelled in body:
                body = body.replace(spelled, self._embedded.pop(key), 1)
        return body

    def write(self, body: bytes | str) -> None:
        if isinstance(body, str):
            body = body.encode("utf-8", "surrogatepass")
        body = self._swap(body)
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._lock:
            if self.closed:
                return
            self._send(frame)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self._close is not None:
            with contextlib.suppress(OSError):
                self._close()


async def serve_stream(protocol: Any, reader: asyncio.StreamReader, writer: FramedWriter, *,
                       admit: Callable[[dict], str | None] | None = None, first_message_within: float | None = None,
                       close_on_frame_error: bool = False) -> str:
    """Read messages into `protocol` until the session ends; returns why ("exit", "eof", "refused",
    "frame error"). `admit(first_message)` decides whether the connection may start (None) or is
    refused (the reason, answered to a request and then the connection is closed); until it has
    admitted one, nothing reaches the protocol. `first_message_within` seconds bound the wait for it."""
    ended: asyncio.Event = protocol.ended
    admitted = admit is None
    ended_wait = asyncio.ensure_future(ended.wait())
    try:
        while not ended.is_set():
            read = asyncio.ensure_future(read_frame(reader, MAX_BODY_BYTES if admitted else 1024 * 1024))
            timeout = None if admitted else first_message_within
            done, _ = await asyncio.wait({read, ended_wait}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if read not in done:
                read.cancel()
                return "exit" if ended.is_set() else "refused"
            try:
                body = read.result()
            except FrameError as exc:
                log.warning("harn-ls: %s", exc)
                if close_on_frame_error or not admitted:
                    return "frame error"
                writer.write(error_body(None, PARSE_ERROR, f"Parse error: {exc}"))
                continue
            if body is None:
                return "eof"
            try:
                data = parse_body(body)
            except ValueError as exc:
                if not admitted:
                    return "refused"
                writer.write(error_body(None, PARSE_ERROR, f"Parse error: the body is not JSON ({exc})"))
                continue
            if not admitted and admit is not None:  # (admitted starts True when there is no admit)
                reason = admit(data)
                if reason is not None:
                    if isinstance(data, dict) and "id" in data and "method" in data:
                        writer.write(error_body(data["id"], INVALID_REQUEST, reason))
                    return "refused"
                admitted = True
            dispatch(protocol, writer, data)
        return "exit"
    finally:
        ended_wait.cancel()


def dispatch(protocol: Any, writer: FramedWriter, data: Any) -> None:
    """One decoded message to the protocol, or the JSON-RPC error it earns."""
    msg_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or not (
            isinstance(data.get("method"), str) or "id" in data):
        writer.write(error_body(msg_id if isinstance(msg_id, (int, str)) else None, INVALID_REQUEST,
                                "Invalid request: not a JSON-RPC 2.0 message object"))
        return
    try:
        message = protocol.structure_message(data)
    except Exception as exc:  # pygls raises JsonRpcInvalidParams / JsonRpcInternalError (with .code)
        code = getattr(exc, "code", None)
        log.warning("harn-ls: cannot read %s: %s", data.get("method", "a response"), exc)
        if "method" in data and "id" in data:
            writer.write(error_body(data["id"], code if isinstance(code, int) else INVALID_REQUEST,
                                    f"{getattr(exc, 'message', None) or exc}: params of {data['method']!r} do not fit"))
        return
    try:
        protocol.handle_message(message)
    except Exception:
        log.exception("harn-ls: handling %s failed", data.get("method", "a response"))


def feed_stdin(fd: int, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """Standard input into an asyncio StreamReader, read by a daemon thread (a blocking read that a
    closing process need not wait for: stdin may be a pipe, a file or a terminal)."""

    def run() -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            try:
                if chunk:
                    loop.call_soon_threadsafe(reader.feed_data, chunk)
                else:
                    loop.call_soon_threadsafe(reader.feed_eof)
            except RuntimeError:  # the loop is closed: the server is gone
                return
            if not chunk:
                return

    threading.Thread(target=run, name="harn-ls stdin", daemon=True).start()
