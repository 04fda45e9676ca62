"""Issue 27 item 1 over LSP: the real `harn-ls serve` on stdio, the three ways a cloned repository
put a live `command:` link into a VS Code notification. Each message the client receives
(`window/showMessage`, `window/logMessage`, `harn/hitlArrived`, `harn/status` warnings, the
command's answer) is checked with VS Code's own rule for links in notification text.

Before the fix (main at 17a37d1) every test here failed: the start-up warning, the refusal and
the HITL prompt carried `[Fix it](command:…)` as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from tests.helpers import event_log_writer as W
from tests.lsp.conftest import HARN_DOUBLE, copy_sample, execute_command, make_client_fixture
from tests.security.test_message_text import FIX_IT, linked_text_links

EVIL_ID = "prompt-link00000001"


def _all_text(client) -> list[str]:
    out = [m.message for m in client.messages] + [m.message for m in client.log_messages]
    for status in client.rec.status:
        out += status.get("warnings") or []
    for note in client.rec.hitl_arrived:
        for r in note["requests"]:
            out += [r["prompt"], r["kind"], r.get("agent") or ""]
    return out


def assert_inert(client) -> None:
    for text in _all_text(client):
        assert linked_text_links(text) == [], f"a live link reached the client: {text!r}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The sample project plus a pending proposal whose `name` is a link (its title looks harmless)."""
    proj = copy_sample(tmp_path)
    pattern = proj / ".harn/memory/project/pattern-learning/events.jsonl"
    lines = [json.loads(x) for x in pattern.read_text().splitlines() if x.strip()]
    rec = json.loads(json.dumps(next(r for r in lines if str(r.get("key", "")).startswith("pending:"))))
    v = rec["value"]
    v.update({"id": EVIL_ID, "name": FIX_IT, "title": "Fix the flaky build"})
    rec.update({"id": f"pending_{EVIL_ID}_0000", "key": f"pending:{EVIL_ID}",
                "text": json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)})
    with pattern.open("a") as fh:
        fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    return proj


client = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), "skillRoot": FIX_IT}},
                              "workspaceTrusted": True})


async def test_skill_root_link_warned_about_inert(client):
    """`.vscode/settings.json` sets harnState.skillRoot to a link: the start-up warning quotes it."""
    await client.rec.wait_for(lambda: any("skillRoot" in m.message for m in client.messages), 10)
    [warning] = [m.message for m in client.messages if "skillRoot" in m.message]
    assert "`[Fix it]\\(command:workbench.action.terminal.newWithProfile" in warning, warning
    assert client.rec.status[-1]["warnings"] and "`[Fix it]\\(command:" in client.rec.status[-1]["warnings"][0]
    assert any("skillRoot" in m.message for m in client.log_messages)  # the log line too, inert
    assert_inert(client)


async def test_accept_refusal_repeats_the_name_inert(client):
    """Accept on a proposal whose `name` is a link: refused (not a slug), and the refusal quotes it."""
    result = await execute_command(client, types.ExecuteCommandParams(
        command="harnState.acceptProposal", arguments=[{"id": EVIL_ID, "skillRoot": ".claude/skills"}]))
    assert result["ok"] is False and "HARN-PATTERN-002" in result["message"], result
    assert linked_text_links(result["message"]) == [] and "`[Fix it]\\(command:" in result["message"]
    await client.rec.wait_for(lambda: any("HARN-PATTERN-002" in m.message for m in client.messages), 5)
    assert not (client.project / ".claude/skills" / FIX_IT).exists()
    assert_inert(client)


async def test_hitl_prompt_link_arriving_while_open_is_inert(client):
    """An agent (or a `git pull`) adds a HITL request whose prompt is a link while the editor is open."""
    rid = "hitl_escalation_link-1"
    conn = W.open_log(str(client.project / ".harn" / "events.sqlite"))
    try:
        W.waitpoint_open(conn, rid, kind="escalation")
        env = {"request_id": rid, "kind": "escalation", "agent": "[agent](command:x)", "trace_id": "trace_link",
               "requested_at": "2026-05-04T09:20:00Z", "payload": {"role": "oncall-lead", "reason": FIX_IT}}
        W.append(conn, "hitl.escalations", "hitl.escalation_issued", env, {"request_id": rid, "trace_id": "trace_link"})
    finally:
        conn.close()
    await client.rec.wait_for(lambda: client.rec.hitl_arrived, 10)
    [req] = client.rec.hitl_arrived[-1]["requests"]
    assert req["requestId"] == rid and req["uri"] == f"harn-state:/hitl/{rid}.md"  # identifiers exact
    assert req["prompt"].startswith("[Fix it]\\(command:workbench.action.terminal.newWithProfile"), req
    assert_inert(client)
