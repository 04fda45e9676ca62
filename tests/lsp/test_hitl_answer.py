"""Answering HITL requests over real LSP (issue 33): `harnState.answerHitl` appends Harn's rows to the
log the run polls, the request leaves "Waiting for you", the document shows the quorum and offers the
actions as lenses; refusals (untrusted, reviewer not listed) are told, with the reason, and write nothing."""

from __future__ import annotations

import json
import sqlite3

from lsprotocol import types

from tests.lsp.conftest import execute_command, make_client_fixture
from tests.lsp.test_hitl import PENDING, tree

alice = make_client_fixture({"settings": {"harnState": {"hitl": {"reviewer": "alice"}}}, "workspaceTrusted": True})
mallory = make_client_fixture({"settings": {"harnState": {"hitl": {"reviewer": "mallory"}}}, "workspaceTrusted": True})
untrusted = make_client_fixture({"settings": {"harnState": {"hitl": {"reviewer": "alice"}}}, "workspaceTrusted": False})


def log_rows(project):
    con = sqlite3.connect(f"file:{project / '.harn' / 'events.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute("SELECT topic, event_id, kind, payload FROM events ORDER BY topic, event_id").fetchall()
    finally:
        con.close()


async def run(c, **args):
    return await execute_command(c, types.ExecuteCommandParams(command="harnState.answerHitl", arguments=[args]))


async def doc(c, rid):
    return (await c.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri=f"harn-state:/hitl/{rid}.md"))).text


async def lenses(c, rid):
    got = await c.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=f"harn-state:/hitl/{rid}.md")))
    return [(ln.command.title, ln.command.command, list(ln.command.arguments or [])) for ln in got or []]


async def test_approve_counts_toward_quorum_and_is_offered(alice):
    assert [t for t, *_ in await lenses(alice, PENDING)] == ["Approve", "Deny…"]
    assert (await lenses(alice, PENDING))[0][1:] == ("harnState.ui.approveHitl",
                                                     [{"requestId": PENDING, "kind": "approval"}])
    text = await doc(alice, PENDING)
    assert "## How to answer" in text and "Quorum so far: **0 of 2**" in text and "direct append" in text
    before = log_rows(alice.project)
    res = await run(alice, requestId=PENDING, action="approve", reason="diff reviewed")
    assert res["ok"] is True and res["outcome"] == "pending (1 of 2)" and res["reviewer"] == "alice", res
    assert [w["kind"] for w in res["written"]] == ["hitl.response_received"]
    assert "direct append" in res["path"]
    after = log_rows(alice.project)
    [new] = [r for r in after if r not in before]
    assert new[2] == "hitl.response_received" and json.loads(new[3])["reviewer"] == "alice"
    assert "| quorum so far | 1 of 2 (alice) |" in await doc(alice, PENDING)
    # the same reviewer again: told, nothing written
    res = await run(alice, requestId=PENDING, action="approve")
    assert res["ok"] is False and "already approved" in res["message"]
    assert log_rows(alice.project) == after
    assert any("already approved" in m for m in alice.rec.shown)


async def test_reviewer_outside_the_list_is_refused_with_the_reason(mallory):
    before = log_rows(mallory.project)
    res = await run(mallory, requestId=PENDING, action="approve")
    assert res["ok"] is False
    assert "`mallory` is not allowed: this request lists `alice`, `bob`" in res["message"]
    assert log_rows(mallory.project) == before


async def test_untrusted_workspace_writes_nothing(untrusted):
    before = log_rows(untrusted.project)
    res = await run(untrusted, requestId=PENDING, action="approve")
    assert res["ok"] is False and "not trusted" in res["message"]
    assert log_rows(untrusted.project) == before


async def test_deny_leaves_waiting_for_you(alice):
    await alice.rec.wait_for(lambda: alice.rec.status and alice.rec.status[-1]["counts"]["hitlPending"] == 1, 10)
    res = await run(alice, requestId=PENDING, action="deny", reason="not now")
    assert res["ok"] is True and res["outcome"] == "denied" and res["state"] == "denied", res
    assert [w["kind"] for w in res["written"]] == ["hitl.response_received", "hitl.approval_denied",
                                                   "waitpoint.state", "waitpoint.resume"]
    await alice.rec.wait_for(lambda: alice.rec.status[-1]["counts"]["hitlPending"] == 0, 10)
    assert await tree(alice, "runs", "hitl") == []
    assert await lenses(alice, PENDING) == []
    assert "**State: denied**" in await doc(alice, PENDING)


async def test_notifications_quote_log_data_inertly(alice):
    """A request id is data: in a refusal shown as a notification it must not become a link."""
    from tests.helpers import event_log_writer as W

    rid = "hitl_approval_x](command:workbench.action.quit)"
    conn = W.open_log(str(alice.project / ".harn" / "events.sqlite"))
    try:
        # Harn's waitpoint topic sanitises the id (`sanitize_topic_component`)
        W.append(conn, "waitpoint.state.hitl_approval_x__command_workbench.action.quit_", "waitpoint.state",
                 {"id": rid, "status": "open", "created_at": "2026-05-04T09:00:10Z", "completed_at": None,
                  "cancelled_at": None, "completed_by": None, "cancelled_by": None, "value": None, "reason": None,
                  "metadata": {"kind": "approval"}}, {"waitpoint_id": rid})
        env = W.approval_request(rid, reviewers=("alice",), quorum=2)
        W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
    finally:
        conn.close()
    await alice.rec.wait_for(lambda: alice.rec.status[-1]["counts"]["hitlPending"] == 2, 10)
    first = await run(alice, requestId=rid, action="approve")
    assert first["ok"] is True, first
    res = await run(alice, requestId=rid, action="approve")
    assert res["ok"] is False and "already approved" in res["message"]
    shown = [m for m in alice.rec.shown if "already approved" in m]
    assert shown and all("](" not in m for m in shown + [res["message"]])
    assert "]\\(command:workbench.action.quit)" in shown[-1]
