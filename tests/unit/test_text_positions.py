"""harn_ls.util.text_positions: the one position codec, property-tested against a naive
character-by-character reference (random text with astral characters, CRLF, lone CR,
and the characters `str.splitlines()` would wrongly break on)."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harn_ls.formats.harn_source import find_checkpoint_calls
from harn_ls.util.text_positions import ByteIndex, TextIndex, line_starts, line_text, shift_position, units_len

PIECES = ["a", "z", " ", "é", "\u4e2d", "🚀", "𝄞", "\r", "\n", "\r\n", "\x0b", "\u2028", "\x85", "\t"]
texts = st.one_of(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.text(max_size=40))
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def naive_position(text: str, offset: int) -> tuple[int, int]:
    """Walk the text one character at a time: LSP lines end at CRLF, CR or LF; columns count UTF-16 units."""
    line = col = 0
    i = 0
    while i < offset:
        ch = text[i]
        if ch == "\r" and i + 1 < len(text) and text[i + 1] == "\n":
            if i + 1 == offset:  # between \r and \n: still on this line, after the \r
                return line, col + 1
            line, col, i = line + 1, 0, i + 2
            continue
        if ch in "\r\n":
            line, col = line + 1, 0
        else:
            col += 2 if ord(ch) > 0xFFFF else 1
        i += 1
    return line, col


def valid(text: str, offset: int) -> bool:
    """A place an editor can put the cursor: not between the \\r and \\n of one line break."""
    return not (0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n")


def line_column(index: TextIndex, offset: int) -> tuple[int, int]:
    """Code-point offset -> (line, code-point column), the inverse of offset_of_column."""
    line = index.line_of(offset)
    return line, offset - index.starts[line]


@SETTINGS
@given(texts)
def test_offset_to_position_matches_reference_and_round_trips(text):
    index = TextIndex(text)
    for offset in range(len(text) + 1):
        pos = index.position(offset)
        assert pos == naive_position(text, offset)
        if valid(text, offset):
            assert index.offset(pos) == offset
            assert index.offset_of_column(line_column(index, offset)) == offset
    assert index.end_position() == naive_position(text, len(text))
    assert units_len(text) == len(text.encode("utf-16-le")) // 2


@SETTINGS
@given(texts, st.integers(-2, 12), st.integers(-2, 30))
def test_position_to_offset_clamps_like_an_editor(text, line, col):
    index = TextIndex(text)
    offset = index.offset((line, col))
    assert 0 <= offset <= len(text)
    assert valid(text, offset)
    got_line, got_col = index.position(offset)
    if line < 0:
        assert offset == 0
    elif line >= index.line_count:
        assert offset == len(text)
    else:
        # Same line, never before the asked column unless the line is shorter, never more than one
        # character (a surrogate pair) past it.
        assert got_line == line
        line_len = units_len(text[index.starts[line]:index.line_end(line)])
        want = min(max(col, 0), line_len)
        assert want <= got_col <= want + 1


@SETTINGS
@given(texts)
def test_byte_offsets_agree_with_code_point_offsets(text):
    chars, data = TextIndex(text), ByteIndex(text)
    for offset in range(len(text) + 1):
        byte = len(text[:offset].encode("utf-8"))
        pos = chars.position(offset)
        assert data.position(byte) == pos
        if valid(text, offset):
            assert data.offset(pos) == byte
        # A byte offset inside a multi-byte character snaps back to that character's start.
        if offset < len(text):
            for inside in range(byte + 1, byte + len(text[offset].encode("utf-8"))):
                assert data.position(inside) == pos
    assert data.position(-3) == (0, 0)
    assert data.position(len(data.data) + 9) == chars.end_position()


@SETTINGS
@given(texts, st.integers(-2, 12), st.integers(-2, 30))
def test_byte_offset_of_any_position_matches_the_text_index(text, line, col):
    offset = TextIndex(text).offset((line, col))
    assert ByteIndex(text).offset((line, col)) == len(text[:offset].encode("utf-8"))


@SETTINGS
@given(texts, st.data())
def test_shifting_through_an_edit_equals_recomputing_on_the_edited_text(text, data):
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    p = data.draw(st.integers(b, len(text)))
    new_text = data.draw(texts)
    assume(valid(text, a) and valid(text, b) and valid(text, p))
    edited = text[:a] + new_text + text[b:]
    moved = p - b + a + len(new_text)
    # An edit that glues a \r to a \n (or splits one) changes line breaks outside the edited range.
    assume(valid(edited, a) and valid(edited, a + len(new_text)) and valid(edited, moved))
    before, after = TextIndex(text), TextIndex(edited)
    got = shift_position(before.position(p), before.position(a), before.position(b), new_text)
    assert got == after.position(moved)


def test_line_breaks_are_lsp_not_splitlines():
    text = "a\x0bb\u2028c\x85d\re\r\nf\ng"
    assert line_starts(text) == [0, 8, 11, 13]
    assert TextIndex(text).position(len(text)) == (3, 1)
    assert len(text.splitlines()) == 7  # what the codec must not do


def test_known_positions():
    text = "a🚀é\r\nx\ry"
    index = TextIndex(text)
    assert index.position(3) == (0, 4)  # a + surrogate pair + é
    assert line_column(index, 3) == (0, 3)
    assert index.offset((0, 2)) == 2  # column inside the surrogate pair moves past the rocket
    assert index.offset((0, 99)) == 3 and index.offset((9, 0)) == len(text)
    assert index.position(7) == (2, 0)
    assert ByteIndex(text).position(len("a🚀é\r\nx\r".encode())) == (2, 0)
    assert shift_position((3, 5), (1, 2), (3, 1), "🚀\nab") == (2, 6)
    assert shift_position((4, 5), (1, 2), (3, 1), "") == (2, 5)


def test_checkpoint_lens_columns_use_the_codec():
    src = 'let 🚀 = 1\r\n/* checkpoint("no") */\rcheckpoint_stage("build", 1)\n  x 𝄞 checkpoint("two")'
    calls = find_checkpoint_calls(src)
    assert [(c.stage, c.line, c.start_char, c.end_char) for c in calls] == [
        ("build", 2, 0, 16),  # a lone \r ends line 1, as LSP clients count lines
        ("two", 3, 7, 17),  # `𝄞` is two UTF-16 units
    ]


@SETTINGS
@given(texts)
def test_line_text_is_each_lsp_line_without_its_break(text):
    """`line_text` (the hover's end of line) walks only to the line asked for; it must agree with the
    whole-text index on every line, and say None past the last one."""
    index = TextIndex(text)
    for n in range(index.line_count):
        assert line_text(text, n) == text[index.starts[n]:index.line_end(n)]
    assert line_text(text, index.line_count) is None and line_text(text, -1) is None
