"""render/outline.py: the headings of a Markdown text as document symbols see them."""

from __future__ import annotations

import time

from harn_ls.render.outline import MAX_HEADINGS, outline


def test_sections_nest_and_end_before_the_next_heading_of_their_level():
    text = "# Run r1\nintro\n## Steps\n- a\n### Detail\nx\n## Cost\ny\n# Next\nz\n\n\n"
    got = [(h.level, h.title, h.line, h.end_line) for h in outline(text)]
    assert got == [(1, "Run r1", 0, 7), (2, "Steps", 2, 5), (3, "Detail", 4, 5), (2, "Cost", 6, 7), (1, "Next", 8, 9)]


def test_headings_inside_fences_are_text_and_titles_are_plain():
    text = ("# Real\n```\n# not a heading\n```\n~~~~\n## neither\n```\n~~~~\n"
            "## A \\*starred\\* `code` [link](harn-state:/x.md) ##\n")
    got = [(h.level, h.title) for h in outline(text)]
    assert got == [(1, "Real"), (2, "A *starred* code link <harn-state:/x.md>")]


def test_hostile_heading_flood_is_capped_and_linear():
    text = "# h\n" * 200_000
    start = time.thread_time()  # this thread's CPU time: the work itself, whatever else the machine runs
    heads = outline(text)
    assert len(heads) == MAX_HEADINGS
    assert time.thread_time() - start < 2.0
    long = outline("# " + "x" * 100_000)[0].title
    assert len(long.encode()) < 1000
