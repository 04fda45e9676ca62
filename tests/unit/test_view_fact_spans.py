"""model/fact_spans.py: the span cache owned by a project. After a change it anchors only what
changed (facts of this file that are new, or the whole file when its text changed), and it
always answers what a fresh computation answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.formats.fact_anchors import anchor, normalized_lines
from harn_ls.model.fact_spans import FactSpanCache, fact_spans, group_by_range, spans_at
from harn_ls.model.workspace import Workspace
from tests.helpers.views import INVOICE, INVOICE_FACT, LATE_FEE_FACT, append_events, copy_sample, fact_event

TAX = "src/billing/tax.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


def fresh(ws, path: str, min_conf: float = 0.0):
    return [(s.fact.id, s.evidence.ref, s.anchor) for s in fact_spans(ws, path, min_conf)]


def seen(spans):
    return [(s.fact.id, s.evidence.ref, s.anchor) for s in spans]


def test_spans_in_key_order_with_anchors(project):
    ws = Workspace.load(str(project))
    spans = fact_spans(ws, str(project / INVOICE), 0.0)
    assert [s.fact.id for s in spans] == [INVOICE_FACT, LATE_FEE_FACT]
    assert [(s.anchor.state, s.anchor.start, s.anchor.end) for s in spans] == [("ok", 28, 29), ("stale", 16, 16)]
    assert [s.fact.id for s in spans_at(spans, 29)] == [INVOICE_FACT]
    assert list(group_by_range(spans)) == [(28, 29), (16, 16)]
    assert fact_spans(ws, str(project / "src/nothing.py"), 0.0) == []
    assert fact_spans(ws, "/elsewhere/invoice.py", 0.0) == []


def test_unchanged_model_is_served_from_the_cache(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = str(project / INVOICE)
    first = cache.spans(ws, path, 0.0)
    assert cache.spans(ws, path, 0.0) is first
    assert (cache.stats.rechecked, cache.stats.hits, cache.stats.anchored) == (1, 1, 2)
    assert seen(cache.spans(ws, path, 0.7)) == fresh(ws, path, 0.7)  # another threshold: filtered, not re-anchored
    assert cache.stats.anchored == 2


def test_append_elsewhere_reanchors_nothing(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = str(project / INVOICE)
    before = cache.spans(ws, path, 0.0)
    log = append_events(project, [fact_event("fact_tax", "tax thing", f"{TAX}:42")])
    changes = ws.apply_changes([str(log)])
    assert TAX in changes.fact_files and INVOICE not in changes.fact_files
    after = cache.spans(ws, path, 0.0)
    assert seen(after) == seen(before) == fresh(ws, path)
    assert cache.stats.anchored == 2 and cache.stats.reused == 2  # rechecked by identity, nothing anchored again
    assert after is before  # not even rebuilt


def test_groups_are_kept_until_the_file_facts_change(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = str(project / INVOICE)
    groups = cache.groups(ws, path, 0.0)
    assert cache.groups(ws, path, 0.0) is groups and list(groups) == [(28, 29), (16, 16)]
    assert list(cache.groups(ws, path, 0.7)) == [(28, 29)]
    ws.apply_changes([str(append_events(project, [fact_event("fact_new", "new", f"{INVOICE}:28-29")]))])
    regrouped = cache.groups(ws, path, 0.0)
    assert regrouped is not groups and [s.fact.id for s in regrouped[(28, 29)]] == [INVOICE_FACT, "fact_new"]
    assert regrouped == group_by_range(fact_spans(ws, path, 0.0))


def test_append_on_this_file_anchors_only_the_new_fact(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = str(project / INVOICE)
    cache.spans(ws, path, 0.0)
    log = append_events(project, [fact_event("fact_new", "new", f"{INVOICE}:3", confidence=0.99)])
    ws.apply_changes([str(log)])
    after = cache.spans(ws, path, 0.0)
    assert "fact_new" in [s.fact.id for s in after]
    assert seen(after) == fresh(ws, path)
    assert cache.stats.anchored == 3 and cache.stats.reused == 2


def test_forgotten_fact_leaves_the_spans(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = str(project / INVOICE)
    cache.spans(ws, path, 0.0)
    forget = {"type": "forget", "id": "019e1d0f-4300-7465-88da-25cd264dee99", "namespace": "project/facts",
              "predicate": {"id": INVOICE_FACT}, "forgotten_ids": [INVOICE_FACT],
              "forgotten_at": "2026-05-12T09:14:03.512848123+00:00"}
    ws.apply_changes([str(append_events(project, [forget]))])
    after = cache.spans(ws, path, 0.0)
    assert [s.fact.id for s in after] == [LATE_FEE_FACT] and seen(after) == fresh(ws, path)


def test_saved_source_reanchors_that_file(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    src = project / INVOICE
    cache.spans(ws, str(src), 0.0)
    src.write_text("# moved down\n" + src.read_text())
    after = cache.spans(ws, str(src), 0.0)
    assert after[0].anchor.state == "moved" and (after[0].anchor.start, after[0].anchor.end) == (29, 30)
    assert seen(after) == fresh(ws, str(src)) and cache.stats.anchored == 4


def test_another_workspace_starts_afresh_and_size_is_bounded(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache(max_files=2)
    for rel in (INVOICE, TAX, "src/api/client.ts", "src/api/webhooks.ts"):
        assert seen(cache.spans(ws, str(project / rel), 0.0)) == fresh(ws, str(project / rel))
    assert len(cache) == 2  # least recently used files dropped
    other = Workspace.load(str(project))
    spans = cache.spans(other, str(project / INVOICE), 0.0)
    assert len(cache) == 1 and all(s.fact is other.facts_by_id[s.fact.id] for s in spans)


_LINE = st.lists(st.sampled_from(["def", "x", "=", "1", "return", "(", ")", "  ", "\t", "a b"]), max_size=5).map("".join)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINE, max_size=60), start=st.integers(-3, 70), length=st.integers(0, 8),
       snippet_at=st.integers(0, 70), snippet_len=st.integers(0, 4), spaced=st.booleans())
def test_anchor_with_the_file_normalised_once_is_the_same_anchor(lines, start, length, snippet_at, snippet_len, spaced):
    """The span cache normalises a file once for all its anchors: same answer as each anchor alone."""
    snippet = "\n".join(lines[snippet_at:snippet_at + snippet_len])
    if spaced:
        snippet = "  " + snippet.replace(" ", "   ") + " \n"
    alone = anchor(lines, start, start + length, snippet)
    assert anchor(lines, start, start + length, snippet, "", normalized_lines(lines)) == alone
    assert anchor(lines, start, start + length, snippet, "", normalized_lines(lines[:-1])) == alone  # wrong length: ignored


def test_many_facts_on_one_file_anchor_as_one_fact_alone(project):
    """Enough facts on a file to normalise it once: every span still equals its anchor computed alone."""
    src = project / "src/many.py"
    body = [f"    value_{i} = compute({i})" for i in range(120)]
    src.write_text("\n".join(body) + "\n")
    events = [fact_event(f"fact_many_{i}", f"claim {i}", f"src/many.py:{i + 1}-{i + 2}",
                         snippet=body[(i * 7) % 120].strip() if i % 3 else None) for i in range(40)]
    ws = Workspace.load(str(project))
    ws.apply_changes([str(append_events(project, events))])
    spans = FactSpanCache().spans(ws, str(src), 0.0)
    assert len(spans) == 40
    lines = src.read_text().splitlines()
    for s in spans:
        rng = s.evidence.range
        assert s.anchor == anchor(lines, rng.start, rng.end, s.evidence.snippet)
    assert {s.anchor.state for s in spans} >= {"ok", "moved", "unchecked"}


class _CountingFacts(dict):
    """The model's facts, counting lookups: what a recheck touches."""
    lookups = 0

    def get(self, key, default=None):
        type(self).lookups += 1
        return super().get(key, default)


