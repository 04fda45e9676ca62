"""Legacy Burin pattern-learning streams: a diagnostic, a code action, and the migration command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from harn_ls.model.workspace import Workspace
from tests.lsp.conftest import REPO, execute_command, make_client_fixture

LEGACY = REPO / "fixtures" / "legacy-project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "legacy-project"
    shutil.copytree(LEGACY, target)
    return target


client = make_client_fixture()


async def test_diagnostic_action_and_migration(client):
    stream = client.project / ".harn/session-store/burin.agent_context.pattern_learning.pending.jsonl"
    uri = stream.as_uri()
    await client.rec.wait_for(lambda: any(d.code == "HL-PAT-010" for d in client.diagnostics.get(uri, [])), 10)
    acts = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    assert [a.kind for a in acts] == ["source.harnState.migrate"]
    before = Workspace.load(str(client.project))
    assert before.migration_needed and not before.pending_proposals(include_suppressed=True)
    result = await execute_command(client, types.ExecuteCommandParams(
        command=acts[0].command.command, arguments=acts[0].command.arguments))
    assert result["ok"] is True, result
    after = Workspace.load(str(client.project))
    assert not after.migration_needed
    assert after.pending_proposals(include_suppressed=True)
    await client.rec.wait_for(lambda: not any(d.code == "HL-PAT-010" for d in client.diagnostics.get(uri, [])), 10)
