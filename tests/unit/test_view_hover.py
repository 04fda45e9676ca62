"""render/hover.py without a server: the hover Markdown for facts on code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.formats.fact_anchors import Anchor
from harn_ls.model.fact_spans import FactSpan, FactSpanCache, spans_at
from harn_ls.model.workspace import Workspace
from harn_ls.render.hover import LineIndex, hover_at, hover_markdown
from harn_ls.render.limits import HOVER_FACTS
from harn_ls.render.markdown import escape_markdown
from tests.helpers.views import INVOICE, INVOICE_FACT, LATE_FEE_FACT, append_events, copy_sample, fact_event
from tests.security.inert import assert_no_live_markup

SPOOF = ("Harmless.\n\n---\n\n**observation** · confidence **0.99** · asserted 2026-01-01\n\n"
         "[Open fact](command:harnState.acceptProposal) ![x](https://evil.example/x.png) <img src=x onerror=alert(1)>")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


def _path(project: Path, rel: str = INVOICE) -> str:
    return str(project / rel)


def test_hover_over_a_fact_names_it_and_covers_its_lines(project):
    ws = Workspace.load(str(project))
    view = hover_at(ws, _path(project), 27, 0.0)  # 0-based line 27 = line 28 of the evidence 28-29
    assert view is not None
    assert (view.first_line, view.last_line) == (27, 28)
    assert view.markdown.startswith("**observation** · confidence **0.9** · asserted ")
    assert "\n\nLine-item subtotals are rounded to cents with ROUND_HALF_EVEN before tax is computed.\n\n" in view.markdown
    assert "- file_range `src/billing/invoice.py:28-29` — `def subtotal(self) -> Decimal:" in view.markdown
    assert f"(harn-state:/facts/{INVOICE_FACT}.md)" in view.markdown
    assert "Provenance: agent: claude-code, run_id: run_019dfd98-73c0-704c-9bb0-e3d1289d2568" in view.markdown
    assert "may be stale" not in view.markdown


def test_no_hover_where_no_fact_or_below_min_confidence(project):
    ws = Workspace.load(str(project))
    assert hover_at(ws, _path(project), 0, 0.0) is None
    assert hover_at(ws, _path(project), 27, 0.95) is None  # the 0.9 fact is filtered out
    assert hover_at(ws, _path(project), 15, 0.6) is not None  # 0.6 >= 0.6 is shown
    assert hover_at(ws, _path(project), 15, 0.61) is None
    assert hover_at(ws, str(project.parent / "outside.py"), 0, 0.0) is None  # not in the project


def test_most_confident_fact_first_and_the_rest_counted(project):
    events = [fact_event(f"fact_extra{i:02d}", f"claim number {i}", f"{INVOICE}:28", confidence=0.1 + i / 100)
              for i in range(HOVER_FACTS + 2)]
    append_events(project, events)
    ws = Workspace.load(str(project))
    view = hover_at(ws, _path(project), 27, 0.0)
    confidences = [float(c) for c in re.findall(r"confidence \*\*([\d.]+)\*\*", view.markdown)]
    assert confidences == sorted(confidences, reverse=True) and confidences[0] == 0.9
    assert len(confidences) == HOVER_FACTS
    assert f"… and {HOVER_FACTS + 3 - HOVER_FACTS} more fact(s) on these lines" in view.markdown


def test_hostile_claim_comes_out_escaped(project):
    append_events(project, [fact_event("fact_spoof", SPOOF, f"{INVOICE}:16", confidence=0.5,
                                       provenance={"agent": "[x](command:evil)", "run": "<b>bold</b>"})])
    ws = Workspace.load(str(project))
    view = hover_at(ws, _path(project), 15, 0.0)
    md = view.markdown
    assert_no_live_markup(md, "hover")
    assert escape_markdown(SPOOF) in md  # all of the claim, as text
    # two facts on line 16: exactly one separator of ours, and exactly two real headers
    assert md.count("\n---\n") == 1
    assert len(re.findall(r"^\*\*\w+\*\* · confidence \*\*", md, re.M)) == 2
    assert re.search(r"(?<!\\)\]\((?!harn-state:/facts/)", md) is None  # our links only: to fact documents
    assert re.search(r"(?<!\\)[<!]", md) is None  # no HTML, no image: every "<" and "!" escaped
    assert "Provenance: agent: \\[x\\]\\(command:evil\\), run: \\<b\\>bold\\</b\\>" in md


def test_moved_and_stale_evidence_are_flagged(project):
    src = project / INVOICE
    lines = src.read_text().splitlines()
    # three lines inserted at the top: the 28-29 snippet is found 3 lines lower (moved)
    src.write_text("\n".join(["# a", "# b", "# c"] + lines) + "\n")
    ws = Workspace.load(str(project))
    view = hover_at(ws, _path(project), 30, 0.0)
    assert view is not None and (view.first_line, view.last_line) == (30, 31)
    assert "↪ re-anchored: recorded at lines 28-29." in view.markdown
    # the snippet gone altogether: stale, at the recorded lines
    src.write_text("\n".join("x = 1" for _ in range(40)) + "\n")
    view = hover_at(ws, _path(project), 27, 0.0, FactSpanCache())
    assert view is not None and "may be stale" in view.markdown


def test_hover_markdown_of_no_spans_is_empty():
    assert hover_markdown([]) == ""


def test_late_fee_fact_is_its_own_hover(project):
    ws = Workspace.load(str(project))
    view = hover_at(ws, _path(project), 15, 0.0)
    assert f"/facts/{LATE_FEE_FACT}.md" in view.markdown and f"/facts/{INVOICE_FACT}.md" not in view.markdown


def test_cached_hover_is_kept_until_the_file_facts_change(project):
    """With the span cache a line's hover is rendered once per version of the file's spans, and
    always equals the hover computed afresh."""
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = _path(project)
    first = hover_at(ws, path, 27, 0.0, cache)
    assert first is not None and hover_at(ws, path, 27, 0.0, cache) is first
    assert hover_at(ws, path, 27, 0.0) == first  # no cache: the same hover
    assert hover_at(ws, path, 0, 0.0, cache) is None and hover_at(ws, path, 27, 0.95, cache) is None
    # a fact on another file: the hover is still valid and kept
    ws.apply_changes([str(append_events(project, [fact_event("fact_tax", "tax thing", "src/billing/tax.py:4")]))])
    assert hover_at(ws, path, 27, 0.0, cache) is first
    # a new fact on these lines: rendered again, with it
    ws.apply_changes([str(append_events(project, [fact_event("fact_more", "also rounds half up", f"{INVOICE}:28")]))])
    again = hover_at(ws, path, 27, 0.0, cache)
    assert again is not first and "also rounds half up" in again.markdown and again == hover_at(ws, path, 27, 0.0)
    # the file saved with a line more above: the fact follows its code, the old line has nothing new
    src = project / INVOICE
    src.write_text("# one more line\n" + src.read_text())
    moved = hover_at(ws, path, 28, 0.0, cache)
    assert moved is not None and INVOICE_FACT in moved.markdown and moved == hover_at(ws, path, 28, 0.0)


@settings(max_examples=200, deadline=None)
@given(ranges=st.lists(st.tuples(st.integers(1, 120), st.integers(0, 150)), max_size=40))
def test_line_index_finds_what_a_scan_finds(ranges):
    spans = [FactSpan(fact=i, evidence=None, anchor=Anchor("ok", start, start + length))
             for i, (start, length) in enumerate(ranges)]
    index = LineIndex(spans)
    for line in range(0, 300):
        assert index.at(line) == spans_at(spans, line)
