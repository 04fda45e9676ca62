"""Problems found at load reach a client that drops diagnostics for files it has not opened (Emacs
eglot 1.9 does; LSP allows it): opening the file later publishes them again (issue 34)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.lsp.conftest import SERVER_COMMAND, copy_sample, start_session

pytestmark = pytest.mark.timeout(120)
NOTES = ".harn/memory/agent/notes/events.jsonl"
CLEAN = ".harn/checkpoints/review.json"


class OpenFilesOnly:
    """A client's view of diagnostics as eglot keeps it: a publish for a file that is not open is
    dropped (only counted, so the test knows it came before the file was opened)."""

    def __init__(self, client) -> None:
        self.client = client
        self.opened: set[str] = set()
        self.shown: dict[str, list[types.Diagnostic]] = {}
        self.dropped: list[str] = []
        # pytest-lsp's own handler keeps every publish: this client keeps only what it would show
        client.protocol.fm.features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _publish(params: types.PublishDiagnosticsParams) -> None:
            if params.uri in self.opened:
                self.shown[params.uri] = list(params.diagnostics)
            else:
                self.dropped.append(params.uri)

    def open(self, path) -> str:
        uri = path.as_uri()
        self.opened.add(uri)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="jsonl" if path.suffix == ".jsonl" else "json", version=1, text=path.read_text())))
        return uri


async def _until(predicate, timeout: float) -> bool:
    end = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > end:
            return False
        await asyncio.sleep(0.02)
    return True


async def test_a_state_file_opened_after_start_up_shows_its_problems(tmp_path):
    project = copy_sample(tmp_path)
    client = await ClientServerConfig(server_command=SERVER_COMMAND).start()
    view = OpenFilesOnly(client)
    try:
        await start_session(client, project)
        notes_uri = (project / NOTES).as_uri()
        # the load's problems were published while the file was closed, and dropped
        assert await _until(lambda: notes_uri in view.dropped, 60)  # (a minute at most: a loaded machine)
        assert notes_uri not in view.shown

        assert view.open(project / NOTES) == notes_uri
        assert await _until(lambda: notes_uri in view.shown, 60), "opening the file did not publish its problems"
        hidden = [d for d in view.shown[notes_uri] if d.code == "HL-MEM-003"]
        assert hidden and hidden[0].range.start.line == 6 and "hides it forever" in hidden[0].message
        assert all(d.source == "harn-ls" for d in view.shown[notes_uri])

        # a file without problems gets nothing new (no empty publish per open file)
        clean_uri = view.open(project / CLEAN)
        # a request answered after the didOpen: anything the open sent came before it
        await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="deploy"))
        assert clean_uri not in view.shown and clean_uri not in view.dropped
    finally:
        await client.shutdown_session()
        await client.stop()
