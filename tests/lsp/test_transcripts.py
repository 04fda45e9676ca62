"""Transcript documents over LSP: byte windows (newest first), navigation links, the 1 MB cap,
base64 summaries, and run records that appear while the server runs."""

from __future__ import annotations

import base64
import json
import os
import re

from lsprotocol import types

from tests.lsp.conftest import make_client_fixture

client = make_client_fixture()

MAX_BYTES = 1_000_000
BIG_RUN = "run_01aa0000-0000-7000-8000-00000000b16e"
BIG_TRANSCRIPT = "01aa0000-0000-7000-8000-0000000000aa"
N_TEXT_EVENTS = 3000
BLOB_AT = 1500  # index of the tool result event that carries the 3 MB blob
LONG_B64_RUN = re.compile(r"[A-Za-z0-9+/]{600,}")
EVENT_HEAD = re.compile(r"^#### [^\n]*? · #(\d+)\b", re.M)  # one heading per turn: "#### 🤖 Assistant · #3 …"


def _words(i: int) -> str:
    """About 1 KB of ordinary prose (spaces break any base64-looking run)."""
    base = f"Event {i}: reconciled invoice batch {i} against the ledger; totals match after rounding to cents. "
    return (base * (1024 // len(base) + 1))[:1024]


def _event(i: int, role: str, kind: str, blocks: list[dict], text: str, visibility: str = "public") -> dict:
    return {"blocks": blocks, "id": f"01aa0000-0000-7000-8000-{i:012d}", "kind": kind, "role": role,
            "text": text, "visibility": visibility}


def run_record(run_id: str, transcript_id: str, events: list[dict], *, task: str = "Reconcile ledger") -> dict:
    messages = [{"role": e["role"], "content": e["text"]} for e in events if e["kind"] == "message"]
    return {
        "_type": "run_record", "id": run_id, "workflow_id": "reconcile", "workflow_name": "reconcile", "task": task,
        "status": "completed", "started_at": "2026-11-29T10:00:00Z", "finished_at": "2026-11-29T11:00:00Z",
        "parent_run_id": None, "root_run_id": run_id, "stages": [], "transitions": [], "checkpoints": [],
        "pending_nodes": [], "completed_nodes": [], "child_runs": [], "artifacts": [], "handoffs": [],
        "policy": {}, "execution": {"cwd": ".", "worktree_path": None, "adapter": "harn run"},
        "transcript": {"_type": "transcript", "assets": [], "events": events, "id": transcript_id,
                       "messages": messages, "metadata": {}, "state": "archived", "version": 2},
        "usage": {}, "metadata": {}, "persisted_path": f".harn-runs/{run_id}.json",
    }


def big_events() -> list[dict]:
    blob = base64.b64encode(os.urandom(3 * 1024 * 1024 * 3 // 4)).decode()  # ~3 MB of base64
    events = []
    for i in range(N_TEXT_EVENTS):
        role = "user" if i % 2 == 0 else "assistant"
        text = _words(i)
        events.append(_event(i, role, "message", [{"text": text, "type": "text", "visibility": "public"}], text))
        if i == BLOB_AT:
            events.append(_event(10_000 + i, "assistant", "message", [
                {"arguments": {"url": "http://localhost:8080/ledger"}, "id": "toolu_big", "name": "browser_screenshot",
                 "type": "tool_call", "visibility": "public"}], "<tool_call:browser_screenshot>"))
            events.append(_event(20_000 + i, "tool_result", "tool_result", [
                {"name": "browser_screenshot", "text": blob, "tool_call_id": "toolu_big", "type": "tool_result",
                 "visibility": "internal"}], "<tool_result:browser_screenshot>", "internal"))
    return events


def write_run(project, record: dict) -> None:
    """As Harn does: pretty JSON to `<id>.json.tmp`, then rename."""
    runs = project / ".harn-runs"
    tmp = runs / f"{record['id']}.json.tmp"
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, runs / f"{record['id']}.json")


async def content(client, uri: str) -> str:
    return (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))).text


async def wait_runs(client, n: int) -> None:
    await client.rec.wait_for(lambda: any(s["counts"]["runs"] == n for s in client.rec.status), 30)


def event_numbers(text: str) -> list[int]:
    return [int(n) for n in EVENT_HEAD.findall(text)]


async def test_big_transcript_is_windowed(client):
    events = big_events()
    total = len(events)
    write_run(client.project, run_record(BIG_RUN, BIG_TRANSCRIPT, events))
    await wait_runs(client, 4)

    run_doc = await content(client, f"harn-state:/runs/{BIG_RUN}.md")
    uri = f"harn-state:/transcripts/{BIG_TRANSCRIPT}.md"
    assert f"({uri})" in run_doc

    page0 = await content(client, uri)
    m = re.search(r"## Events — window 1 of (\d+) \(newest window first\)", page0)
    assert m, page0[:1000]
    windows = int(m.group(1))
    assert windows >= 3
    nums0 = event_numbers(page0)
    assert nums0 and nums0[-1] == total and nums0 == sorted(nums0)  # newest window, oldest-to-newest inside
    assert 1 not in nums0
    assert f"[← earlier]({uri}?page=1)" in page0
    assert "newer →" not in page0

    page1 = await content(client, f"{uri}?page=1")
    assert "## Events — window 2 of" in page1
    assert f"[newer →]({uri}?page=0)" in page1
    assert f"[← earlier]({uri}?page=2)" in page1
    assert event_numbers(page1)[-1] == nums0[0] - 1  # page 1 ends right before page 0 starts

    seen: list[int] = []
    summarised = 0
    for page in range(windows):
        text = page0 if page == 0 else await content(client, f"{uri}?page={page}")
        assert len(text.encode("utf-8")) <= MAX_BYTES, page
        assert not LONG_B64_RUN.search(text), page
        summarised += text.count("<base64, 3.0 MB omitted>") + text.count("&lt;base64, 3.0 MB omitted&gt;")
        seen = event_numbers(text) + seen
    last = text
    assert event_numbers(last)[0] == 1
    assert "newer →" in last and "← earlier" not in last
    assert seen == list(range(1, total + 1))  # every event exactly once, in order, across the windows
    assert summarised == 1

    # past the end: clamped to the last window
    assert event_numbers(await content(client, f"{uri}?page={windows + 5}"))[0] == 1


async def test_run_added_while_running(client):
    run_id = "run_01aa0000-0000-7000-8000-0000000000cd"
    tr_id = "01aa0000-0000-7000-8000-0000000000ce"
    text = "Checked the webhook dedupe table; no duplicates since the fix."
    events = [_event(1, "user", "message", [{"text": "Audit webhook dedupe", "type": "text", "visibility": "public"}],
                     "Audit webhook dedupe"),
              _event(2, "assistant", "message", [{"text": text, "type": "text", "visibility": "public"}], text)]
    tree = await client.protocol.send_request_async("harn/tree", {"view": "runs", "page": 0})
    assert run_id not in {i.id for i in tree.items}
    client.rec.tree_changed.clear()

    write_run(client.project, run_record(run_id, tr_id, events, task="Audit webhook dedupe"))
    await client.rec.wait_for(lambda: any(t["view"] == "runs" for t in client.rec.tree_changed), 10)
    await wait_runs(client, 4)

    items = (await client.protocol.send_request_async("harn/tree", {"view": "runs", "page": 0})).items
    item = next(i for i in items if i.uri == f"harn-state:/runs/{run_id}.md")
    assert item.contextValue == "run" and item.hasChildren
    children = (await client.protocol.send_request_async("harn/tree", {"view": "runs", "parent": item.id, "page": 0})).items
    assert [c.uri for c in children] == [f"harn-state:/transcripts/{tr_id}.md"]

    run_doc = await content(client, item.uri)
    assert run_doc.startswith(f"# Run — {run_id}") and "| status | completed |" in run_doc
    tr_doc = await content(client, children[0].uri)
    assert text in tr_doc and "window 1 of 1" in tr_doc and event_numbers(tr_doc) == [1, 2]
    index = await content(client, "harn-state:/index.md")
    assert f"harn-state:/runs/{run_id}.md" in index
