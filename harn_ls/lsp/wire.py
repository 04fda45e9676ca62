"""Outgoing JSON-RPC messages encoded by orjson instead of the standard library's `json.dumps`.

pygls writes every message with `json.dumps(message, default=...)`: about 4 ms of CPU for the
542 code lenses of a busy file (110 KB), most of the request's budget, against 0.2 ms for
orjson. The objects json cannot encode (lsprotocol's attrs classes, anything else) still go to
pygls's own `default`, so the JSON means the same; only its spelling changes (no spaces, non-ASCII
text as UTF-8 rather than `\\uXXXX`). A message orjson refuses (a lone surrogate from a file name
decoded with surrogateescape, an integer over 64 bits) falls back to `json.dumps`, which writes
it exactly as before. A result may be pre-encoded JSON (`Encoded`: the code lenses of a busy file,
encoded once per version of its spans), written as is.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any, Callable

import orjson
from pygls.exceptions import JsonRpcInternalError

log = logging.getLogger(__name__)

# Dataclasses and datetimes go to `default` as they did under json.dumps (pygls sends their
# __dict__ / fails), and non-string keys are written as json.dumps writes them (as strings).
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


# orjson >= 3.10 embeds pre-encoded JSON (`orjson.Fragment`); older ones get the decoded value.
_FRAGMENT = getattr(orjson, "Fragment", None)


class Encoded:
    """A value already encoded as JSON (bytes from `orjson.dumps`), to be written into a message as is."""

    __slots__ = ("json", "_fragment")

    def __init__(self, json_bytes: bytes) -> None:
        self.json = json_bytes
        self._fragment = _FRAGMENT(json_bytes) if _FRAGMENT is not None else None

    def for_orjson(self) -> Any:
        return self._fragment if self._fragment is not None else orjson.loads(self.json)


def encode_body(data: Any, default: Callable[[Any], Any]) -> bytes:
    """The UTF-8 JSON of one message; `default` turns what JSON has no type for into dicts."""
    def for_orjson(obj: Any) -> Any:
        return obj.for_orjson() if isinstance(obj, Encoded) else default(obj)

    def for_json(obj: Any) -> Any:
        return orjson.loads(obj.json) if isinstance(obj, Encoded) else default(obj)

    try:
        return orjson.dumps(data, default=for_orjson, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: lone surrogate, int over 64 bits, `default` gave up
        return json.dumps(data, default=for_json).encode("utf-8")


class OrjsonWire:
    """Mixed in before pygls's protocol class: replaces its `_send_data` (same header, same writer)."""

    def _send_data(self, data: Any) -> None:
        if not data:
            return
        writer = getattr(self, "writer", None)
        if writer is None:
            log.error("Unable to send data, no available transport!")
            return
        try:
            body = encode_body(data, self._serialize_message)
            if self._include_headers:
                # Content-Length counts bytes: the body is UTF-8, not ASCII-escaped.
                head = (f"Content-Length: {len(body)}\r\n"
                        f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n").encode("ascii")
                body = head + body
            written = writer.write(body)
            if inspect.isawaitable(written):
                asyncio.ensure_future(written)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:  # as pygls does: report it to the client and keep serving
            # The report is itself a message (window/showMessage, and the log record goes to the
            # client as window/logMessage): with the transport gone it fails the same way, and each
            # failure reported two more - a loop that held the CPU of a server whose client had left.
            # A failure while one is being reported is dropped.
            if getattr(self, "_reporting_send_error", False):
                return
            self._reporting_send_error = True
            try:
                log.exception("Error sending data")
                self._server._report_server_error(error, JsonRpcInternalError)
            finally:
                self._reporting_send_error = False

