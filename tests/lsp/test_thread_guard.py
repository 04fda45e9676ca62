"""The model is only read on its project's worker thread.

tests/conftest.py sets HARN_LS_THREAD_CHECK=1, so every server a test starts makes any read of a
Workspace attribute off the project thread log "model touched off its thread" and raise. Here real
requests (hover, lenses, tree, documents, actions, symbols, commands; one and two folders) run and
must neither fail nor log that; and the guard itself is shown to catch a read on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from harn_ls.lsp.project import ModelThreadError, Project
from tests.lsp.conftest import REPO, SAMPLE, copy_sample, execute_command, make_client_fixture, open_file

client = make_client_fixture()
OFF_THREAD = "model touched off its thread"


def _violations(c: LanguageClient) -> list[str]:
    return [m.message for m in c.log_messages if OFF_THREAD in m.message]


def _plain(obj):
    return obj._asdict() if hasattr(obj, "_asdict") else obj


async def _tree_everything(c: LanguageClient, root: str | None) -> list[str]:
    """Every node of every view (a few levels deep); returns the document URIs they link."""
    uris = []
    for view in ("runs", "checkpoints", "memory", "skills"):
        todo = [None]
        for _ in range(3):
            nxt = []
            for parent in todo:
                params = {"view": view, "page": 0, **({"parent": parent} if parent else {}),
                          **({"root": root} if root else {})}
                result = _plain(await c.protocol.send_request_async("harn/tree", params))
                for item in (_plain(i) for i in result["items"]):
                    if item.get("uri"):
                        uris.append(item["uri"])
                    if item.get("hasChildren"):
                        nxt.append(item["id"])
            todo = nxt[:10]
    return uris


async def _exercise(c: LanguageClient, project: Path, root: str | None = None) -> None:
    uri = open_file(c, project / "src/billing/invoice.py")
    for line in (0, 15, 27):
        await c.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=4)))
    lenses = await c.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    for lens in lenses or []:
        await c.code_lens_resolve_async(lens)
    await c.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=types.Position(line=0, character=0),
                                                                                 end=types.Position(line=1, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    linked = await _tree_everything(c, root)
    index_uri = "harn-state:/index.md" + (f"?root={root}" if root else "")
    index = (await c.workspace_text_document_content_async(types.TextDocumentContentParams(uri=index_uri))).text
    docs = sorted(set(re.findall(r"\((harn-state:/[^)\s]+)\)", index)) | {u for u in linked if u.startswith("harn-state:")})
    assert len(docs) > 5
    for doc in docs[:60]:
        await c.workspace_text_document_content_async(types.TextDocumentContentParams(uri=doc))
        if "/proposals/" in doc:
            await c.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=doc),
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
                context=types.CodeActionContext(diagnostics=[])))
    await c.workspace_symbol_async(types.WorkspaceSymbolParams(query="invoice"))
    await c.workspace_symbol_async(types.WorkspaceSymbolParams(query=""))
    for command, args in (("harnState.recall", {"query": "invoice"}), ("harnState.rescan", {}),
                          ("harnState.migratePatternLearning", {}),
                          ("harnState.forgetCheckpointStage", {"pipeline": "no-such-pipeline", "key": "x"}),
                          ("harnState.rejectProposal", {"id": "no-such-proposal"}),
                          ("harnState.resumeEscalation", {"requestId": "no-such-request"})):
        await execute_command(c, types.ExecuteCommandParams(command=command, arguments=[args]))
    # A state change: the watcher's batch, diagnostics, status and document refresh all run.
    with open(project / ".harn/memory/agent/notes/events.jsonl", "a") as fh:
        fh.write("{ not json\n")
    await asyncio.sleep(1.5)


async def test_single_folder_requests_stay_on_the_project_thread(client):
    assert os.environ.get("HARN_LS_THREAD_CHECK") == "1"  # the servers inherit it
    await _exercise(client, client.project)
    assert _violations(client) == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"]))
async def two_folders(lsp_client: LanguageClient, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(REPO / "fixtures" / "legacy-project", a)
    shutil.copytree(SAMPLE, b)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"),
        workspace_folders=[types.WorkspaceFolder(uri=a.as_uri(), name="a"), types.WorkspaceFolder(uri=b.as_uri(), name="b")]))
    lsp_client.b = b
    yield
    await lsp_client.shutdown_session()


async def test_two_folders_find_their_project_on_the_project_thread(two_folders):
    c = two_folders
    await asyncio.sleep(1.0)  # both folders loaded
    # The document lives in the second folder only: finding it asks each model (project_holding).
    index = (await c.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri=f"harn-state:/index.md?root={c.b}"))).text
    # (the link names its project, `?root=`; without it the server asks each model)
    ckpt = re.search(r"\((harn-state:/checkpoints/[^)?\s]+)(\?[^)\s]*)?\)", index).group(1)
    text = (await c.workspace_text_document_content_async(types.TextDocumentContentParams(uri=ckpt))).text
    assert "Not found" not in text
    await _exercise(c, c.b, str(c.b))
    assert _violations(c) == []


async def test_the_guard_catches_a_read_on_the_event_loop(tmp_path: Path):
    proj = Project(str(copy_sample(tmp_path)), lambda *_: None)
    try:
        await proj.load()
        assert proj.ws is not None and proj.root  # loaded-ness and the root: fine anywhere
        assert (await proj.run(lambda: proj.ws.counts()))["checkpoints"] >= 1
        with pytest.raises(ModelThreadError):
            proj.ws.counts()
        with pytest.raises(ModelThreadError):
            _ = proj.ws.facts_by_id
    finally:
        proj.close()
