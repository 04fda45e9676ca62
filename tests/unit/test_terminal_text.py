"""What the CLI prints: data text can't drive the terminal, and Markdown reads as text."""

from __future__ import annotations

import io

import orjson

from harn_ls.render.markdown import cell, code_cell, escape_markdown, link
from harn_ls.render.terminal import TerminalSafeWriter, markdown_to_text, safe_for_terminal

HOSTILE = "invoice \x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x9b1m \u202eevil\u202c\r\x00end"


def test_controls_and_bidi_overrides_become_visible_escapes():
    out = safe_for_terminal(HOSTILE)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\r" not in out and "\x00" not in out
    assert out == ("invoice \\u001b]0;pwned\\u0007\\u001b[2J\\u001b[31mRED\\u009b1m \\u202eevil\\u202c"
                   "\\u000d\\u0000end")


def test_newline_tab_and_ordinary_unicode_are_kept():
    text = "a\tb\nc — 日本語 👩\u200d💻 e\u0301"
    assert safe_for_terminal(text) == text


def test_json_output_stays_valid_and_decodes_to_the_same_text():
    doc = orjson.dumps({"text": "x \u202e y \u2066z"}).decode()  # orjson writes these raw
    safe = safe_for_terminal(doc)
    assert "\u202e" not in safe
    assert orjson.loads(safe) == {"text": "x \u202e y \u2066z"}


def test_writer_filters_every_write():
    buf = io.StringIO()
    w = TerminalSafeWriter(buf)
    w.write("ok ")
    w.writelines(["\x1b[2J", "\n"])
    w.flush()
    assert buf.getvalue() == "ok \\u001b[2J\n"


def test_markdown_to_text_undoes_our_escaping_and_keeps_data_text():
    claim = "Late fees are 1.5% (of *total*) — see [docs](http://x) `code` | pipe #1"
    md = f"## Facts\n\n> **observation** {escape_markdown(claim)} (confidence 0\\.6)\n"
    assert markdown_to_text(md) == f"## Facts\n\n> observation {claim} (confidence 0.6)\n"


def test_markdown_to_text_links_code_cells_and_tables():
    md = "| id | where |\n|---|---|\n| " + code_cell("a`b") + " | " + link("open [x]", "harn-state:/facts/f1.md") + " |"
    text = markdown_to_text(md)
    assert text.splitlines()[2] == "| a`b | open [x] <harn-state:/facts/f1.md> |"
    assert markdown_to_text(cell("a|b")) == "a|b"


def test_markdown_to_text_fences_and_folds():
    md = "<details>\n<summary>tool call **read** (2 args)</summary>\n\n```json\n{\"a\": \"\\\\x\"}\n```\n</details>\n"
    assert markdown_to_text(md) == '▸ tool call read (2 args)\n\n{"a": "\\\\x"}\n'


def test_hostile_text_through_markdown_then_terminal():
    md = "> " + escape_markdown(HOSTILE)
    out = safe_for_terminal(markdown_to_text(md))
    assert "\x1b" not in out and "\u202e" not in out
    assert out.startswith("> invoice \\u001b]0;pwned")


def test_emphasis_markers_go_but_escaped_stars_stay():
    assert markdown_to_text("*1 hidden* — **bold** " + escape_markdown("a*b**c")) == "1 hidden — bold a*b**c"
