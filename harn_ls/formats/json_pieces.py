"""A JSON document read piece by piece: the members of an object and the elements of an array as
byte ranges of its file, each read back (pread) and parsed by orjson on its own when wanted, so
that a 14 MB run record is never a whole parsed tree, nor even whole in memory (the tree, the
bytes and orjson's working copy held at once were ~55 MB; the bytes alone 14 MB).

Exact or nothing: the scan only finds where values end (strings and brackets); every piece is
still parsed by orjson before it counts, and anything the scan does not expect (a byte outside
the JSON grammar's separators and whitespace, nesting deeper than MAX_DEPTH, a truncated value)
raises `NotPlain`, on which a caller parses the document whole as before. So a document read in
pieces gives the very values a whole parse gives, and an invalid one gives the whole parse's
problems. Duplicate keys keep the last value at the first key's place, as orjson does.

The file is read through one fd (`PieceFile`), a window at a time, never mapped (a file cut
under a mapping kills the process). A file changed after the scan raises `Changed` when a piece
is read back: its fstat (size, mtime, ctime) no longer matches, a read comes back short, or a
piece's bytes no longer have the CRC-32 they had when it was parsed."""

from __future__ import annotations

import os
import re
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, overload

import orjson

from harn_ls.util.json_types import JsonValue
from harn_ls.util.safe_read import density_problem

if TYPE_CHECKING:  # numpy loads only when a big run record is read in pieces (see _Scanner)
    import numpy as np

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

SCAN_WINDOW = 256 * 1024  # bytes read and classified at a time by the scan (its arrays are per window)
BLOCK = 64 * 1024  # bytes read at a time around the separators the walk looks at
READ_CHUNK = 256 * 1024  # neighbouring pieces are read back together up to this many bytes
MAX_SHARE = 8  # at most one quote or bracket in this many bytes (a 14 MB run record: one in 22)


class NotPlain(Exception):
    """The bytes are not a document this reader handles exactly; parse them whole instead."""


class Changed(NotPlain):
    """The file changed since it was scanned: read it again (what was read is not its content)."""


class PieceFile:
    """A regular file read at given offsets through one fd (owned: closed with this object), each
    read checked against the fstat taken when it was opened."""

    __slots__ = ("_fd", "size", "_stamp")
    _os_close = staticmethod(os.close)  # (held here: __del__ may run when the os module is torn down)

    def __init__(self, fd: int, st: os.stat_result) -> None:
        self._fd = fd
        self.size = st.st_size
        self._stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def read(self, start: int, end: int) -> bytes:
        """The bytes [start, end) as they were when the file was opened, or `Changed`."""
        if self._fd < 0:
            raise Changed("the file was closed")
        want = end - start
        data = os.pread(self._fd, want, start) if want > 0 else b""
        # (after the read: a write during it has moved mtime by the time this fstat runs)
        st = os.fstat(self._fd)
        if len(data) != max(want, 0) or (st.st_size, st.st_mtime_ns, st.st_ctime_ns) != self._stamp:
            raise Changed("the file changed while it was read")
        return data

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            self._os_close(fd)

    def __del__(self) -> None:
        self.close()


def _escaped_quotes(np: ModuleType, view: np.ndarray, maybe: np.ndarray, carried: int) -> list[int]:
    """Those of the quotes `maybe` (each right after a backslash) that an odd run of backslashes
    ends right before: escaped ones. `carried`: the backslashes that ended the windows before
    `view`, for a run that reaches back. Counted with arrays, not byte by byte: a hostile record of
    long backslash runs cost a Python step per backslash (a 15.6 MB one: 1.47 s of CPU read
    that way, 0.88 s now)."""
    slashes = np.flatnonzero(view == 0x5C)
    quotes = np.asarray(maybe, dtype=np.int64)
    last = np.searchsorted(slashes, quotes) - 1  # the backslash right before each quote
    runs = slashes - np.arange(len(slashes))  # one value along each run of adjacent backslashes
    first = np.searchsorted(runs, runs[last])  # each run's first backslash
    length = last - first + 1 + np.where(slashes[first] == 0, carried, 0)
    escaped: list[int] = quotes[length % 2 == 1].tolist()
    return escaped


def _trailing_slashes(data: bytes) -> int:
    # (rstrip's copy of a window is cheap; a loop in Python over a window of backslashes is not)
    return len(data) - len(data.rstrip(b"\\"))


