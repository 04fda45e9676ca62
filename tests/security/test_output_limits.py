"""Issue 12 item 6: every response is at most 1 MB, whatever the project holds.

The attack: a fact whose claim is 5 MB (and a 5 MB checkpoint value). Before the caps a hover
on the fact's lines was 5.2 MB per fact and the `harn/tree` page of facts 5.2 MB (tooltips held
whole claims); the issue measured 15 MB with three such facts. Now a long value is cut with
"… N more bytes" and a link to where the rest is."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from harn_ls.formats.problems import Problem
from harn_ls.lsp.diagnostics import to_diagnostic, within_budget
from harn_ls.lsp.symbols import search_symbols
from harn_ls.lsp.tree import ITEM_BYTES, tree_options
from harn_ls.model.fact_spans import fact_spans
from harn_ls.model.workspace import Workspace
from harn_ls.render import make_uri, render_uri
from harn_ls.render.hover import hover_markdown
from harn_ls.render.limits import MAX_RESPONSE_BYTES, MESSAGE_BYTES, TOOLTIP_BYTES
from harn_ls.render.tree_items import tree_items
from harn_ls.util.utf8 import utf8_len
from tests.security.hostile_data import BIG, RUN_ID, TRANSCRIPT_ID, make_hostile_project

MB = MAX_RESPONSE_BYTES
_LINKS = re.compile(r"\]\((harn-state:[^)]+)\)")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Workspace:
    proj = make_hostile_project(tmp_path_factory.mktemp("out"))
    return Workspace.load(str(proj))


def _bytes(obj) -> int:
    return len(orjson.dumps(obj))


def test_the_attack_is_loaded(hostile):
    fact = hostile.facts_by_id["fact_huge_claim"]
    assert utf8_len(fact.claim) >= BIG  # the 5 MB claim really is in the model


def test_hover_on_a_five_megabyte_claim(hostile):
    path = str(Path(hostile.root) / "src/billing/invoice.py")
    spans = [s for s in fact_spans(hostile, path, 0.0) if s.anchor.start <= 28 <= s.anchor.end]
    assert any(s.fact.id == "fact_huge_claim" for s in spans)
    md = hover_markdown(spans)
    assert utf8_len(md) < 20_000  # was 5.2 MB for this one fact
    assert re.search(r"\*… [\d,]+ more bytes\* — \[open the fact\]\(harn-state:/facts/fact_huge_claim\.md\)", md)
    # a hover of many facts stays under the response cap and says how many were left out
    many = hover_markdown(spans * 40)
    assert utf8_len(many) <= MB and "more fact(s) on these lines" in many


def test_fact_document_cuts_the_claim_and_points_at_its_line(hostile):
    text = render_uri(hostile, make_uri("facts", "fact_huge_claim"))
    assert utf8_len(text) <= 100_000  # before: cut only by the 1 MB backstop, in the middle of the claim
    m = re.search(r"\*… ([\d,]+) more bytes\* — the whole value is in \[([^\]]+)\]\((file://[^)]+)\)", text)
    assert m, text[-2000:]
    assert m.group(2).startswith("\\.harn/memory/project/facts/events\\.jsonl:")
    assert m.group(3).endswith("#L" + m.group(2).rsplit(":", 1)[1])


def test_checkpoint_document_with_a_five_megabyte_value(hostile):
    text = render_uri(hostile, make_uri("checkpoints", "ingest"))
    assert utf8_len(text) <= MB
    assert "more bytes" in text and "more items>" in text


def test_every_document_is_at_most_one_megabyte(hostile):
    seen, todo = set(), [make_uri("index"), make_uri("runs", RUN_ID), make_uri("transcripts", TRANSCRIPT_ID)]
    while todo:
        uri = todo.pop()
        if uri in seen or len(seen) > 300:
            continue
        seen.add(uri)
        text = render_uri(hostile, uri)
        assert utf8_len(text) <= MB, uri
        todo.extend(u for u in _LINKS.findall(text) if "?file=" not in u)
    assert {"harn-state:/facts/fact_huge_claim.md", "harn-state:/checkpoints/ingest.md"} <= seen


def test_tree_pages_are_at_most_one_megabyte(hostile):
    items = tree_items(hostile, "memory", "fk:observation", tree_options())
    huge = next(it for it in items if it["id"] == "fact:fact_huge_claim")
    assert utf8_len(huge["label"]) <= 200 and utf8_len(huge["tooltip"]) <= TOOLTIP_BYTES + 200
    assert "more bytes" in huge["tooltip"]
    assert _bytes({"items": items[:200]}) < 100_000  # was 5.2 MB
    for view, parent in (("memory", None), ("memory", "ns:project/facts"), ("checkpoints", "ckpt:ingest"),
                         ("skills", "proposals"), ("runs", None)):
        page = tree_items(hostile, view, parent, tree_options())[:200]
        assert _bytes({"items": page}) <= MB
        assert all(_bytes(it) <= ITEM_BYTES for it in page)


def test_tree_item_with_a_huge_id_becomes_a_placeholder(hostile, tmp_path):
    proj = make_hostile_project(tmp_path, big=False, spoof=False)
    ckpt = proj / ".harn/checkpoints/ingest.json"
    data = orjson.loads(ckpt.read_bytes())
    data["k" * 200_000] = {"value": 1}  # a stage key of 200 KB: the item id and data carry it whole
    ckpt.write_bytes(orjson.dumps(data))
    ws = Workspace.load(str(proj))
    items = tree_items(ws, "checkpoints", "ckpt:ingest", tree_options())
    assert all(_bytes(it) <= ITEM_BYTES for it in items)
    assert any(it["contextValue"] == "tooLarge" and "not shown" in it["description"] for it in items)


def test_workspace_symbols(hostile):
    syms = search_symbols(hostile, "invoice totals rounded")
    assert any("Invoice totals" in s.name for s in syms)
    assert all(utf8_len(s.name) <= 80 for s in syms)
    total = sum(utf8_len(s.name) + utf8_len(s.container_name or "") + utf8_len(s.location.uri) for s in syms)
    assert total <= MB


def test_diagnostic_messages_are_capped():
    d = to_diagnostic(Problem("/p/x.jsonl", 3, "HL-X-001", "bad value " + "x" * BIG))
    assert utf8_len(d.message) <= MESSAGE_BYTES and d.message.endswith("more bytes")
    many = within_budget([d] * 1000)
    assert sum(utf8_len(x.message) for x in many) <= MB
    assert many[-1].code == "HL-LIMIT-001" and "more problem(s)" in many[-1].message
