"""Tail reader for append-only JSONL logs written by a live agent.

Remembers a byte offset per file and hands back only complete lines; a torn
last line stays unread until its newline arrives. A file that shrank, was
replaced (new inode) or whose first bytes changed is read again from 0 and
the caller is told to rebuild (`reset=True`). Files are read in bounded
chunks, so a multi-gigabyte log never sits in memory at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import field
from typing import Any

import orjson

from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.safe_read import MEMORY_LINE_CAP, ReadRefused, few_containers, json_density_problem, open_project_file

# A batch's bytes. Small enough that a chunk, its lines and what they parse into stay in the processor's
# caches while they are read (4 MB chunks: a cold read of the 100k bench's memory logs took ~10% more
# CPU and held ~25 MB more at its peak), large enough that a batch's own cost does not count.
CHUNK_BYTES = 256 * 1024
HEAD_BYTES = 64

CODE_INVALID_JSON = "HL-JSONL-001"
CODE_INVALID_UTF8 = "HL-JSONL-002"
CODE_NOT_OBJECT = "HL-JSONL-003"
CODE_TORN_LINE = "HL-JSONL-004"
CODE_UNREADABLE = "HL-JSONL-005"
CODE_LINE_TOO_LONG = "HL-JSONL-006"
MAX_LINE_BYTES = MEMORY_LINE_CAP  # a longer "line" (say a run of NULs after a crash) is skipped, never buffered
CODE_TOO_DENSE = "HL-JSONL-007"  # a line whose parsed form would exceed the memory factor (`{}` flood)


@lean_dataclass(slots=True)
class JsonlLine:
    """One complete line. `value` is None when the line is malformed."""

    line_no: int  # 1-based physical line number
    offset: int  # byte offset of the line start
    value: JsonObject | None
    problem: Problem | None = None
    decoded: object = None  # what the tail's typed decoder made of the line (`value` is None then)


@lean_dataclass(slots=True)
class JsonlBatch:
    """The lines a JSONL tail read found since the last read, or that the file was reset or is gone."""

    lines: list[JsonlLine] = field(default_factory=list)
    reset: bool = False  # the caller must drop everything it had for this file
    missing: bool = False  # the file does not exist (any more)


class JsonlTail:
    """Incremental reader for one JSONL file."""

    def __init__(self, path: str, *, chunk_bytes: int = CHUNK_BYTES,
                 decode: Callable[[bytes], object | None] | None = None) -> None:
        """`decode`: a typed decoder tried first on each line short and sparse enough; what it
        returns (not None) is the line's `decoded`, and a line it returns None for is parsed and
        judged as without one."""
        self.path = path
        self._chunk = chunk_bytes
        self._decode = decode
        self._restart()

    def _restart(self) -> None:
        self.offset = 0
        self.line_no = 0
        self._ino: int | None = None
        self._head = b""
        self.torn_bytes = 0  # bytes of an unfinished last line, not yet parsed

    def iter_batches(self) -> Iterator[JsonlBatch]:
        """Yield batches of new complete lines, each at most ~chunk_bytes."""
        try:
            fh = open_project_file(self.path, None)  # /dev/zero or a FIFO: refused, never read
        except ReadRefused as exc:
            self._restart()
            yield JsonlBatch(lines=[JsonlLine(0, 0, None, Problem(self.path, 0, CODE_UNREADABLE, str(exc), Severity.ERROR))])
            return
        except FileNotFoundError:
            had = self.offset > 0 or self._ino is not None
            self._restart()
            yield JsonlBatch(reset=had, missing=True)
            return
        except OSError as exc:
            yield JsonlBatch(lines=[JsonlLine(0, 0, None, Problem(self.path, 0, CODE_UNREADABLE, f"cannot read: {exc.strerror}",
                                                                  Severity.ERROR))])
            return
        with fh:
            st = os.fstat(fh.fileno())
            reset = False
            if self._ino is not None:
                head = fh.read(len(self._head)) if self._head else b""
                if st.st_ino != self._ino or st.st_size < self.offset or head != self._head:
                    self._restart()
                    reset = True
            if self._ino is None:
                self._ino = st.st_ino
            if len(self._head) < HEAD_BYTES:
                fh.seek(0)
                self._head = fh.read(HEAD_BYTES)
            fh.seek(self.offset)
            # The start of a line that runs past the chunk read so far, in pieces, joined once its
            # newline comes (adding each chunk to a growing bytes would copy a long line again at
            # every chunk: quadratic in its length over the chunk size).
            carry: list[bytes] = []
            carried = 0
            first = True
            skipped = -1  # >= 0: bytes of an over-long line consumed so far (not kept)
            while True:
                chunk = fh.read(self._chunk)
                if not chunk:
                    break
                if skipped >= 0:
                    nl = chunk.find(b"\n")
                    if nl < 0:
                        skipped += len(chunk)
                        continue
                    batch = JsonlBatch(lines=[self._skip_line(skipped + nl + 1)], reset=reset and first)
                    first = False
                    yield batch
                    skipped = -1
                    chunk = chunk[nl + 1:]
                cut = chunk.rfind(b"\n")
                if cut < 0:
                    carried += len(chunk)
                    if carried > MAX_LINE_BYTES:
                        skipped, carry, carried = carried, [], 0
                    elif chunk:
                        carry.append(chunk)
                    continue
                if carry:
                    carry.append(chunk)
                    data = b"".join(carry)
                    cut += carried
                else:
                    data = chunk
                rest = data[cut + 1 :]
                carry, carried = ([rest], len(rest)) if rest else ([], 0)
                batch = JsonlBatch(lines=self._parse(data), reset=reset and first)  # (no copy of the complete lines)
                first = False
                yield batch
            self.torn_bytes = skipped if skipped >= 0 else carried
            if first:
                yield JsonlBatch(reset=reset)

    def read_new(self) -> JsonlBatch:
        """All new complete lines as one batch (for small appends)."""
        out = JsonlBatch()
        for batch in self.iter_batches():
            out.reset = out.reset or batch.reset
            out.missing = out.missing or batch.missing
            out.lines.extend(batch.lines)
        return out

    def torn_problem(self) -> Problem | None:
        if not self.torn_bytes:
            return None
        return Problem(
            self.path,
            self.line_no + 1,
            CODE_TORN_LINE,
            f"last line is incomplete ({self.torn_bytes} bytes, no newline yet); "
            "it is ignored until a writer finishes it — Harn skips it the same way only if it is never completed",
            Severity.INFO,
        )

    def _skip_line(self, length: int) -> JsonlLine:
        """Account for an over-long line of `length` bytes (newline included) at the current offset."""
        self.line_no += 1
        line = JsonlLine(self.line_no, self.offset, None, self._too_long(length - 1))
        self.offset += length
        return line

    def _too_long(self, length: int) -> Problem:
        return Problem(self.path, self.line_no, CODE_LINE_TOO_LONG,
            f"line is {length} bytes long, over the {MAX_LINE_BYTES}-byte limit; skipped without reading it into memory "
            "(Harn refuses to read this log until it is fixed)", Severity.ERROR)

    def _parse(self, data: bytes) -> list[JsonlLine]:
        """Every complete line of `data` (what follows its last newline is left alone). The common line - short
        enough, sparse enough, a JSON object - takes the inline path below; anything else goes
        through `_parse_line`, which gives every verdict (so both paths agree by construction)."""
        out: list[JsonlLine] = []
        append = out.append
        loads = orjson.loads
        offset = self.offset
        line_no = self.line_no
        crlf = b"\r" in data  # else no line needs its CR cut
        decode = self._decode
        for raw in data.split(b"\n")[:-1]:
            line_no += 1
            start = offset
            offset += len(raw) + 1
            if len(raw) > MAX_LINE_BYTES:  # the same verdict whether the line arrived whole or in pieces
                self.line_no = line_no
                append(JsonlLine(line_no, start, None, self._too_long(len(raw))))
                continue
            if crlf and raw.endswith(b"\r"):
                raw = raw[:-1]
            # The density rule first (nothing dense is parsed): a line with few containers
            # always passes it, anything more is judged by _parse_line. A blank line fails to
            # parse and is dropped there too.
            if not few_containers(raw):
                value = None
            elif decode is not None and (decoded := decode(raw)) is not None:
                append(JsonlLine(line_no, start, None, None, decoded))
                continue
            else:
                try:
                    value = loads(raw)
                except (orjson.JSONDecodeError, RecursionError):
                    value = None
            if type(value) is dict:
                append(JsonlLine(line_no, start, value))
            elif raw.strip():
                append(self._parse_line(raw, line_no, start))
        self.line_no = line_no
        self.offset = offset
        return out

    def _parse_line(self, raw: bytes, line_no: int, offset: int) -> JsonlLine:
        dense = json_density_problem(raw)
        if dense is not None:
            return JsonlLine(line_no, offset, None, Problem(self.path, line_no, CODE_TOO_DENSE,
                f"line not loaded: {dense}", Severity.ERROR))
        try:
            value: Any = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as uexc:
                return JsonlLine(line_no, offset, None, Problem(self.path, line_no, CODE_INVALID_UTF8,
                    f"line is not valid UTF-8 (byte {uexc.start}); Harn refuses to read this log until it is fixed",
                    Severity.ERROR))
            msg = str(exc).split(":")[0] if str(exc) else "invalid JSON"
            return JsonlLine(line_no, offset, None, Problem(self.path, line_no, CODE_INVALID_JSON,
                f"malformed JSON line ({msg}); Harn refuses to read this log until it is fixed", Severity.ERROR))
        except RecursionError:
            return JsonlLine(line_no, offset, None, Problem(self.path, line_no, CODE_INVALID_JSON,
                "JSON nested too deeply", Severity.ERROR))
        if not isinstance(value, dict):
            return JsonlLine(line_no, offset, None, Problem(self.path, line_no, CODE_NOT_OBJECT,
                f"line is a JSON {type(value).__name__}, not an object; Harn refuses to read this log until it is fixed",
                Severity.ERROR))
        return JsonlLine(line_no, offset, value)