class _Scanner:
    """The brackets outside strings of one file, window by window, keeping only those of the
    levels the walk reads. A quote is a string's edge unless an odd run of backslashes comes
    right before it; inside valid JSON the edges pair up, so a bracket is outside every string
    when an even number of edges come before it. What one window leaves to the next: the count
    of edges (its parity), the depth, the backslashes it ended with; and the `{` / `[` counts of
    the density rule (safe_read.density_problem), met by the whole file as a whole read meets it."""

    def __init__(self, size: int) -> None:
        # start-up: numpy (~0.15 s) loads only when a big run record is read in pieces
        import numpy as np

        self.np: ModuleType = np
        self.kinds = np.zeros(256, dtype=np.uint8)
        self.kinds[ord('"')] = 1
        self.kinds[list(b"[]{}")] = 3
        # A document made mostly of quotes or brackets costs several times its size in the per-window
        # arrays: past one such byte in MAX_SHARE the whole parse (and its checks) takes it.
        self.budget = size // MAX_SHARE + 64
        self.edges = self.depth = self.slashes = self.dicts = self.lists = 0
        self.kept_at: list[np.ndarray] = []
        self.kept_level: list[np.ndarray] = []

    def window(self, data: bytes, base: int) -> None:
        np = self.np
        view = np.frombuffer(data, dtype=np.uint8)
        codes = self.kinds[view]
        quotes = np.flatnonzero(codes == 1)
        brackets = np.flatnonzero(codes == 3)
        del codes
        kinds = view[brackets]  # (every `{` and `[` byte, inside strings too: the density rule's counts)
        self.dicts += int(np.count_nonzero(kinds == ord("{")))
        self.lists += int(np.count_nonzero(kinds == ord("[")))
        del kinds
        self.budget -= len(quotes) + len(brackets)
        if self.budget < 0:
            raise NotPlain("too many quotes and brackets to scan")
        inner = quotes[quotes > 0]
        maybe = inner[view[inner - 1] == 0x5C]  # (the few that may be escaped)
        escaped = _escaped_quotes(np, view, maybe, self.slashes) if len(maybe) else []
        if len(quotes) and quotes[0] == 0 and self.slashes % 2:  # (escaped by the window before)
            escaped.insert(0, 0)
        edges = np.delete(quotes, np.searchsorted(quotes, escaped)) if escaped else quotes
        before = np.searchsorted(edges, brackets) + self.edges  # edges before each bracket
        outside = brackets[before % 2 == 0]
        self.edges += len(edges)
        trailing = _trailing_slashes(data)
        self.slashes = self.slashes + trailing if trailing == len(data) else trailing
        if not len(outside):
            return
        opens = (view[outside] == ord("[")) | (view[outside] == ord("{"))
        depth = np.cumsum(np.where(opens, 1, -1), dtype=np.int32) + self.depth  # after each bracket
        if depth.min() < 0 or depth.max() > MAX_DEPTH:
            raise NotPlain("unbalanced or nested too deeply")
        self.depth = int(depth[-1])
        level = np.where(opens, depth, depth + 1)  # a container's level: the depth inside it
        kept = level <= KEPT_DEPTH
        self.kept_at.append(outside[kept] + base)
        self.kept_level.append(level[kept].astype(np.int16))

    def ends(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) of the containers of the kept levels, by start. Balanced, each level
        reads open, close, open, close... in position order (a few thousand pairs)."""
        np = self.np
        if self.edges % 2:
            raise NotPlain("unterminated string")
        if self.depth:
            raise NotPlain("unterminated value")
        if density_problem(self.dicts, self.lists, size) is not None:
            raise NotPlain("too many containers for the file's size")
        if not self.kept_at:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        at, level = np.concatenate(self.kept_at), np.concatenate(self.kept_level)
        pairs = at[np.argsort(level, kind="stable")].astype(np.int64).reshape(-1, 2)
        order = np.argsort(pairs[:, 0])
        return pairs[order, 0], pairs[order, 1] + 1


class Scan:
    """One pass over a file's strings and brackets: where each container of the outer levels
    that opens at a position closes (`value_end`). Only scans: orjson checks each piece later."""

    __slots__ = ("src", "_starts", "_ends", "_base", "_block")

    def __init__(self, src: PieceFile) -> None:
        self.src = src
        scanner = _Scanner(src.size)
        for base in range(0, src.size, SCAN_WINDOW):
            scanner.window(src.read(base, min(src.size, base + SCAN_WINDOW)), base)
        self._starts, self._ends = scanner.ends(src.size)
        self._base, self._block = 0, b""

    def _at(self, pos: int) -> tuple[int, bytes]:
        """(offset, bytes) of a block of the file holding `pos` (< the file's size)."""
        if not self._base <= pos < self._base + len(self._block):
            self._base, self._block = pos, self.src.read(pos, min(self.src.size, pos + BLOCK))
        return self._base, self._block

    def byte(self, pos: int) -> int:
        """The byte at `pos`, -1 past the end."""
        if pos >= self.src.size:
            return -1
        base, block = self._at(pos)
        return block[pos - base]

    def token(self, pos: int) -> tuple[int, int]:
        """(position, byte) of the first byte from `pos` on that is not whitespace; -1 at the end."""
        base, block = self._base, self._block
        if base <= pos < base + len(block):  # (the usual case: the separator is in the block)
            end = _WS.match(block, pos - base).end()  # type: ignore[union-attr]  # (_WS matches "": never None)
            if end < len(block):
                return base + end, block[end]
            pos = base + end
        while pos < self.src.size:
            base, block = self._at(pos)
            end = _WS.match(block, pos - base).end()  # type: ignore[union-attr]  # (_WS matches "": never None)
            if end < len(block):
                return base + end, block[end]
            pos = base + end
        return pos, -1

    def kept_in(self, start: int, end: int) -> tuple[array[int], array[int]]:
        """(starts, ends) of the kept containers that open in [start, end), in position order."""
        lo, hi = self._starts.searchsorted(start), self._starts.searchsorted(end)
        starts, ends = array("q"), array("q")
        starts.frombytes(self._starts[lo:hi].tobytes())
        ends.frombytes(self._ends[lo:hi].tobytes())
        return starts, ends

    def parse(self, start: int, end: int) -> JsonValue:
        """orjson's value of the bytes [start, end) of the file; NotPlain when orjson refuses it."""
        return parse(self.src.read(start, end), 0, end - start)

    def value_end(self, pos: int) -> int:
        """Where the JSON value starting at `pos` ends."""
        first = self.byte(pos)
        if first < 0:
            raise NotPlain("value expected")
        if first in _OPEN:
            i = int(self._starts.searchsorted(pos))
            if i == len(self._starts) or self._starts[i] != pos:
                # (a bracket inside a string, or a string the scan saw start elsewhere)
                raise NotPlain("value expected")
            return int(self._ends[i])
        return self._match_end(_STRING if first == _QUOTE else _SCALAR, pos)

    def _match_end(self, pattern: re.Pattern[bytes], pos: int) -> int:
        """Where `pattern` matching at `pos` ends, reading more while the match may go on past
        what was read (a string longer than a block, a number at a block's edge)."""
        size, want = self.src.size, BLOCK
        base, block = self._at(pos)
        while True:
            m = pattern.match(block, pos - base)
            whole = base + len(block) == size  # (the block reaches the end of the file)
            # A string's match ends at its closing quote: never cut short by the block's end.
            if m is not None and (pattern is _STRING or m.end() < len(block) or whole):
                return base + m.end()
            if whole or (m is None and pattern is _SCALAR):
                raise NotPlain("value expected")
            want *= 4  # (read again from `pos`, four times more: a long string costs O(its length))
            base, block = pos, self.src.read(pos, min(size, pos + want))


def parse(raw: bytes | memoryview, start: int, end: int) -> JsonValue:
    """orjson's value of one piece; NotPlain when orjson refuses it."""
    try:
        return orjson.loads(memoryview(raw)[start:end])
    except (orjson.JSONDecodeError, RecursionError) as exc:
        raise NotPlain(str(exc)) from None


def _closed(scan: Scan, pos: int, end: int, close: int) -> bool:
    """True when the byte at `pos` closes the value that value_end said ends at `end`."""
    if scan.byte(pos) != close:
        return False
    if pos + 1 != end:
        raise NotPlain("brackets do not match")
    return True


def members(scan: Scan, pos: int, end: int) -> dict[str, tuple[int, int]]:
    """key -> (start, end) of each member of the object at `pos` that ends at `end` (the last of
    equal keys, at the first one's place), checked as far as the separators go."""
    if scan.byte(pos) != ord("{"):
        raise NotPlain("object expected")
    out: dict[str, tuple[int, int]] = {}
    pos, first = scan.token(pos + 1)
    if _closed(scan, pos, end, ord("}")):
        return out
    while True:
        if first != _QUOTE:
            raise NotPlain("key expected")
        kend = scan.value_end(pos)
        key = scan.parse(pos, kend)
        pos, colon = scan.token(kend)
        if colon != ord(":"):
            raise NotPlain("':' expected")
        start, _first = scan.token(pos + 1)
        stop = scan.value_end(start)
        out[key] = (start, stop)
        pos, sep = scan.token(stop)
        if _closed(scan, pos, end, ord("}")):
            return out
        if sep != ord(","):
            raise NotPlain("',' or '}' expected")
        pos, first = scan.token(pos + 1)


def elements(scan: Scan, pos: int, end: int) -> array[int]:
    """start, end, start, end... of the elements of the array at `pos` that ends at `end` (one
    flat array of 8-byte numbers: a list of tuples cost ~13 times more). The containers among
    them are met in position order: their ends are looked up by a pointer, not a search."""
    if scan.byte(pos) != ord("["):
        raise NotPlain("array expected")
    out = array("q")
    starts, ends = scan.kept_in(pos + 1, end)
    k = 0
    pos, first = scan.token(pos + 1)
    if _closed(scan, pos, end, ord("]")):
        return out
    while True:
        if first in _OPEN:
            while k < len(starts) and starts[k] < pos:  # (kept containers nested in an element)
                k += 1
            if k == len(starts) or starts[k] != pos:
                raise NotPlain("value expected")
            stop = ends[k]
        else:
            stop = scan.value_end(pos)
        out.append(pos)
        out.append(stop)
        pos, sep = scan.token(stop)
        if sep == ord("]"):
            if pos + 1 != end:
                raise NotPlain("brackets do not match")
            return out
        if sep != ord(","):
            raise NotPlain("',' or ']' expected")
        pos, first = scan.token(pos + 1)


def document_members(scan: Scan) -> dict[str, tuple[int, int]]:
    """The members of a document that is one object with nothing but whitespace around it."""
    start, _first = scan.token(0)
    end = scan.value_end(start)
    if scan.token(end)[0] != scan.src.size:
        raise NotPlain("trailing bytes")
    return members(scan, start, end)


def _pieces(src: PieceFile, spans: array[int], indexes: Iterable[int]) -> Iterator[tuple[int, memoryview]]:
    """(index, bytes) of the pieces at `indexes`, neighbours read together up to READ_CHUNK."""
    group: list[int] = []
    first = last = 0
    for i in indexes:
        a, b = spans[2 * i], spans[2 * i + 1]
        if group and (a < last or b - first > READ_CHUNK):
            yield from _group(src, spans, group, first, last)
            group = []
        if not group:
            first = a
        group.append(i)
        last = b
    if group:
        yield from _group(src, spans, group, first, last)


def _group(src: PieceFile, spans: array[int], group: list[int], first: int, last: int) -> Iterator[tuple[int, memoryview]]:
    view = memoryview(src.read(first, last))
    for i in group:
        yield i, view[spans[2 * i] - first:spans[2 * i + 1] - first]


class LazyArray(Sequence[JsonValue]):
    """The elements of a JSON array of a document, read back and parsed one at a time when asked
    for (never all held at once). Every element was parsed once already (`checked_array`) and
    its bytes are checked against their CRC-32 of then: none can fail now but with `Changed`."""

    __slots__ = ("_src", "_spans", "_sums")

    def __init__(self, src: PieceFile, spans: array[int], sums: array[int]) -> None:
        self._src = src
        self._spans = spans
        self._sums = sums

    def __len__(self) -> int:
        return len(self._sums)

    @overload
    def __getitem__(self, i: int) -> JsonValue: ...
    @overload
    def __getitem__(self, i: slice) -> list[JsonValue]: ...

    def __getitem__(self, i: int | slice) -> JsonValue | list[JsonValue]:
        if isinstance(i, slice):
            return list(self.items(range(*i.indices(len(self)))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("LazyArray index out of range")
        return next(self.items((i,)))

    def __iter__(self) -> Iterator[JsonValue]:
        return self.items(range(len(self)))

    def items(self, indexes: Iterable[int]) -> Iterator[JsonValue]:
        """The elements at `indexes`, parsed one at a time."""
        sums = self._sums
        for i, piece in _pieces(self._src, self._spans, indexes):
            if zlib.crc32(piece) != sums[i]:
                raise Changed("the file changed since it was scanned")
            yield parse(piece, 0, len(piece))


def checked_array(scan: Scan, start: int, end: int) -> LazyArray:
    """The array at `start` as a LazyArray, after parsing (and dropping) each element once: the
    array is then known to be exactly what a whole parse would give."""
    spans = elements(scan, start, end)
    sums = array("I")
    for _i, piece in _pieces(scan.src, spans, range(len(spans) // 2)):
        parse(piece, 0, len(piece))
        sums.append(zlib.crc32(piece))
    return LazyArray(scan.src, spans, sums)
