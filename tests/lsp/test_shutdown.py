"""Shutdown while a typecheck probe runs: the server asks its running requests to stop (our own
record of them, no pygls internals), the probe kills harn and answers, then shutdown answers."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import HARN_DOUBLE, open_file
from tests.lsp.test_probe import REL, _double_processes


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"]))
async def client(lsp_client: LanguageClient, project: Path):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"),
        root_uri=project.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="sample")],
        initialization_options={"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True}))
    lsp_client.project = project
    yield  # the test shuts the server down itself


async def test_shutdown_stops_a_running_probe_and_answers(client):
    path = client.project / REL
    path.write_text("pipeline main() {\n  // HARN_DOUBLE_HANG\n}\n", encoding="utf-8")
    uri = open_file(client, path, "harn")
    await asyncio.sleep(1.0)  # the folder is loaded
    before = set(_double_processes())
    probe = asyncio.ensure_future(client.protocol.send_request_async(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="harnState.probeTypecheck", arguments=[{"uri": uri}])))
    deadline = time.monotonic() + 60  # python starting the double on a loaded machine
    running: dict[int, str] = {}
    while not running and time.monotonic() < deadline:
        running = {k: v for k, v in _double_processes().items() if k not in before}
        await asyncio.sleep(0.05)
    assert running, "the probe never started harn"
    await asyncio.sleep(0.3)
    tmp = next(iter(running.values()))

    started = time.monotonic()
    await asyncio.wait_for(client.shutdown_async(None), 10)
    assert time.monotonic() - started < 5  # the probe stopped when asked, well within the grace period
    assert probe.done()  # answered before shutdown was
    try:
        result = probe.result()
        outcome = result.outcome if hasattr(result, "outcome") else result["outcome"]
        assert outcome == "cancelled"
    except Exception as exc:  # or pygls' own "cancelled" answer
        assert "cancel" in str(exc).lower()
    assert not set(running) & set(_double_processes())
    assert not os.path.exists(tmp)
    client.exit(None)
