"""Two workspace folders: one Workspace each, hovers routed by file, status per root."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import REPO, SAMPLE, _as_dict, execute_command

LEGACY = REPO / "fixtures" / "legacy-project"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    shutil.copytree(LEGACY, a)  # the first folder (the default) has no proposals, facts or checkpoints
    shutil.copytree(SAMPLE, b)
    statuses: list[dict] = []

    @lsp_client.feature("harn/status")
    def _status(params):
        statuses.append(_as_dict(params))

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"),
        workspace_folders=[types.WorkspaceFolder(uri=a.as_uri(), name="a"), types.WorkspaceFolder(uri=b.as_uri(), name="b")]))
    lsp_client.statuses, lsp_client.a, lsp_client.b = statuses, a, b
    yield
    await lsp_client.shutdown_session()


async def test_each_folder_has_its_own_model(client):
    import asyncio

    for _ in range(600):  # both folders load; generous for a loaded 2-core machine
        if {s["root"] for s in client.statuses} >= {str(client.a), str(client.b)}:
            break
        await asyncio.sleep(0.05)
    assert {s["root"] for s in client.statuses} >= {str(client.a), str(client.b)}
    by_root = {s["root"]: s for s in client.statuses}
    assert by_root[str(client.b)]["counts"]["facts"] == 7
    assert by_root[str(client.a)]["counts"]["facts"] == 0
    tree_a = await client.protocol.send_request_async("harn/tree", {"view": "checkpoints", "root": str(client.a)})
    assert list(tree_a.items) == []
    tree_b = await client.protocol.send_request_async("harn/tree", {"view": "checkpoints", "root": str(client.b)})
    assert len(tree_b.items) == 2
    # documents and commands find the folder that holds the proposal, not just the first folder
    doc = await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/proposals/prompt-2629ccc60808.md"))
    assert doc.text.startswith("# Proposal")
    result = await execute_command(client, types.ExecuteCommandParams(
        command="harnState.acceptProposal", arguments=[{"id": "prompt-2629ccc60808"}]))
    assert result["ok"] is True, result
    assert (client.b / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md").is_file()
    assert not (client.a / ".claude").exists()
    uri = (client.b / "src/billing/invoice.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=(client.b / "src/billing/invoice.py").read_text())))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=27, character=0)))
    assert hover is not None and "rounded to cents" in hover.contents.value


async def test_removing_a_folder_clears_its_problems(client):
    import asyncio

    published: dict[str, list] = {}
    client.protocol.fm.features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diags(params: types.PublishDiagnosticsParams):
        published[params.uri] = list(params.diagnostics)

    for _ in range(600):
        if {s["root"] for s in client.statuses} >= {str(client.a), str(client.b)}:
            break
        await asyncio.sleep(0.05)
    await execute_command(client, types.ExecuteCommandParams(command="harnState.rescan", arguments=[{}]))
    for _ in range(1200):  # up to a minute: generous for a loaded 2-core machine
        if any(u.startswith(client.b.as_uri() + "/") and d for u, d in published.items()):
            break
        await asyncio.sleep(0.05)
    with_problems = {u for u, d in published.items() if d and u.startswith(client.b.as_uri() + "/")}
    assert with_problems, "the sample folder has problems (skills without `short`, a tampered signature...)"
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[types.WorkspaceFolder(uri=client.b.as_uri(), name="b")])))
    for _ in range(1200):  # up to a minute: generous for a loaded 2-core machine
        if all(published[u] == [] for u in with_problems):
            break
        await asyncio.sleep(0.05)
    assert {u: len(published[u]) for u in with_problems} == {u: 0 for u in with_problems}


async def test_a_request_waiting_in_the_second_folder_is_found_there(client):
    """A request of the second folder's event log: its document comes from the folder that holds it
    (harn-state:/hitl/<id>.md names no folder), not from the first one."""
    import asyncio

    from tests.lsp.test_hitl import PENDING

    for _ in range(600):
        if {s["root"] for s in client.statuses} >= {str(client.a), str(client.b)}:
            break
        await asyncio.sleep(0.05)
    uri = f"harn-state:/hitl/{PENDING}.md"
    doc = await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))
    assert "deploy billing-api to production" in doc.text
