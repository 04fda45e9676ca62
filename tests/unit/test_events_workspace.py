"""Event logs and the rest of `.harn/` inside the Workspace: load, live apply (a WAL append is a
change), inspect sections and every `harn-state:` document of issue 16."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.render import UriError, parse_uri, render_uri
from harn_ls.render.inspect import inspect_json, inspect_text
from harn_ls.render.markdown import unescape_markdown
from tests.helpers import event_log_writer as W
from tests.helpers.samples import SAMPLES


def shown(ws, uri: str) -> str:
    """A rendered document with the escaping of data undone: the text as the reader sees it."""
    return unescape_markdown(render_uri(ws, uri))


CONSTRUCTED = SAMPLES / "constructed"
pytestmark = pytest.mark.skipif(not CONSTRUCTED.is_dir(), reason="constructed harn-samples not found")
RECEIPT = "receipt-019df23b-d93a-7ea5-b96a-7f4325c408b1"


def plain(md: str) -> str:
    """The Markdown with backslash escapes (render/markdown.py cell()) removed, for content checks."""
    return re.sub(r"\\(.)", r"\1", md)


APPROVAL = "hitl_approval_019df239-3a50-70ec-b125-6d1f4f8d67a3"
ESCALATION = "hitl_escalation_019df239-8870-734b-beb2-7c1cb5a3169a"


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    harn = root / ".harn"
    harn.mkdir(parents=True)
    (root / "harn.toml").write_text("[project]\nname = 'p'\n")
    shutil.copy(CONSTRUCTED / "events.sqlite", harn / "events.sqlite")
    shutil.copy(CONSTRUCTED / "store.json", harn / "store.json")
    shutil.copytree(CONSTRUCTED / "receipts", harn / "receipts")
    for p in harn.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return root


def test_load_counts_and_inspect(proj):
    ws = Workspace.load(str(proj))
    c = ws.counts()
    assert (c["eventLogs"], c["eventTopics"], c["hitlPending"], c["receipts"]) == (1, 12, 3, 1)
    data = inspect_json(ws)
    assert [lg["path"] for lg in data["event_logs"]] == [".harn/events.sqlite"]
    assert {r["request_id"] for r in data["hitl"]["waiting"]} >= {APPROVAL, ESCALATION}
    assert data["receipts"][0]["status"] == "self-signed"  # its key is only the one it carries
    assert data["store"]["keys"] == ["last_deploy", "migration_cursor", "release_notes_draft", "reviewers", "score"]
    text = inspect_text(ws)
    assert "waiting for you  3 request(s), 1 resolved" in text and "receipt-019df23b" in text


def test_wal_append_is_a_live_change(proj):
    db = proj / ".harn" / "events.sqlite"
    conn = W.open_log(str(db))  # a live writer: -wal and -shm now exist
    try:
        ws = Workspace.load(str(proj))
        assert ws.counts()["hitlPending"] == 3
        assert not ws.apply_changes([str(db) + "-shm"])  # our own reads touch -shm: never a change
        env = W.approval_request("hitl_approval_live", action="rotate keys")
        W.waitpoint_open(conn, "hitl_approval_live")
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
        changes = ws.apply_changes([str(db) + "-wal"])
        assert {"events", "hitl"} <= changes.kinds
        assert ws.counts()["hitlPending"] == 4
        assert [r.request_id for r in ws.event_logs.take_new_requests()] == ["hitl_approval_live"]
        assert ws.event_logs.take_new_requests() == []  # announced once
        # alice approves: quorum 1 reached -> Harn appends approval_approved; it leaves the waiting list
        W.append(conn, "hitl.approvals", "hitl.response_received",
                 {"request_id": "hitl_approval_live", "approved": True, "reviewer": "alice"},
                 {"request_id": "hitl_approval_live"})
        W.append(conn, "hitl.approvals", "hitl.approval_approved",
                 {"request_id": "hitl_approval_live", "record": {"approved": True, "reviewers": ["alice"]}},
                 {"request_id": "hitl_approval_live", "trace_id": "trace_x"})
        changes = ws.apply_changes([str(db) + "-wal"])
        assert "hitl" in changes.kinds and ws.counts()["hitlPending"] == 3
        assert ws.event_logs.request("hitl_approval_live")[0].state == "answered"
    finally:
        conn.close()


def test_state_files_apply(proj):
    ws = Workspace.load(str(proj))
    store = proj / ".harn" / "store.json"
    store.write_text('{"a": 1')  # torn write
    changes = ws.apply_changes([str(store)])
    assert "store" in changes.kinds
    assert any(p.code == "HL-STORE-001" for p in ws.problems())
    store.write_text('{"a": 1}')
    ws.apply_changes([str(store)])
    assert ws.event_logs.store.entries == {"a": 1} and not any(p.code == "HL-STORE-001" for p in ws.problems())
    cand = proj / ".burin" / "crystallization" / "curated-3f9a1c0b7d2e"
    cand.mkdir(parents=True)
    (cand / "workflow.harn").write_text("pipeline main(task) {}\n")
    ws.apply_changes([str(cand / "workflow.harn")])
    assert [(c.id, c.complete) for c in ws.event_logs.candidates] == [("curated-3f9a1c0b7d2e", False)]
    (cand / "proposal.json").write_text(json.dumps({"id": "curated-3f9a1c0b7d2e", "kind": "harn_workflow",
                                                    "title": "Draft | notes", "artifact": {"entrypoint": "workflow.harn",
                                                    "source": "pipeline main(task) {}\n```\n"}}))
    ws.apply_changes([str(cand / "proposal.json")])
    assert ws.event_logs.candidates[0].complete
    doc = render_uri(ws, "harn-state:/crystallization/curated-3f9a1c0b7d2e.md")
    assert "Draft \\| notes" in doc and "````" in doc  # escaped cell, fence longer than the ``` inside


# ------------------------------------------------------------------------------------------------ documents
def test_uris_parse_and_unknowns_are_refused(proj):
    ws = Workspace.load(str(proj))
    assert parse_uri("harn-state:/events.md").kind == "events_index"
    assert parse_uri("harn-state:/hitl.md").kind == "hitl_index"
    assert parse_uri("harn-state:/events/hitl.approvals.md?page=1").page() == 1
    for bad in ("harn-state:/hitl/hitl_question_nope.md", "harn-state:/events/no.such.topic.md",
                "harn-state:/events/hitl.approvals.md?log=elsewhere", "harn-state:/receipts/receipt-nope.md",
                "harn-state:/events/..%2F..%2Fetc.md", "harn-state:/crystallization/x.md"):
        with pytest.raises(UriError):
            render_uri(ws, bad)


def test_events_index_and_topic_pages(proj):
    ws = Workspace.load(str(proj))
    idx = shown(ws, "harn-state:/events.md")
    assert "orchestrator-pump.waitpoint.resumes" in idx and "| 4 | 1–4 |" in idx
    doc = shown(ws, "harn-state:/events/hitl.approvals.md")
    heads = [line for line in doc.splitlines() if line.startswith("### #")]
    assert [h.split()[1] for h in heads] == ["#4", "#3", "#2", "#1"]  # newest first
    assert '"quorum": 2' in doc and "```json" in doc  # pretty-printed payload in a fence
    assert "| overdue |" in doc or "| pending |" in doc
    llm = shown(ws, "harn-state:/events/agent.transcript.llm.md")
    assert "## Provider calls" in llm and "anthropic/claude-sonnet-4-5" in llm and "1840/96" in llm
    ag = shown(ws, "harn-state:/events/observability.action_graph.md")
    assert "- `migrate-orders` run" in ag and "  - —entry→ `plan` stage" in ag
    dlq = shown(ws, "harn-state:/events/trigger.dlq.md")
    assert "## Dead letters" in dlq and "handler_panic" in dlq
    generic = shown(ws, "harn-state:/events/trigger.inbox.envelopes.md")
    assert "### #1 `event_ingested`" in generic and "1 event(s)" in generic


def test_event_pages_split_and_hostile_payload_is_fenced(proj):
    db = proj / ".harn" / "events.sqlite"
    conn = W.open_log(str(db))
    try:
        for i in range(120):
            W.append(conn, "custom.topic", "custom_kind", {"i": i, "text": "```\n# not a heading\n| x |"})
    finally:
        conn.close()
    ws = Workspace.load(str(proj))
    p0 = shown(ws, "harn-state:/events/custom.topic.md")
    p2 = shown(ws, "harn-state:/events/custom.topic.md?page=2")
    assert "### #120 " in p0 and "### #71 " in p0 and "### #70 " not in p0
    assert "### #20 " in p2 and "### #1 " in p2 and "older →" not in p2 and "← newer" in p2
    assert "````json" in p0  # the payload's ``` cannot close the fence
    assert "\n# not a heading" not in p0  # the string stays JSON-escaped inside the fence


def test_hitl_documents(proj):
    ws = Workspace.load(str(proj))
    idx = shown(ws, "harn-state:/hitl.md")
    assert idx.startswith("# Waiting for you (3)") and "## Resolved (1)" in idx
    ap = shown(ws, f"harn-state:/hitl/{APPROVAL}.md")
    assert "| reviewers | alice, bob |" in ap and "| quorum so far | 0 of 2 |" in ap
    assert "run_019df237-4074-7e65-93fb-e8ad6535681b" in ap and "trace_019df239" in ap
    assert "## How to answer" in ap and "harn.hitl.respond" in ap and '"approved": true' in ap
    esc = shown(ws, f"harn-state:/hitl/{ESCALATION}.md")
    assert "never (escalations do not time out)" in esc
    assert f"harn orchestrator resume {ESCALATION} --reviewer <you> --state-dir .harn" in esc
    done = shown(ws, "harn-state:/hitl/hitl_approval_019df237-6590-789f-8c58-97172ca41e44.md")
    assert "**State: answered**" in done and "## How to answer" not in done and "| alice | True |" in done


def test_store_receipt_worktrees_documents(proj):
    harn = proj / ".harn"
    wf = harn / "workflows" / "release-train"
    wf.mkdir(parents=True)
    (wf / "state.json").write_text(json.dumps({"_type": "workflow_mailbox", "workflow_id": "release-train", "generation": 1,
        "paused": True, "next_seq": 2, "mailbox": [{"seq": 2, "kind": "update", "name": "set_target", "request_id": "u1",
        "payload": {"environment": "staging"}, "enqueued_at": "2026-05-04T09:10:02.118Z"}], "queries": {}, "responses": {}}))
    stale = harn / "worktrees" / "shop" / "worker_1"
    stale.mkdir(parents=True)
    (stale / ".git").write_text(f"gitdir: {proj}/.git/worktrees/worker_1\n")
    (harn / "checkpoints").mkdir()
    (harn / "checkpoints" / "migrate.lock").write_bytes(b"")
    vec = harn / "memory" / "__embed" / "vectors" / "default"
    vec.mkdir(parents=True)
    for i in range(3):
        (vec / f"{i:064x}.json").write_text('{"model":"m","dim":1,"vector":[0.0]}')
    data = json.loads((harn / "receipts" / f"{RECEIPT}.json").read_text())
    data["signatures"][0]["signature_base64"] = "A" * 86 + "=="
    (harn / "receipts" / "receipt-forged.json").write_text(json.dumps(data))
    ws = Workspace.load(str(proj))
    st = shown(ws, "harn-state:/store.md")
    assert "| `migration_cursor` | `41` |" in st
    assert "`release-train` — 1 pending message(s), 1 unanswered update(s) · paused" in st
    assert "- checkpoint `migrate`: free" in st or "unknown" in st
    assert "| `__embed` | `default` | 3 |" in st
    ok = shown(ws, f"harn-state:/receipts/{RECEIPT}.md")
    assert "**⚠ signed by a key the receipt carries (not by a key you trust)**" in ok
    assert "ed25519:fe812c12f3ab4ce6ac5db69ac352f906" in ok and "`run.provenance` #1" in ok
    # the forged copy has the same receipt_id; it is reachable by its file name
    bad = shown(ws, "harn-state:/receipts/receipt-forged.md")
    assert "does NOT verify" in bad and "does not verify" in bad
    assert any(p.code == "HL-RCPT-002" and p.path.endswith("receipt-forged.json") for p in ws.problems())
    wt = shown(ws, "harn-state:/worktrees.md")
    assert "| `shop/worker_1` |  | ⚠ stale: its git metadata is gone" in wt
    assert "receipt-019df23b" in wt


def test_symlinks_out_of_the_project_are_not_followed(tmp_path, monkeypatch):
    """A cloned repo whose .harn entries point at a sibling folder (proj-evil) must not be read."""
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    evil = tmp_path / "proj-evil"
    (evil / "receipts").mkdir(parents=True)
    shutil.copy(CONSTRUCTED / "events.sqlite", evil / "events.sqlite")
    shutil.copy(CONSTRUCTED / "store.json", evil / "store.json")
    shutil.copy(CONSTRUCTED / "receipts" / f"{RECEIPT}.json", evil / "receipts" / f"{RECEIPT}.json")
    (evil / "wt").mkdir()
    root = tmp_path / "proj"
    harn = root / ".harn"
    harn.mkdir(parents=True)
    (root / "harn.toml").write_text("")
    os.symlink(evil / "events.sqlite", harn / "events.sqlite")
    os.symlink(evil / "store.json", harn / "store.json")
    os.symlink(evil / "receipts", harn / "receipts")
    os.symlink(evil / "wt", harn / "worktrees")
    ws = Workspace.load(str(root))
    c = ws.counts()
    assert (c["eventTopics"], c["hitlPending"], c["receipts"], c["worktrees"]) == (0, 0, 0, 0)
    assert ws.event_logs.store is None
    refused = sorted(os.path.basename(p.path) for p in ws.problems() if p.code == "HL-SEC-001")
    assert refused == ["events.sqlite", "receipts", "store.json", "worktrees"]
    assert sorted(os.listdir(evil)) == ["events.sqlite", "receipts", "store.json", "wt"]  # nothing created there
    with pytest.raises(UriError):
        render_uri(ws, "harn-state:/events/hitl.approvals.md")
