"""escape_markdown / cell / inline / fence and the byte caps of render/limits.py."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.render.limits import cap_text, one_line
from harn_ls.render.markdown import (
    MARKDOWN_SPECIAL,
    capped_markdown,
    cell,
    code_cell,
    escape_markdown,
    fence,
    inline,
    link,
    unescape_markdown,
)
from harn_ls.util.utf8 import cut_utf8, utf8_len
from tests.security.hostile_data import SPOOF
from tests.security.inert import assert_no_live_markup

# Text made mostly of what Markdown cares about, plus line breaks, blanks, entities and wide characters.
_ALPHABET = st.sampled_from(list(MARKDOWN_SPECIAL) + list("\n\r\t  aZ09;/@%'\"^,?") + ["é", "—", "😀", "&#32;", "&lt;",
                                                                                       "[x](command:y)", "![i](u)", "<img>",
                                                                                       "```", "~~~", "\n---\n", "\n===\n",
                                                                                       "www.a.b", "https://e.x", "$(zap)"])
markdownish = st.lists(_ALPHABET, max_size=60).map("".join)


def assert_inert_escape(out: str) -> None:
    """No character of `out` can take part in Markdown structure unless it is backslash-escaped:
    inline delimiters never appear bare, a line never starts with a blank or a block marker, no
    domain, scheme or entity survives, `_` is bare only inside a word."""
    assert "\r" not in out
    for line in out.split("\n"):
        assert not line.startswith((" ", "\t")), repr(line)
        assert not re.match(r"[#+\-=>]|\d{1,9}[.)]", line), repr(line)
        i = 0
        while line.startswith(("&#32;", "&#9;"), i):
            i += 5 if line.startswith("&#32;", i) else 4
        while i < len(line):
            ch, nxt = line[i], line[i + 1:i + 2]
            prev = line[i - 1:i]
            if ch == "\\":
                assert nxt in MARKDOWN_SPECIAL or not nxt, repr(line[i:i + 5])  # not nxt: a hard line break
                i += 2
                continue
            assert ch not in "`*{}[]<>|~$()", (ch, line)
            if ch == "_":
                assert prev.isalnum() and nxt.isalnum(), line
            if ch == ".":
                assert not nxt.isalnum(), line
            if ch == ":":
                assert nxt != "/", line
            if ch == "&":
                assert line.startswith("&#13;", i) or not (nxt.isalnum() or nxt == "#"), line
            i += 1


@settings(max_examples=400, deadline=None)
@given(markdownish)
def test_escape_round_trips_and_is_inert(s):
    out = escape_markdown(s)
    assert unescape_markdown(out) == s
    assert_inert_escape(out)
    assert_no_live_markup(out, "escape_markdown")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_escape_any_unicode(s):
    out = escape_markdown(s)
    assert unescape_markdown(out) == s
    assert_inert_escape(out)


@settings(max_examples=300, deadline=None)
@given(markdownish)
def test_cell_is_one_inert_line(s):
    out = cell(s)
    assert "\n" not in out and "\r" not in out
    assert unescape_markdown(out) == s.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    assert_no_live_markup(out, "cell")


@settings(max_examples=300, deadline=None)
@given(markdownish)
def test_code_spans_and_fences_hold_their_content(s):
    one_line_s = s.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    span = inline(s)
    ticks = len(span) - len(span.lstrip("`"))
    body = span[ticks:-ticks]
    assert body.strip(" ") == one_line_s.strip(" ") or body == one_line_s
    assert "`" * ticks not in body  # cannot be closed early
    assert "\\|" in code_cell("a|b")
    block = fence(s, "json")
    lines = block.split("\n")
    marker = lines[0][: len(lines[0]) - len("json")]
    inner = lines[1:-2]
    # no line inside starts with a fence as long as ours (the block cannot be closed from inside)
    assert not any(line.strip().startswith(marker) for line in inner)


def test_spoofed_claim_shows_no_structure():
    out = escape_markdown(SPOOF)
    assert unescape_markdown(out) == SPOOF
    assert_no_live_markup(out)
    lines = out.split("\n")
    assert "---" not in lines and "\\---" in lines  # the thematic break is text
    assert not any(line.startswith(("#", ">", "- ", "1.", "|", "```", "    ")) for line in lines)
    assert "**observation**" not in out and "\\*\\*observation\\*\\*" in out


def test_links_only_to_our_targets():
    md = link("x](command:evil) [y", "harn-state:/facts/a b).md")
    assert md == "[x\\]\\(command:evil\\) \\[y](harn-state:/facts/a%20b%29.md)"
    for bad in ("command:workbench.action.terminal.new", "https://evil.example", "javascript:x"):
        try:
            link("x", bad)
        except ValueError:
            continue
        raise AssertionError(f"linked to {bad}")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=0, max_value=400))
def test_cut_utf8_never_splits_a_character(s, n):
    head, dropped = cut_utf8(s, n)
    assert utf8_len(head) <= n
    assert s.startswith(head)
    assert utf8_len(head) + dropped == utf8_len(s)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.integers(min_value=40, max_value=300))
def test_caps_hold(s, n):
    out = cap_text(s, n)
    assert utf8_len(out) <= n
    if utf8_len(s) > n:
        assert "more bytes" in out
    else:
        assert out == s
    line = one_line(s, n)
    assert utf8_len(line) <= n and "\n" not in line and "$(" not in line


def test_five_megabyte_value():
    big = "ü" * (5 * 1024 * 1024 // 2)  # 5 MB of two-byte characters
    out = cap_text(big, 4000)
    assert utf8_len(out) <= 4000 and out.endswith("more bytes")
    md = capped_markdown(big, 64_000, link("the file", "file:///p/events.jsonl#L3"))
    assert utf8_len(md) < 70_000
    assert "*… 5,178,880 more bytes* — [the file](file:///p/events.jsonl#L3)" in md
    assert one_line(big, 200).endswith("more bytes") and utf8_len(one_line(big, 200)) <= 200


def test_moment_shows_epoch_seconds_and_millis_as_utc_and_keeps_text():
    from harn_ls.render.markdown import moment

    assert moment("1778235300") == "2026-05-08 10:15:00 UTC (epoch 1778235300)"
    assert moment(1778235300123) == "2026-05-08 10:15:00 UTC (epoch 1778235300123)"
    assert moment("2026-05-08T10:15:00Z") == "2026-05-08T10:15:00Z"
    assert moment(None) is None and moment("12") == "12" and moment(True) is True
