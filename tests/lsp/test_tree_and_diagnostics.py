"""Sidebar data (harn/tree with paging), diagnostics on state files, harn/status, workspace/symbol."""

from __future__ import annotations

import json

from lsprotocol import types

from tests.lsp.conftest import make_client_fixture

client = make_client_fixture()


async def tree(client, view, parent=None, page=0, **extra):
    params = {"view": view, "page": page, **extra}
    if parent is not None:
        params["parent"] = parent
    result = await client.protocol.send_request_async("harn/tree", params)
    return result._asdict() if hasattr(result, "_asdict") else result


def items_of(result):
    return [i._asdict() if hasattr(i, "_asdict") else i for i in result["items"]]


async def test_four_views(client):
    runs = items_of(await tree(client, "runs"))
    assert len([i for i in runs if i["contextValue"] == "run"]) == 3
    assert all(i["uri"].startswith("harn-state:/runs/") for i in runs if i["contextValue"] == "run")
    first_run = next(i for i in runs if i["contextValue"] == "run" and i["hasChildren"])
    transcripts = items_of(await tree(client, "runs", first_run["id"]))
    assert transcripts and all(t["contextValue"] == "transcript" for t in transcripts)

    ckpts = items_of(await tree(client, "checkpoints"))
    assert [c["label"] for c in ckpts] == ["ingest", "review"]
    stages = items_of(await tree(client, "checkpoints", "ckpt:ingest"))
    prepare = next(s for s in stages if s["label"] == "prepare")
    assert prepare["contextValue"] == "checkpointStage" and prepare["description"].startswith("keyed sha256:28234a10")

    memory = items_of(await tree(client, "memory"))
    assert memory[0]["id"] == "facts" and memory[0]["description"] == "7"
    kinds = items_of(await tree(client, "memory", "facts"))
    assert {k["label"] for k in kinds} == {"observation", "claim", "hypothesis", "constraint", "decision"}
    obs = items_of(await tree(client, "memory", "fk:observation"))
    confs = [float(f["description"]) for f in obs]
    assert confs == sorted(confs, reverse=True) and all(f["contextValue"] == "fact" for f in obs)

    skills = items_of(await tree(client, "skills"))
    assert skills[0]["id"] == "proposals" and skills[0]["description"].startswith("3")
    proposals = items_of(await tree(client, "skills", "proposals"))
    assert len(proposals) == 3 and all(p["contextValue"] == "proposal" for p in proposals)
    with_suppressed = items_of(await tree(client, "skills", "proposals", showSuppressed=True))
    assert [p["contextValue"] for p in with_suppressed].count("proposal.suppressed") == 1
    layers = [s["label"] for s in skills[1:]]
    assert "project" in layers and "claude" in layers


async def test_tree_paging(client):
    events = client.project / ".harn/memory/agent/notes/events.jsonl"
    with open(events, "a") as fh:
        for i in range(450):
            fh.write(json.dumps({"type": "store", "id": f"bulk-{i}", "namespace": "agent/notes", "key": f"note-{i}",
                                 "value": f"note {i}", "text": f"note {i}", "tags": [],
                                 "stored_at": f"2026-11-29T10:{i // 60:02d}:{i % 60:02d}+00:00"}) + "\n")
    await client.rec.wait_for(lambda: any(s["counts"]["records"] >= 450 for s in client.rec.status), 10)
    page0 = await tree(client, "memory", "ns:agent/notes")
    assert len(page0["items"]) == 200 and page0["nextPage"] == 1
    page2 = await tree(client, "memory", "ns:agent/notes", page=2)
    assert len(page2["items"]) == 454 - 400 and "nextPage" not in page2
    ids = [i["id"] for p in (page0, await tree(client, "memory", "ns:agent/notes", page=1), page2) for i in items_of(p)]
    assert len(ids) == len(set(ids)) == 454


async def test_diagnostics_on_state_files(client):
    notes = (client.project / ".harn/memory/agent/notes/events.jsonl").as_uri()
    await client.rec.wait_for(lambda: notes in client.diagnostics, 10)
    diags = client.diagnostics[notes]
    hidden = [d for d in diags if d.code == "HL-MEM-003"]
    assert hidden and hidden[0].range.start.line == 6
    assert "hides it forever" in hidden[0].message

    # A malformed line appended by hand gets a diagnostic at its line; the rest keeps loading.
    events = client.project / ".harn/memory/agent/notes/events.jsonl"
    n_lines = len(events.read_bytes().splitlines())
    with open(events, "a") as fh:
        fh.write('{"type":"store","id":\n')
    await client.rec.wait_for(lambda: any(d.code == "HL-JSONL-001" for d in client.diagnostics.get(notes, [])), 10)
    bad = next(d for d in client.diagnostics[notes] if d.code == "HL-JSONL-001")
    assert bad.range.start.line == n_lines
    assert bad.severity == types.DiagnosticSeverity.Error

    no_short = (client.project / ".harn/skills/no-short/SKILL.md").as_uri()
    await client.rec.wait_for(lambda: no_short in client.diagnostics, 5)
    assert any("short" in d.message for d in client.diagnostics[no_short])
    tampered = (client.project / ".harn/skills/tampered/SKILL.md").as_uri()
    assert any(d.severity == types.DiagnosticSeverity.Error for d in client.diagnostics.get(tampered, []))


async def test_status_notification(client):
    status = client.rec.status[-1]
    assert status["watching"] is True
    assert status["counts"]["facts"] == 7 and status["counts"]["proposals"] == 3 and status["counts"]["runs"] == 3


async def test_workspace_symbol_ranked_by_recall(client):
    symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="webhook signature"))
    assert symbols
    assert "Webhook signatures are verified" in symbols[0].name
    assert symbols[0].location.uri.endswith("src/api/webhooks.ts")
    skills = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="deploy"))
    assert any(s.name == "deploy" and "skill" in s.container_name for s in skills)
