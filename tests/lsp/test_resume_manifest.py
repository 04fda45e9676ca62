"""Issue 28 item 3: resume passes the project's manifest and state dir, runs from the project root, and
shows Harn's own error text when Harn refuses (the harn CLI test double records argv and cwd).

Harn sources (burin-labs/harn, mirror snapshot e45362cf):
* crates/harn-cli/src/cli.rs `OrchestratorLocalArgs`: `--config` (alias `--manifest`, env
  HARN_ORCHESTRATOR_MANIFEST, default `harn.toml`), `--state-dir` (env HARN_ORCHESTRATOR_STATE_DIR,
  default `.harn/orchestrator`);
* crates/harn-cli/src/commands/orchestrator/common.rs `load_local_runtime`: `absolutize_from_cwd`
  on both, then `load_manifest` → "manifest not found: {path}" / "failed to parse {path}: …";
* crates/harn-cli/src/main.rs: a command's error is printed as `error: {error}`, exit 1;
* crates/harn-cli/src/commands/orchestrator/resume.rs: `load_local_runtime` before the response.
"""

from __future__ import annotations

import json

import pytest
from lsprotocol import types

from tests.lsp.conftest import HARN_DOUBLE, execute_command, make_client_fixture
from tests.lsp.test_hitl import escalate


@pytest.fixture(autouse=True)
def calls(tmp_path, monkeypatch):
    """Every call of the harn double, as {"argv", "cwd"} (the server inherits this environment)."""
    path = tmp_path / "harn-calls.jsonl"
    monkeypatch.setenv("HARN_DOUBLE_CALLS", str(path))
    # a manifest variable in the user's shell must not send Harn to another project
    monkeypatch.setenv("HARN_ORCHESTRATOR_MANIFEST", str(tmp_path / "proj-evil" / "harn.toml"))
    return path


client = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), "hitl": {"reviewer": "ops"}}},
                              "workspaceTrusted": True})


def _resume_calls(path):
    return [c for c in map(json.loads, path.read_text().splitlines()) if c["argv"][:2] == ["orchestrator", "resume"]]


async def _resume(client, rid):
    return await execute_command(
        client, types.ExecuteCommandParams(command="harnState.resumeEscalation", arguments=[{"requestId": rid}]))


async def test_resume_passes_config_and_state_dir_from_the_project_root(client, calls):
    rid = escalate(client.project, "hitl_escalation_cfg")
    await client.rec.wait_for(lambda: client.rec.status[-1]["counts"]["hitlPending"] == 2, 10)
    result = await _resume(client, rid)
    assert result["ok"] is True, result
    (call,) = _resume_calls(calls)
    argv = call["argv"]
    assert argv[argv.index("--config") + 1] == str(client.project / "harn.toml")
    assert argv[argv.index("--state-dir") + 1] == str(client.project / ".harn")
    assert call["cwd"] == str(client.project)
    # the log the request lives in, named for Harn even when it is not <state-dir>/events.sqlite
    assert call["env"] == {"HARN_EVENT_LOG_SQLITE_PATH": str(client.project / ".harn" / "events.sqlite")}


async def test_harn_refusal_is_shown_in_harns_own_words(client, calls):
    rid = escalate(client.project, "hitl_escalation_nomanifest")
    await client.rec.wait_for(lambda: client.rec.status[-1]["counts"]["hitlPending"] == 2, 10)
    (client.project / "harn.toml").write_text("[broken\n")
    result = await _resume(client, rid)
    assert result["ok"] is False
    assert f"failed to parse {client.project / 'harn.toml'}" in result["message"], result
    assert any("failed to parse" in m for m in client.rec.shown)
    (client.project / "harn.toml").unlink()
    result = await _resume(client, rid)
    assert result["ok"] is False
    # Harn's own words, quoted as a value (a message never carries live Markdown from outside)
    assert f"(exit 1): `error: manifest not found: {client.project / 'harn.toml'}`" in result["message"], result
    assert len(_resume_calls(calls)) == 2  # Harn itself refused both times, from the project root
    assert {c["cwd"] for c in _resume_calls(calls)} == {str(client.project)}
