"""Requests waiting for a human over real LSP: tree groups, status count, harn/hitlArrived, and
resuming an escalation through `harn orchestrator resume` (the harn test double)."""

from __future__ import annotations

import json
import sqlite3

from tests.helpers import event_log_writer as W
from tests.lsp.conftest import HARN_DOUBLE, execute_command, make_client_fixture

client = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), "hitl": {"reviewer": "oncall-lead"}}},
                              "workspaceTrusted": True})
untrusted = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": False})

PENDING = "hitl_approval_019df301-7a10-7c2e-9d41-5b6c7d8e9f01"


async def tree(c, view, parent=None):
    params = {"view": view, "page": 0}
    if parent:
        params["parent"] = parent
    res = await c.protocol.send_request_async("harn/tree", params)
    return [i._asdict() if hasattr(i, "_asdict") else i for i in res.items]


def escalate(project, rid="hitl_escalation_live-1"):
    conn = W.open_log(str(project / ".harn" / "events.sqlite"))
    try:
        W.waitpoint_open(conn, rid, kind="escalation")
        env = {"request_id": rid, "kind": "escalation", "agent": "billing-agent", "trace_id": "trace_live",
               "requested_at": "2026-05-04T09:20:00Z", "payload": {"role": "oncall-lead", "reason": "refund over limit"}}
        W.append(conn, "hitl.escalations", "hitl.escalation_issued", env, {"request_id": rid, "trace_id": "trace_live"})
    finally:
        conn.close()
    return rid


async def test_pending_approval_in_tree_and_status(client):
    status = client.rec.status[-1]
    assert status["counts"]["hitlPending"] == 1
    top = await tree(client, "runs")
    group = next(i for i in top if i["id"] == "hitl")
    assert group["label"] == "Waiting for you" and group["description"] == "1"
    [req] = await tree(client, "runs", "hitl")
    assert req["contextValue"] == "hitlRequest.approval" and req["label"] == "deploy billing-api to production"
    assert req["description"] == "approval · 0/2" and req["uri"] == f"harn-state:/hitl/{PENDING}.md"
    logs = await tree(client, "runs", "events")
    assert [ln["label"] for ln in logs] == ["run"]
    topics = {t["label"]: t for t in await tree(client, "runs", "evlog:run")}
    assert topics["hitl.approvals"]["description"].startswith("4 · 2026-05-04")
    assert topics["waitpoint.resumes"]["description"].endswith("lag 0")
    assert any(i["id"] == "llm:run" for i in top)  # LLM calls listed with the run transcripts
    doc = await client.workspace_text_document_content_async(
        __import__("lsprotocol").types.TextDocumentContentParams(uri=req["uri"]))
    assert "| quorum so far | 0 of 2 |" in doc.text and "harn.hitl.respond" in doc.text


async def test_new_escalation_announced_then_resumed(client):
    rid = escalate(client.project)
    await client.rec.wait_for(lambda: client.rec.hitl_arrived, 10)
    [note] = client.rec.hitl_arrived
    assert [r["requestId"] for r in note["requests"]] == [rid] and note["requests"][0]["kind"] == "escalation"
    await client.rec.wait_for(lambda: client.rec.status[-1]["counts"]["hitlPending"] == 2, 10)
    items = await tree(client, "runs", "hitl")
    assert f"hitl:{rid}" in [i["id"] for i in items]
    assert next(i for i in items if i["id"] == f"hitl:{rid}")["contextValue"] == "hitlRequest.escalation"

    result = await execute_command(client, 
        __import__("lsprotocol").types.ExecuteCommandParams(command="harnState.resumeEscalation",
                                                            arguments=[{"requestId": rid, "reason": "ack"}]))
    assert result["ok"] is True and result["state"] == "answered", result
    assert result["argv"][:8] == ["orchestrator", "resume", rid, "--reviewer", "oncall-lead",
                                  "--config", str(client.project / "harn.toml"), "--state-dir"]
    assert result["argv"][8] == str(client.project / ".harn")  # the log the request lives in, not .harn/orchestrator
    await client.rec.wait_for(lambda: client.rec.status[-1]["counts"]["hitlPending"] == 1, 10)
    con = sqlite3.connect(f"file:{client.project / '.harn' / 'events.sqlite'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT kind, payload FROM events WHERE topic = 'hitl.escalations' ORDER BY event_id").fetchall()
    finally:
        con.close()
    assert [k for k, _ in rows] == ["hitl.escalation_issued", "hitl.escalation_accepted"]
    assert json.loads(rows[1][1])["reviewer"] == "oncall-lead"
    assert not (client.project / ".harn" / "orchestrator").exists()
    # an approval cannot be answered by Harn's CLI: refused, nothing written
    result = await execute_command(client, 
        __import__("lsprotocol").types.ExecuteCommandParams(command="harnState.resumeEscalation",
                                                            arguments=[{"requestId": PENDING}]))
    assert result["ok"] is False and "harn.hitl.respond" in result["message"]


async def test_untrusted_workspace_does_not_run_harn(untrusted):
    rid = escalate(untrusted.project, "hitl_escalation_untrusted")
    await untrusted.rec.wait_for(lambda: untrusted.rec.status[-1]["counts"]["hitlPending"] == 2, 10)
    result = await execute_command(untrusted, 
        __import__("lsprotocol").types.ExecuteCommandParams(command="harnState.resumeEscalation",
                                                            arguments=[{"requestId": rid}]))
    assert result["ok"] is False and "not trusted" in result["message"]
    con = sqlite3.connect(f"file:{untrusted.project / '.harn' / 'events.sqlite'}?mode=ro", uri=True)
    try:
        assert con.execute("SELECT COUNT(*) FROM events WHERE kind = 'hitl.escalation_accepted'").fetchone()[0] == 0
    finally:
        con.close()
