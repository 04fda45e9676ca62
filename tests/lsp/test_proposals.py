"""Proposals end to end over LSP: code actions and lenses on the proposal document, Accept and Reject commands."""

from __future__ import annotations

import json

from lsprotocol import types

from harn_ls.model.workspace import Workspace
from tests.lsp.conftest import execute_command, make_client_fixture

client = make_client_fixture()
ZERO = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))


async def actions_for(client, uri: str, rng=ZERO):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=[])))


async def test_accept_from_proposal_document(client):
    pid = "prompt-2629ccc60808"
    uri = f"harn-state:/proposals/{pid}.md"
    doc = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))).text
    assert "## What Accept writes" in doc and ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md" in doc
    acts = await actions_for(client, uri)
    kinds = [a.kind for a in acts]
    assert kinds == ["source.harnState.accept", "source.harnState.reject"]
    assert acts[0].title == "Accept skill learned-reconcile-stripe-payouts-ledger"
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [lens.command.command for lens in lenses] == ["harnState.acceptProposal", "harnState.rejectProposal"]

    result = await execute_command(client, types.ExecuteCommandParams(
        command=acts[0].command.command, arguments=acts[0].command.arguments))
    assert result["ok"] is True, result
    skill = client.project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    text = skill.read_text()
    assert text.startswith("---\nname: learned-reconcile-stripe-payouts-ledger\ndescription: \"")
    # the proposal text shown before Accept is exactly what was written
    assert text in doc
    await client.rec.wait_for(
        lambda: any(u.endswith("learned-reconcile-stripe-payouts-ledger/SKILL.md") for u in client.rec.show_document), 5)
    await client.rec.wait_for(lambda: any(s["counts"]["proposals"] == 2 for s in client.rec.status), 5)
    cold = Workspace.load(str(client.project))
    assert pid not in [p.id for p in cold.pending_proposals(include_suppressed=True)]
    assert any(s.id == "learned-reconcile-stripe-payouts-ledger" for s in cold.skills.skills)
    # the forget event is the last line of the pattern-learning log, in Harn's field order
    last = (client.project / ".harn/memory/project/pattern-learning/events.jsonl").read_text().splitlines()[-1]
    event = json.loads(last)
    assert list(event) == ["type", "id", "namespace", "predicate", "forgotten_ids", "forgotten_at"]
    assert event["predicate"] == {"key": f"pending:{pid}"}
    # a second accept is refused: no longer pending
    again = await execute_command(client, types.ExecuteCommandParams(
        command="harnState.acceptProposal", arguments=[{"id": pid}]))
    assert again["ok"] is False


async def test_reject_then_suppressed(client):
    pid = "tools-7742da9fd499"
    result = await execute_command(client, types.ExecuteCommandParams(
        command="harnState.rejectProposal", arguments=[{"id": pid, "days": 14}]))
    assert result["ok"] is True, result
    cold = Workspace.load(str(client.project))
    assert pid not in [p.id for p in cold.pending_proposals(include_suppressed=True)]
    assert pid in cold.pattern.state.suppressed_until


async def test_actions_on_pending_line_in_events_jsonl(client):
    events = client.project / ".harn/memory/project/pattern-learning/events.jsonl"
    cold = Workspace.load(str(client.project))
    prop = next(p for p in cold.pending_proposals() if p.kind == "harn_workflow")
    line = prop.record.line_no - 1
    acts = await actions_for(client, events.as_uri(), types.Range(start=types.Position(line=line, character=0),
                                                                   end=types.Position(line=line, character=0)))
    assert [a.kind for a in acts] == ["source.harnState.accept", "source.harnState.reject"]
    result = await execute_command(client, types.ExecuteCommandParams(
        command=acts[0].command.command, arguments=acts[0].command.arguments))
    assert result["ok"] is True, result
    staged = client.project / ".harn/crystallization" / prop.id
    assert (staged / "workflow.harn").is_file() and (staged / "test.harn").is_file() and (staged / "proposal.json").is_file()


async def test_compare_instead_of_accept_when_a_different_skill_exists(client):
    pid = "prompt-2629ccc60808"
    target = client.project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    target.parent.mkdir(parents=True)
    target.write_text("---\nname: learned-reconcile-stripe-payouts-ledger\n---\nhand-written\n")
    acts = await actions_for(client, f"harn-state:/proposals/{pid}.md")
    assert [a.kind for a in acts] == ["source.harnState.compare", "source.harnState.reject"]
    refused = await execute_command(client, types.ExecuteCommandParams(
        command="harnState.acceptProposal", arguments=[{"id": pid}]))
    assert refused["ok"] is False
    assert target.read_text().endswith("hand-written\n")
