"""Positions in the encoding the client and server agreed on (LSP 3.17 positionEncoding).

Property tests of the one codec (harn_ls/util/text_positions.py) over astral and combining characters
for utf-8, utf-16 and utf-32; then a bare client per encoding (offering only that one, and utf-8
first as Neovim >= 0.10 does) checks a probe diagnostic's columns after non-ASCII text.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.util.text_positions import ENCODINGS, ByteIndex, TextIndex, shift_position
from tests.conformance.bare_client import BARE_CAPS, BareClient
from tests.lsp.conftest import HARN_DOUBLE, copy_sample

# ASCII, Latin-1, CJK, astral (emoji, musical symbols), combining marks, ZWJ, line breaks
ALPHABET = st.sampled_from(list("ab \t") + ["é", "ß", "中", "😀", "𝄞", "\u0301", "\u200d", "👍🏽", "\n", "\r\n", "\r"])
TEXTS = st.lists(ALPHABET, max_size=40).map("".join)


def reference_units(text: str, encoding: str) -> int:
    """The length LSP means, from Python's own codecs."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(ENCODINGS))
def test_every_character_boundary_round_trips(text, encoding):
    index = TextIndex(text, encoding)
    for offset in range(len(text) + 1):
        line, col = index.position(offset)
        start = index.starts[line]
        assert col == reference_units(text[start:offset], encoding)
        if offset <= index.line_end(line):  # (inside a \r\n the position is the line's end)
            assert index.offset((line, col)) == offset


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.sampled_from(ENCODINGS), st.integers(0, 200))
def test_utf8_byte_offsets_map_to_the_same_positions(text, encoding, byte):
    """Harn's spans are UTF-8 byte offsets: through ByteIndex they land where TextIndex puts the character."""
    data = text.encode("utf-8")
    byte = min(byte, len(data))
    while byte < len(data) and byte > 0 and (data[byte] & 0xC0) == 0x80:
        byte -= 1  # ByteIndex moves back into a character's start
    offset = len(data[:byte].decode("utf-8"))
    assert ByteIndex(text, encoding).position(byte) == TextIndex(text, encoding).position(offset)
    line, col = TextIndex(text, encoding).position(offset)
    if offset <= TextIndex(text).line_end(line):
        assert ByteIndex(text, encoding).offset((line, col)) == byte


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS, st.sampled_from(ENCODINGS), st.data())
def test_shift_matches_the_edited_text(text, inserted, encoding, data):
    """A position after an edit moves to where the same character is in the edited text."""
    assume_text = text + "X"
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    before = TextIndex(assume_text, encoding)
    if not (i <= before.line_end(before.line_of(i)) and j <= before.line_end(before.line_of(j))):
        return  # an edit boundary inside a \r\n is no LSP position
    head, tail = assume_text[:i] + inserted, assume_text[j:]
    if (head.endswith("\r") and tail.startswith("\n")) or (head[:i].endswith("\r") and (inserted + tail).startswith("\n")):
        return  # the edit joins a \r and a \n into one line break: the lines themselves change
    edited = head + tail
    x = len(assume_text) - 1
    moved = shift_position(before.position(x), before.position(i), before.position(j), inserted, encoding)
    assert moved == TextIndex(edited, encoding).position(len(edited) - 1)


def test_a_column_inside_a_character_moves_past_it():
    for encoding, inside in (("utf-8", 2), ("utf-16", 1)):
        assert TextIndex("😀x", encoding).offset((0, inside)) == 1


# -- over LSP ---------------------------------------------------------------------------------

LINE1 = '  let s = "é𝄞 ́中"; let x: int = "oops"'
DOC = "pipeline main() {\n" + LINE1 + "\n}\n"


@pytest.mark.parametrize("offered", [["utf-8"], ["utf-16"], ["utf-32"], ["utf-8", "utf-16", "utf-32"], []],
                         ids=["utf-8", "utf-16", "utf-32", "neovim-0.10", "none"])
def test_probe_diagnostic_columns_in_the_negotiated_encoding(tmp_path, offered):
    project = copy_sample(tmp_path)
    target = project / "pipelines" / "encoding_target.harn"
    target.write_text(DOC, encoding="utf-8")
    caps = {"general": {"positionEncodings": offered}} if offered else dict(BARE_CAPS)
    c = BareClient.stdio()
    try:
        init = c.initialize(project, caps, {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}},
                                            "workspaceTrusted": True})
        encoding = offered[0] if offered else "utf-16"
        assert init["result"]["capabilities"]["positionEncoding"] == encoding
        c.notify("textDocument/didOpen", {"textDocument": {"uri": target.as_uri(), "languageId": "harn",
                                                           "version": 1, "text": DOC}})
        res = c.request("workspace/executeCommand", {"command": "harnState.probeTypecheck",
                                                     "arguments": [{"uri": target.as_uri()}]}, timeout=60)
        assert res["result"]["ok"] is True, res
        published = c.wait_notification("textDocument/publishDiagnostics", lambda m: any(
            d.get("source") == "harn-probe" for d in m["params"]["diagnostics"]) and m["params"]["uri"] == target.as_uri())
        (diag,) = [d for d in published["params"]["diagnostics"] if d["source"] == "harn-probe"]
        literal = LINE1.index('"oops"')
        assert diag["range"]["start"] == {"line": 1, "character": reference_units(LINE1[:literal], encoding)}
        assert diag["range"]["end"] == {"line": 1, "character": reference_units(LINE1, encoding)}
        # and a range the client sends is read in that encoding: a selection that starts at the
        # second `let` (after the non-ASCII text) probes exactly `let x: int = "oops"`
        start = reference_units(LINE1[:LINE1.index("let x")], encoding)
        res = c.request("workspace/executeCommand", {"command": "harnState.probeTypecheck", "arguments": [{
            "uri": target.as_uri(), "range": {"start": {"line": 1, "character": start},
                                              "end": {"line": 1, "character": reference_units(LINE1, encoding)}}}]},
                        timeout=60)
        assert res["result"]["ok"] is True and res["result"]["outcome"] == "fail", res
        c.request("shutdown")
        c.notify("exit")
        assert c.exit_status() == 0
    finally:
        c.close()