def test_file_stamp_moves_only_with_the_file_facts_and_spares_the_recheck(project):
    ws = Workspace.load(str(project))
    cache = FactSpanCache()
    path = str(project / INVOICE)
    before = cache.spans(ws, path, 0.0)
    stamp, tax_stamp = ws.fact_file_stamps[INVOICE], ws.fact_file_stamps[TAX]
    ws.facts = _CountingFacts(ws.facts)
    # a fact on another file: this file's stamp stays, its facts are not even looked at
    ws.apply_changes([str(append_events(project, [fact_event("fact_tax", "tax thing", f"{TAX}:42")]))])
    assert ws.fact_file_stamps[INVOICE] == stamp and ws.fact_file_stamps[TAX] != tax_stamp
    assert cache.spans(ws, path, 0.0) is before and _CountingFacts.lookups == 0
    # a new fact, the same fact stored again, a forgotten fact: each moves the stamp
    for event in (fact_event("fact_new", "new", f"{INVOICE}:3"), fact_event("fact_new", "new again", f"{INVOICE}:4"),
                  {"type": "forget", "id": "019e1d0f-4300-7465-88da-25cd264dee98", "namespace": "project/facts",
                   "predicate": {"id": INVOICE_FACT}, "forgotten_ids": [INVOICE_FACT],
                   "forgotten_at": "2026-05-12T09:14:03.512848123+00:00"}):
        seen_stamp = ws.fact_file_stamps[INVOICE]
        ws.apply_changes([str(append_events(project, [event]))])
        assert ws.fact_file_stamps[INVOICE] != seen_stamp
        assert seen(cache.spans(ws, path, 0.0)) == fresh(ws, path)
    ids = [s.fact.id for s in cache.spans(ws, path, 0.0)]
    assert INVOICE_FACT not in ids and LATE_FEE_FACT in ids and "fact_new" in ids
    # a rescan re-indexes every fact under new stamps: the cache checks again and agrees
    ws.rescan()
    assert seen(cache.spans(ws, path, 0.0)) == fresh(ws, path)
