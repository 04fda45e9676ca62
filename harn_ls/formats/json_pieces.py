"""A JSON document read piece by piece: the members of an object and the elements of an array as
byte ranges, each parsed by orjson on its own when wanted, so that a 14 MB run record is never a
whole parsed tree (that tree, the bytes and orjson's working copy held at once were ~55 MB).

Exact or nothing: the scan only finds where values end (strings and brackets); every piece is
still parsed by orjson before it counts, and anything the scan does not expect (a byte outside
the JSON grammar's separators and whitespace, nesting deeper than MAX_DEPTH, a truncated value)
raises `NotPlain`, on which a caller parses the document whole as before. So a document read in
pieces gives the very values a whole parse gives, and an invalid one gives the whole parse's
problems. Duplicate keys keep the last value at the first key's place, as orjson does."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

# Far below orjson's own nesting limit (1024), so a piece parsed alone is never accepted where
# the whole document would have been refused for its depth.
MAX_DEPTH = 500
# Where containers end is kept for the outer levels only: the document, its members, their
# members and elements (the events of a run record's transcript are at the fourth level).
KEPT_DEPTH = 4

_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = re.compile(rb"[^,\]}: \t\n\r\[{\"]+")
_OPEN, _QUOTE = frozenset(b"[{"), ord('"')


class NotPlain(Exception):
    """The bytes are not a document this reader handles exactly; parse them whole instead."""


def skip_ws(raw: bytes, pos: int) -> int:
    return _WS.match(raw, pos).end()


_SCAN_CHUNK = 1 << 20  # bytes classified at a time (the per-byte arrays of a chunk are transient)
MAX_SHARE = 8  # at most one quote or bracket in this many bytes (a 14 MB run record: one in 22)


def _outside_brackets(raw: bytes):
    """Positions of the brackets outside strings, in order (an int32 array); NotPlain when a
    string never closes. A quote is a string's edge unless an odd run of backslashes comes right
    before it; inside valid JSON the edges pair up, so a bracket is outside every string when an
    even number of edges come before it. Vectorised a 1 MB slice at a time, keeping only the
    brackets found outside strings: a pattern walking every string byte took ~0.25 s at 14 MB."""
    # start-up: numpy (~0.15 s) loads only when a big run record is read in pieces
    import numpy as np

    kinds = np.zeros(256, dtype=np.uint8)
    kinds[ord('"')] = 1
    kinds[list(b"[]{}")] = 3
    data = np.frombuffer(raw, dtype=np.uint8)
    # Positions are 4 bytes each: a document made mostly of quotes or brackets would cost several
    # times its size here, so past one such byte in MAX_SHARE the whole parse (and its checks) takes it.
    budget = len(data) // MAX_SHARE + 64
    edges_so_far = 0
    outside = []
    for a in range(0, len(data), _SCAN_CHUNK):
        codes = kinds[data[a:a + _SCAN_CHUNK]]
        quotes = np.flatnonzero(codes == 1) + a
        brackets = np.flatnonzero(codes == 3) + a
        del codes
        budget -= len(quotes) + len(brackets)
        if budget < 0:
            raise NotPlain("too many quotes and brackets to scan")
        maybe = quotes[quotes > 0]
        maybe = maybe[data[maybe - 1] == ord("\\")].tolist()  # (the few that may be escaped)
        escaped = [q for q in maybe if _odd_slashes(raw, q)]
        edges = np.delete(quotes, np.searchsorted(quotes, escaped)) if escaped else quotes
        before = np.searchsorted(edges, brackets) + edges_so_far  # edges before each bracket
        outside.append(brackets[before % 2 == 0].astype(np.int32))
        edges_so_far += len(edges)
    if edges_so_far % 2:
        raise NotPlain("unterminated string")
    return np.concatenate(outside) if outside else np.zeros(0, dtype=np.int32)


def _odd_slashes(raw: bytes, quote: int) -> bool:
    """True when an odd run of backslashes ends right before `quote` (the quote is escaped)."""
    i = quote - 1
    while i >= 0 and raw[i] == 0x5C:
        i -= 1
    return (quote - 1 - i) % 2 == 1


class Scan:
    """One pass over a document's strings and brackets: where each container that opens at a
    position closes (`ends`). Only scans: orjson checks each piece later."""

    __slots__ = ("raw", "ends")

    def __init__(self, raw: bytes) -> None:
        # start-up: numpy is loaded already (_outside_brackets)
        import numpy as np

        self.raw = raw
        at = _outside_brackets(raw)
        opens = np.isin(np.frombuffer(raw, dtype=np.uint8)[at], (ord("["), ord("{")))
        depth = np.cumsum(np.where(opens, 1, -1), dtype=np.int64)  # after each bracket
        if len(depth) and (depth.min() < 0 or depth.max() > MAX_DEPTH):
            raise NotPlain("unbalanced or nested too deeply")
        if len(depth) and depth[-1]:
            raise NotPlain("unterminated value")
        # A container's level: the depth inside it. Balanced, each level reads open, close, open,
        # close... in position order: the pairs of the levels the readers walk (a few thousand).
        level = np.where(opens, depth, depth + 1)
        kept = level <= KEPT_DEPTH
        pairs = at[kept][np.argsort(level[kept], kind="stable")].astype(np.int64).reshape(-1, 2)
        self.ends = dict(zip(pairs[:, 0].tolist(), (pairs[:, 1] + 1).tolist()))

    def value_end(self, pos: int) -> int:
        """Where the JSON value starting at `pos` ends."""
        raw = self.raw
        if pos >= len(raw):
            raise NotPlain("value expected")
        first = raw[pos]
        if first in _OPEN:
            end = self.ends.get(pos)
            if end is None:  # (a bracket inside a string, or a string the scan saw start elsewhere)
                raise NotPlain("value expected")
            return end
        m = (_STRING if first == _QUOTE else _SCALAR).match(raw, pos)
        if m is None:
            raise NotPlain("value expected")
        return m.end()


def parse(raw: bytes, start: int, end: int) -> Any:
    """orjson's value of one piece; NotPlain when orjson refuses it."""
    try:
        return orjson.loads(memoryview(raw)[start:end])
    except (orjson.JSONDecodeError, RecursionError) as exc:
        raise NotPlain(str(exc)) from None


