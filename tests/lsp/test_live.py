"""Live updates: a running agent appends to events.jsonl and rewrites a checkpoint; the client hears of it."""

from __future__ import annotations

import json
import time

from lsprotocol import types

from harn_ls.formats.facts import fact_store_event, normalize_fact
from harn_ls.formats.harn_json import serde_compact
from tests.lsp.conftest import make_client_fixture, open_file

client = make_client_fixture()


def new_fact_line(claim: str, ref: str) -> str:
    env = normalize_fact({"kind": "claim", "claim": claim, "confidence": 0.7,
                          "evidence": [{"kind": "file_range", "ref": ref}], "provenance": {"agent": "test"}},
                         now="2026-11-29T10:00:00.000Z")
    return serde_compact(fact_store_event(env, "project/facts", "2026-11-29T10:00:00.100000+00:00"))


async def test_append_and_checkpoint_write_are_pushed(client):
    rec = client.rec
    project = client.project
    doc_uri = "harn-state:/memory/project/facts.md"
    before = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc_uri))).text
    ck_before = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/checkpoints/ingest.md"))).text
    src_uri = open_file(client, project / "src/billing/tax.py")
    rec.tree_changed.clear()
    lens_refresh_before = rec.lens_refresh

    started = time.perf_counter()
    events = project / ".harn/memory/project/facts/events.jsonl"
    with open(events, "a") as fh:
        fh.write(new_fact_line("Tax rounding happens after discounts", "src/billing/tax.py:1-3") + "\n")
    await rec.wait_for(lambda: doc_uri in rec.content_refresh, 10)
    latency = time.perf_counter() - started
    assert latency < 2.0, latency
    assert any(t["view"] == "memory" for t in rec.tree_changed)
    await rec.wait_for(lambda: rec.lens_refresh > lens_refresh_before, 5)
    after = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc_uri))).text
    assert "Tax rounding" not in before and "fact:claim:" in after and after != before
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=src_uri), position=types.Position(line=1, character=0)))
    assert hover is not None and "Tax rounding happens after discounts" in hover.contents.value

    # Harn rewrites checkpoint files in place (truncate + write), not atomically.
    ckpt = project / ".harn/checkpoints/ingest.json"
    data = json.loads(ckpt.read_text())
    data["brand_new_stage"] = {"ok": True}
    with open(ckpt, "w") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=True))
    await rec.wait_for(lambda: "harn-state:/checkpoints/ingest.md" in rec.content_refresh, 10)
    ck_after = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/checkpoints/ingest.md"))).text
    assert "brand_new_stage" in ck_after and "brand_new_stage" not in ck_before
    assert any(t["view"] == "checkpoints" for t in rec.tree_changed)


async def test_torn_line_waits_for_newline(client):
    rec = client.rec
    project = client.project
    events = project / ".harn/memory/project/facts/events.jsonl"
    line = new_fact_line("Half written then completed", "src/billing/tax.py:5-6")
    doc_uri = "harn-state:/memory/project/facts.md"
    await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc_uri))
    with open(events, "a") as fh:
        fh.write(line[:40])
    time.sleep(0.6)
    text = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc_uri))).text
    assert "Half written" not in text
    rec.content_refresh.clear()
    with open(events, "a") as fh:
        fh.write(line[40:] + "\n")
    await rec.wait_for(lambda: doc_uri in rec.content_refresh, 10)
    text = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc_uri))).text
    assert "fact:claim:" in text
    index = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri="harn-state:/index.md"))).text
    assert "Half written then completed" in index
    assert "HL-JSONL-001" not in index  # the torn prefix was never parsed as a line




async def test_status_comes_before_what_makes_the_client_ask(client):
    """After a batch, harn/status is sent before harn/treeChanged, the code-lens refresh and the document
    refresh: a client asks for things as soon as it hears those, and its requests should not wait for
    the status to be counted."""
    rec = client.rec
    project = client.project
    doc_uri = "harn-state:/memory/project/facts.md"
    await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc_uri))
    open_file(client, project / "src/billing/tax.py")
    await rec.wait_for(lambda: rec.status, 10)
    rec.order.clear()
    with open(project / ".harn/memory/project/facts/events.jsonl", "a") as fh:
        fh.write(new_fact_line("Refunds are rounded like charges", "src/billing/tax.py:1-3") + "\n")
    asks = ("harn/treeChanged", types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH)
    await rec.wait_for(lambda: all(m in rec.order for m in asks) and "harn/status" in rec.order, 10)
    first_status = rec.order.index("harn/status")
    for method in asks:
        assert first_status < rec.order.index(method), rec.order
