"""render/symbols.py without a server: what workspace/symbol finds, in which order, and its limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from harn_ls.lsp.symbols import search_symbols as lsp_search_symbols
from harn_ls.model.workspace import Workspace
from harn_ls.render import symbols as S
from harn_ls.render.symbols import search_symbols
from tests.helpers.views import INVOICE, append_events, copy_sample, fact_event


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_sample(tmp_path_factory.mktemp("symbols"))


@pytest.fixture(scope="module")
def ws(project) -> Workspace:
    return Workspace.load(str(project))


def test_recall_hits_first_in_recall_order(ws):
    hits = [h for h in ws.recall.recall("invoice", k=S.RECALL_K).hits if h.namespace != S.PATTERN_NAMESPACE]
    syms = search_symbols(ws, "invoice")
    assert len(syms) >= len(hits) > 2
    for sym, hit in zip(syms, hits, strict=False):
        fact = ws.facts.get((hit.namespace, hit.seq))
        if fact is not None:
            assert sym.kind == S.FACT and sym.container == f"fact · {fact.kind} {fact.confidence:g}"
        else:
            assert (sym.kind, sym.name, sym.uri) == (S.MEMORY, hit.key, f"harn-state:/memory/{hit.namespace}.md")


def test_files_only_are_chosen_before_the_limit(ws, monkeypatch):
    """A client that cannot open harn-state: documents: the limit counts symbols at files only, so
    state documents found first do not crowd them out."""
    monkeypatch.setattr(S, "LIMIT", len(ws.facts))  # an empty query: the facts' documents fill the limit
    assert not any(v.path for v in search_symbols(ws, ""))
    at_files = search_symbols(ws, "", files_only=True)
    assert at_files and all(v.path for v in at_files)
    assert {v.kind for v in at_files} >= {S.SKILL}


def test_fact_opens_at_its_evidence(ws, project):
    top = search_symbols(ws, "rounded cents")[0]
    assert top.kind == S.FACT and top.name.startswith("Line-item subtotals are rounded")
    assert (top.path, top.line, top.uri) == (str(project / INVOICE), 27, "")  # 0-based line of evidence 28-29


def test_names_match_by_substring_case_insensitive(ws):
    assert [(s.kind, s.name) for s in search_symbols(ws, "INGEST") if s.kind == S.RUN] == [(S.RUN, "ingest")]
    skills = [s for s in search_symbols(ws, "Deploy") if s.kind == S.SKILL]
    assert skills[0].name == "deploy" and skills[0].container == "skill · project" and skills[0].path.endswith("SKILL.md")
    props = [s for s in search_symbols(ws, "stripe") if s.kind == S.PROPOSAL]
    assert [(s.name, s.uri) for s in props] == [("Reconcile Stripe Payouts Ledger",
                                                 "harn-state:/proposals/prompt-2629ccc60808.md")]
    assert search_symbols(ws, "zzzz-no-such-thing") == []


def test_pattern_learning_records_are_not_symbols(ws):
    # the pattern-learning log holds records that recall finds; they are bookkeeping, not symbols
    hits = ws.recall.recall("grep read file edit", k=S.RECALL_K).hits
    assert any(h.namespace == S.PATTERN_NAMESPACE for h in hits)
    assert not any(s.kind == S.MEMORY and "pattern-learning" in s.container for s in search_symbols(ws, "grep read file edit"))


def test_empty_query_lists_facts_then_every_name(ws):
    syms = search_symbols(ws, "  ")
    facts = [s for s in syms if s.kind == S.FACT]
    assert len(facts) == len(ws.facts) and all(s.uri.startswith("harn-state:/facts/") for s in facts)
    assert {s.kind for s in syms} >= {S.FACT, S.SKILL, S.PROPOSAL, S.RUN}
    assert syms.index(facts[-1]) == len(facts) - 1  # facts first


def test_at_most_limit_symbols_and_capped_names(tmp_path):
    project = copy_sample(tmp_path)
    claim = "Invoice rounding\nsecond line [x](command:evil) " + "word " * 100
    append_events(project, [fact_event(f"fact_n{i:04d}", claim + str(i), f"{INVOICE}:3", confidence=0.5)
                            for i in range(S.LIMIT + 50)])
    ws = Workspace.load(str(project))
    assert len(search_symbols(ws, "")) == S.LIMIT
    syms = search_symbols(ws, "invoice rounding")
    assert len(syms) <= S.LIMIT
    hostile = [s for s in syms if s.name.startswith("Invoice rounding")]
    assert hostile and all("\n" not in s.name and len(s.name.encode()) <= 80 for s in hostile)


def test_lsp_translation_keeps_order_and_targets(ws, project):
    views = search_symbols(ws, "invoice")
    lsp = lsp_search_symbols(ws, "invoice")
    assert [s.name for s in lsp] == [v.name for v in views]
    first = lsp[0]
    assert first.location.uri.startswith("file://") and first.location.uri.endswith("/src/billing/invoice.py")
    assert first.location.range.start.line == views[0].line
    memory = next(s for s in lsp if s.container_name.startswith("memory · "))
    assert memory.location.uri.startswith("harn-state:/memory/")
    assert any(v.path.endswith(INVOICE) and v.line == 27 for v in views)
