"""`harnState.*` settings: from initializationOptions, workspace/didChangeConfiguration and a
workspace/configuration pull, and what each one changes (hover, lenses, documents)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.helpers.configuration_requests import record_configuration_requests
from tests.lsp.conftest import HARN_DOUBLE, Recorder, _as_dict, _fix_code_action_union, make_client_fixture, open_file

INGEST_RUN = "run_019dfd98-73c0-704c-9bb0-e3d1289d2568"  # its transcript has one private_reasoning event
PRIVATE_TEXT = "The spike lines up with the webhook retries from the sandbox incident."
HIDDEN_NOTICE = "private reasoning hidden (setting `harnState.transcripts.showPrivate`)"
LOW_FACT = "fact_cd5cbe83cf038f756167ec14bc59b59c"  # observation 0.6, src/billing/invoice.py:16
HYPOTHESIS = "fact_c81fa97ff87248b88baa38a7970d3be5"  # hypothesis 0.3, src/api/webhooks.ts:56


def options(**harn_state) -> dict:
    return {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), **harn_state}}, "workspaceTrusted": True}


client = make_client_fixture()
confident = make_client_fixture(options(facts={"minConfidence": 0.7}))
no_fact_lenses = make_client_fixture(options(codeLens={"facts": False}))
no_ckpt_lenses = make_client_fixture(options(codeLens={"checkpoints": False}))
show_private = make_client_fixture(options(transcripts={"showPrivate": True}))
hide_private = make_client_fixture(options(transcripts={"showPrivate": False}))


# What the client answers to the server's workspace/configuration pull (section "harnState").
PULLED = {"facts": {"minConfidence": 0.7}, "codeLens": {"checkpoints": False},
          "transcripts.showPrivate": True,  # VS Code style dotted key
          "probes": {"timeoutSeconds": "soon"}}  # invalid: ignored with a warning, the rest still applies


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"]))
async def pulled(lsp_client: LanguageClient, project: Path):
    """Like conftest's fixture, but the client holds `harnState` configuration before `initialized`,
    so the server's pull returns it (pytest-lsp answers workspace/configuration from set_configuration)."""
    rec = Recorder(lsp_client)
    _fix_code_action_union(lsp_client)

    @lsp_client.feature("harn/status")
    def _status(params):
        rec.status.append(_as_dict(params))

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(params):
        rec.lens_refresh += 1
        return None

    pulls = record_configuration_requests(lsp_client)  # (scopeUri, section) of each item the server asks for

    lsp_client.set_configuration(PULLED, section="harnState")
    lsp_client.init_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        root_uri=project.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="sample")],
        initialization_options=options(),
    ))
    await rec.wait_for(lambda: rec.status, 20)
    lsp_client.rec = rec
    lsp_client.project = project
    lsp_client.pulls = pulls
    yield
    await lsp_client.shutdown_session()


# ---------------------------------------------------------------- helpers
async def hover(client, uri: str, line: int):
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=2)))


async def lens_lines(client, uri: str) -> set[int]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return {lens.range.start.line for lens in lenses or []}


async def resolved_titles(client, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return [(await client.code_lens_resolve_async(lens)).command.title for lens in lenses or []]


async def content(client, uri: str) -> str:
    return (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))).text


async def transcript_uri(client) -> str:
    import re

    run = await content(client, f"harn-state:/runs/{INGEST_RUN}.md")
    return re.search(r"\((harn-state:/transcripts/[^)]+)\)", run).group(1)


def open_sources(client) -> tuple[str, str]:
    return (open_file(client, client.project / "src/billing/invoice.py"),
            open_file(client, client.project / "src/api/webhooks.ts", "typescript"))


async def assert_only_confident_facts(client) -> None:
    invoice, webhooks = open_sources(client)
    assert await hover(client, invoice, 15) is None  # observation 0.6 (stale)
    assert await hover(client, webhooks, 55) is None  # hypothesis 0.3
    kept = await hover(client, invoice, 27)
    assert kept is not None and "confidence **0.9**" in kept.contents.value
    decision = await hover(client, webhooks, 30)
    assert decision is not None and "confidence **0.95**" in decision.contents.value
    assert "0.3" not in decision.contents.value
    inv_lines = await lens_lines(client, invoice)
    assert 27 in inv_lines and 15 not in inv_lines
    wh_lines = await lens_lines(client, webhooks)
    assert 26 in wh_lines and 55 not in wh_lines
    titles = await resolved_titles(client, invoice)
    assert titles == ["1 fact · observation 0.9"]


# ------------------------------------------------------ initializationOptions
async def test_defaults_show_every_fact(client):
    invoice, webhooks = open_sources(client)
    assert await hover(client, invoice, 15) is not None
    low = await hover(client, webhooks, 55)
    assert low is not None and "confidence **0.3**" in low.contents.value
    assert {15, 27} <= await lens_lines(client, invoice)
    assert 55 in await lens_lines(client, webhooks)


async def test_min_confidence_from_initialization_options(confident):
    await assert_only_confident_facts(confident)
    # documents follow the same threshold: the index lists no fact under 0.7
    index = await content(confident, "harn-state:/index.md")
    assert f"harn-state:/facts/{LOW_FACT}.md" not in index and f"harn-state:/facts/{HYPOTHESIS}.md" not in index
    assert "harn-state:/facts/fact_153980388e61563c421fc64bc690022c.md" in index  # decision 0.95