def _closed(raw: bytes, pos: int, end: int, close: bytes) -> bool:
    """True when the byte at `pos` closes the value that value_end said ends at `end`."""
    if raw[pos:pos + 1] != close:
        return False
    if pos + 1 != end:
        raise NotPlain("brackets do not match")
    return True


def members(scan: Scan, pos: int, end: int) -> dict[str, tuple[int, int]]:
    """key -> (start, end) of each member of the object at `pos` that ends at `end` (the last of
    equal keys, at the first one's place), checked as far as the separators go."""
    raw = scan.raw
    if raw[pos:pos + 1] != b"{":
        raise NotPlain("object expected")
    out: dict[str, tuple[int, int]] = {}
    pos = skip_ws(raw, pos + 1)
    if _closed(raw, pos, end, b"}"):
        return out
    while True:
        if raw[pos:pos + 1] != b'"':
            raise NotPlain("key expected")
        kend = scan.value_end(pos)
        key = parse(raw, pos, kend)
        pos = skip_ws(raw, kend)
        if raw[pos:pos + 1] != b":":
            raise NotPlain("':' expected")
        start = skip_ws(raw, pos + 1)
        stop = scan.value_end(start)
        out[key] = (start, stop)
        pos = skip_ws(raw, stop)
        if _closed(raw, pos, end, b"}"):
            return out
        sep = raw[pos:pos + 1]
        if sep != b",":
            raise NotPlain("',' or '}' expected")
        pos = skip_ws(raw, pos + 1)


def elements(scan: Scan, pos: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each element of the array at `pos` that ends at `end`."""
    raw = scan.raw
    if raw[pos:pos + 1] != b"[":
        raise NotPlain("array expected")
    out: list[tuple[int, int]] = []
    pos = skip_ws(raw, pos + 1)
    if _closed(raw, pos, end, b"]"):
        return out
    while True:
        stop = scan.value_end(pos)
        out.append((pos, stop))
        pos = skip_ws(raw, stop)
        if _closed(raw, pos, end, b"]"):
            return out
        sep = raw[pos:pos + 1]
        if sep != b",":
            raise NotPlain("',' or ']' expected")
        pos = skip_ws(raw, pos + 1)


def document_members(scan: Scan) -> dict[str, tuple[int, int]]:
    """The members of a document that is one object with nothing but whitespace around it."""
    raw = scan.raw
    start = skip_ws(raw, 0)
    end = scan.value_end(start)
    if skip_ws(raw, end) != len(raw):
        raise NotPlain("trailing bytes")
    return members(scan, start, end)


class LazyArray(Sequence):
    """The elements of a JSON array of a document, parsed one at a time when asked for (never all
    held at once). Every element was parsed once already (`checked_array`): none can fail now."""

    __slots__ = ("_raw", "_spans")

    def __init__(self, raw: bytes, spans: list[tuple[int, int]]) -> None:
        self._raw = raw
        self._spans = spans

    def __len__(self) -> int:
        return len(self._spans)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [parse(self._raw, a, b) for a, b in self._spans[i]]
        a, b = self._spans[i]
        return parse(self._raw, a, b)

    def __iter__(self) -> Iterator[Any]:
        raw = self._raw
        for a, b in self._spans:
            yield parse(raw, a, b)

    def items(self, indexes: list[int]) -> Iterator[Any]:
        """The elements at `indexes`, parsed one at a time."""
        raw, spans = self._raw, self._spans
        for i in indexes:
            a, b = spans[i]
            yield parse(raw, a, b)


def checked_array(scan: Scan, start: int, end: int) -> LazyArray:
    """The array at `start` as a LazyArray, after parsing (and dropping) each element once: the
    array is then known to be exactly what a whole parse would give."""
    raw = scan.raw
    spans = elements(scan, start, end)
    for a, b in spans:
        parse(raw, a, b)
    return LazyArray(raw, spans)
