"""One text-position codec: UTF-8 byte offsets, code-point offsets, LSP positions.

Pure (no pygls). Three ways to point into a text:

* a code-point offset into the Python `str` (what slicing uses);
* a UTF-8 byte offset (what `harn check --json` spans use);
* an LSP position `(line, character)`: 0-based line, column in the code units
  of the position encoding the client and server agreed on at initialize
  (`utf-8` bytes, `utf-16` code units — LSP's default —, or `utf-32` code
  points); every class and function here takes that `encoding` (default
  utf-16) — or, with the `*_column` helpers, code points.

Lines end at `\\r\\n`, a lone `\\r` or `\\n`, as LSP defines them (not
`str.splitlines()`, which also breaks on `\\x0b`, U+2028, ...). A position past
the end of a line clamps to the line's end; a line past the end of the text
clamps to the end of the text, as editors do.

`shift_position` moves a position that lies at or after an edited range to
where it lands once the range is replaced (LSP `didChange` increments).
"""

from __future__ import annotations

import bisect
import re

Pos = tuple[int, int]  # 0-based line, column
Range = tuple[Pos, Pos]

LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
_BYTE_LINE_BREAK_RE = re.compile(rb"\r\n|\r|\n")

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)  # LSP 3.17 PositionEncodingKind values


def units_len(text: str, encoding: str = UTF16) -> int:
    """Length of `text` in the code units of a position encoding."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # LSP's default column unit


def char_units(ch: str, encoding: str = UTF16) -> int:
    """Code units one character takes in a position encoding."""
    if encoding == UTF32:
        return 1
    o = ord(ch)
    if encoding == UTF8:
        return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
    return 2 if o > 0xFFFF else 1


def line_text(text: str, line: int) -> str | None:
    """The content of 0-based `line` (without its line break), None past the last line. Stops at
    that line: a position near the top of a big file does not index the whole text."""
    if line < 0:
        return None
    start = breaks = 0
    for m in LINE_BREAK_RE.finditer(text):
        if breaks == line:
            return text[start:m.start()]
        start, breaks = m.end(), breaks + 1
    return text[start:] if breaks == line else None


def line_starts(text: str) -> list[int]:
    """Code-point offsets where lines start (LSP line breaks only)."""
    return [0] + [m.end() for m in LINE_BREAK_RE.finditer(text)]


class TextIndex:
    """Code-point offsets of one text <-> LSP positions (in `encoding`) and line/column (code points)."""

    __slots__ = ("text", "starts", "encoding")

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.starts = line_starts(text)
        self.encoding = encoding

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line_end(self, line: int) -> int:
        """Offset of the end of `line`'s content (before its line break)."""
        starts, text = self.starts, self.text
        end = starts[line + 1] if line + 1 < len(starts) else len(text)
        while end > starts[line] and text[end - 1] in "\r\n":
            end -= 1
        return end

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    # -- LSP positions ------------------------------------------------------------

    def position(self, offset: int) -> Pos:
        """Code-point offset -> (line, column in the encoding's units)."""
        line = self.line_of(offset)
        return line, units_len(self.text[self.starts[line]:offset], self.encoding)

    def offset(self, pos: Pos) -> int:
        """(line, column in the encoding's units) -> code-point offset, clamped. A column inside a
        character (a surrogate pair, a UTF-8 sequence) moves past that character."""
        line, col = pos
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        text, end, encoding = self.text, self.line_end(line), self.encoding
        units = 0
        i = self.starts[line]
        while i < end and units < col:
            units += char_units(text[i], encoding)
            i += 1
        return i

    def end_position(self) -> Pos:
        return self.position(len(self.text))

    # -- code points ---------------------------------------------------------------

    def offset_of_column(self, pos: Pos) -> int:
        """(line, code-point column) -> code-point offset, clamped like `offset`."""
        line, col = pos
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[line]
        return min(start + max(col, 0), self.line_end(line))


class ByteIndex:
    """UTF-8 byte offsets of one text <-> LSP positions (line, column in `encoding`).

    Offsets past the end clamp to the end; an offset inside a multi-byte
    character moves back to that character's start. Lone surrogates (which a
    `str` can hold) are encoded with `surrogatepass`.
    """

    __slots__ = ("data", "line_starts", "encoding")

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.encoding = encoding
        self.data = text.encode("utf-8", "surrogatepass")
        self.line_starts = [0] + [m.end() for m in _BYTE_LINE_BREAK_RE.finditer(self.data)]

    def _snap(self, offset: int) -> int:
        data = self.data
        offset = max(0, min(int(offset), len(data)))
        while offset < len(data) and offset > 0 and (data[offset] & 0xC0) == 0x80:
            offset -= 1
        return offset

    def position(self, offset: int) -> Pos:
        offset = self._snap(offset)
        line = bisect.bisect_right(self.line_starts, offset) - 1
        if self.encoding == UTF8:
            return line, offset - self.line_starts[line]
        segment = self.data[self.line_starts[line]:offset].decode("utf-8", "surrogatepass")
        return line, units_len(segment, self.encoding)

    def offset(self, pos: Pos) -> int:
        """(line, column in the encoding's units) -> byte offset, clamped to the line's content like
        `TextIndex.offset`."""
        line, col = pos
        starts, data = self.line_starts, self.data
        if line < 0:
            return 0
        if line >= len(starts):
            return len(data)
        end = starts[line + 1] if line + 1 < len(starts) else len(data)
        while end > starts[line] and data[end - 1] in b"\r\n":
            end -= 1
        content = data[starts[line]:end].decode("utf-8", "surrogatepass")
        units = used = 0
        for ch in content:
            if units >= col:
                break
            units += char_units(ch, self.encoding)
            used += char_units(ch, UTF8)
        return starts[line] + used


def shift_position(pos: Pos, start: Pos, end: Pos, new_text: str, encoding: str = UTF16) -> Pos:
    """Where `pos` (at or after `end`) lands after replacing start..end with `new_text` (columns in
    `encoding`'s units)."""
    segments = LINE_BREAK_RE.split(new_text)
    n_breaks = len(segments) - 1
    last = units_len(segments[-1], encoding)
    end_line = start[0] + n_breaks
    end_char = (start[1] + last) if n_breaks == 0 else last
    if pos[0] == end[0]:
        return end_line, end_char + (pos[1] - end[1])
    return pos[0] + (end_line - end[0]), pos[1]