async def test_fact_lenses_off_keeps_checkpoint_lenses(no_fact_lenses):
    client = no_fact_lenses
    invoice, webhooks = open_sources(client)
    assert await lens_lines(client, invoice) == set()
    assert await lens_lines(client, webhooks) == set()
    # hover is not a lens: still there
    assert await hover(client, invoice, 27) is not None
    harn = open_file(client, client.project / "pipelines/ingest.harn", "harn")
    titles = await resolved_titles(client, harn)
    assert titles and "cached" in titles
    assert any(t.startswith("cached · keyed sha256:28234a10") for t in titles)


async def test_checkpoint_lenses_off(no_ckpt_lenses):
    client = no_ckpt_lenses
    for name in ("ingest", "review", "release"):
        harn = open_file(client, client.project / f"pipelines/{name}.harn", "harn")
        assert await lens_lines(client, harn) == set(), name
    invoice, _ = open_sources(client)
    assert {15, 27} <= await lens_lines(client, invoice)


# ------------------------------------------------- didChangeConfiguration
async def test_did_change_configuration_applies_live(client):
    rec = client.rec
    invoice, webhooks = open_sources(client)
    assert 15 in await lens_lines(client, invoice)
    index_before = await content(client, "harn-state:/index.md")
    assert f"harn-state:/facts/{LOW_FACT}.md" in index_before

    before = rec.lens_refresh
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"facts": {"minConfidence": 0.7}}}))
    await rec.wait_for(lambda: rec.lens_refresh > before, 5)
    await assert_only_confident_facts(client)
    assert f"harn-state:/facts/{LOW_FACT}.md" not in await content(client, "harn-state:/index.md")

    # a partial update merges: lenses switch off, the threshold set above stays
    before = rec.lens_refresh
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"codeLens.facts": False}}))
    await rec.wait_for(lambda: rec.lens_refresh > before, 5)
    assert await lens_lines(client, invoice) == set()
    assert await hover(client, invoice, 15) is None

    # and back
    before = rec.lens_refresh
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"facts": {"minConfidence": 0}, "codeLens": {"facts": True}}}))
    await rec.wait_for(lambda: rec.lens_refresh > before, 5)
    assert {15, 27} <= await lens_lines(client, invoice)
    assert await hover(client, webhooks, 55) is not None


async def test_invalid_value_is_ignored(client):
    rec = client.rec
    invoice, _ = open_sources(client)
    before = rec.lens_refresh
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"facts": {"minConfidence": "high"}, "codeLens": {"checkpoints": False}}}))
    await rec.wait_for(lambda: rec.lens_refresh > before, 5)
    await rec.wait_for(lambda: any("minConfidence" in m.message for m in client.log_messages), 5)
    assert await hover(client, invoice, 15) is not None  # threshold unchanged
    harn = open_file(client, client.project / "pipelines/ingest.harn", "harn")
    assert await lens_lines(client, harn) == set()  # the valid part applied


async def test_did_change_configuration_without_settings_pulls(client):
    """VS Code sends `settings: null` and expects the server to pull."""
    rec = client.rec
    invoice, _ = open_sources(client)
    assert 15 in await lens_lines(client, invoice)
    client.set_configuration({"facts": {"minConfidence": 0.7}}, section="harnState")
    before = rec.lens_refresh
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await rec.wait_for(lambda: rec.lens_refresh > before, 5)
    await assert_only_confident_facts(client)


# -------------------------------------------------- workspace/configuration
async def test_configuration_pulled_at_initialized(pulled):
    client = pulled
    assert (None, "harnState") in client.pulls
    await assert_only_confident_facts(client)
    harn = open_file(client, client.project / "pipelines/ingest.harn", "harn")
    assert await lens_lines(client, harn) == set()
    text = await content(client, await transcript_uri(client))
    assert PRIVATE_TEXT in text  # dotted `transcripts.showPrivate` applied too
    assert any("timeoutSeconds" in m.message and "ignored" in m.message for m in client.log_messages)


# --------------------------------------------------------------- showPrivate
async def test_private_reasoning_shown(show_private):
    text = await content(show_private, await transcript_uri(show_private))
    assert PRIVATE_TEXT in text
    assert HIDDEN_NOTICE not in text and "private reasoning event(s) hidden" not in text


async def test_private_reasoning_hidden(hide_private):
    text = await content(hide_private, await transcript_uri(hide_private))
    assert PRIVATE_TEXT not in text
    assert "webhook retries from the sandbox" not in text
    assert HIDDEN_NOTICE in text
    assert "1 private reasoning event(s) hidden." in text


async def test_show_private_switched_live(client):
    uri = await transcript_uri(client)
    assert PRIVATE_TEXT not in await content(client, uri)
    before = client.rec.lens_refresh
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"transcripts": {"showPrivate": True}}}))
    await client.rec.wait_for(lambda: client.rec.lens_refresh > before, 5)
    assert PRIVATE_TEXT in await content(client, uri)


async def test_config_change_refreshes_open_documents(client):
    """An open index lists facts by minConfidence; raising it live asks the client to re-fetch."""
    from lsprotocol import types as t

    uri = "harn-state:/index.md"
    before = (await client.workspace_text_document_content_async(t.TextDocumentContentParams(uri=uri))).text
    assert "Duplicate invoices come from retried webhook" in before
    client.rec.content_refresh.clear()
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"harnState": {"facts": {"minConfidence": 0.5}}}))
    await client.rec.wait_for(lambda: uri in client.rec.content_refresh, 10)
    after = (await client.workspace_text_document_content_async(t.TextDocumentContentParams(uri=uri))).text
    assert "Duplicate invoices come from retried webhook" not in after
