"""Issue 28 item 2 over real LSP: `harnState.harnEnv` moves where harn-ls looks for Harn's event log,
the tree says why, a change of the setting re-reads the project, and in an untrusted workspace a value
pointing outside the project (a sibling `proj-evil`) is a problem, never read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types

from tests.helpers import event_log_writer as W
from tests.lsp.conftest import HARN_DOUBLE, copy_sample, make_client_fixture


def _log(path: Path, topic: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = W.open_log(str(path))
    W.append(conn, topic, "k", {"n": 1})
    conn.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = copy_sample(tmp_path)
    _log(proj / "state" / "custom.sqlite", "custom.topic")
    _log(tmp_path / "proj-evil" / "events.sqlite", "evil.secret")
    return proj


ENV = {"HARN_EVENT_LOG_SQLITE_PATH": "state/custom.sqlite"}
EVIL = {"HARN_EVENT_LOG_SQLITE_PATH": "../proj-evil/events.sqlite"}
client = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), "harnEnv": ENV}},
                              "workspaceTrusted": True})
untrusted = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), "harnEnv": EVIL}},
                                 "workspaceTrusted": False})


def _plain(md: str) -> str:
    """A tooltip is Markdown with its punctuation escaped: the text a reader sees."""
    return re.sub(r"\\(.)", r"\1", md, flags=re.S)


async def _logs(c):
    res = await c.protocol.send_request_async("harn/tree", {"view": "runs", "page": 0, "parent": "events"})
    return [i._asdict() if hasattr(i, "_asdict") else i for i in res.items]


async def test_harn_env_setting_moves_the_run_log(client):
    logs = await _logs(client)
    run = next(i for i in logs if i["id"] == "evlog:run")
    assert "HARN_EVENT_LOG_SQLITE_PATH" in run["description"]
    assert _plain(run["tooltip"]) == (f"{client.project / 'state' / 'custom.sqlite'}\n"
                                      "HARN_EVENT_LOG_SQLITE_PATH='state/custom.sqlite' "
                                      "(harnState.harnEnv), relative to the project root")
    topics = await client.protocol.send_request_async("harn/tree", {"view": "runs", "page": 0, "parent": "evlog:run"})
    assert "custom.topic" in [t.label if hasattr(t, "label") else t["label"] for t in topics.items]
    # the setting changes: the project is read again from Harn's default place
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"harnPath": str(HARN_DOUBLE), "harnEnv": {}}}))

    async def default_place():
        run = next((i for i in await _logs(client) if i["id"] == "evlog:run"), None)
        return run is not None and _plain(run["tooltip"]).startswith(str(client.project / ".harn" / "events.sqlite"))

    for _ in range(1200):  # the project is read again: up to a minute on a loaded machine
        if await default_place():
            break
        await __import__("asyncio").sleep(0.05)
    assert await default_place()


async def test_untrusted_harn_env_outside_the_project_is_a_problem(untrusted):
    logs = await _logs(untrusted)
    assert all("proj-evil" not in i["tooltip"] for i in logs)
    await untrusted.rec.wait_for(lambda: any(
        "HARN_EVENT_LOG_SQLITE_PATH" in d.message and "not trusted" in d.message
        for ds in untrusted.diagnostics.values() for d in ds), 10)
    text = "".join(str(i) for i in logs)
    assert "evil.secret" not in text
