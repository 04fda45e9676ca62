"""Another process appends 10k events at full speed and rewrites a checkpoint in place while
`harn-ls serve` watches; when things settle the server shows exactly what a cold read shows."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from lsprotocol import types

from harn_ls.model.workspace import Workspace
from harn_ls.render import make_uri, render_uri
from harn_ls.render.svg import strip_pictures
from tests.lsp.conftest import make_client_fixture, project  # noqa: F401  (fixture)

client = make_client_fixture()
WRITER = Path(__file__).with_name("live_writer.py")
REPO = Path(__file__).resolve().parents[2]
N_EVENTS = int(os.environ.get("HARN_LS_LIVE_EVENTS", "10000"))


async def content(client, uri: str) -> str:
    return (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))).text


async def settle(client, cold_counts: dict, timeout: float = 60.0) -> None:
    """Wait until the last harn/status matches the cold counts and no status arrived for a second."""
    rec = client.rec
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = len(rec.status)
        await asyncio.sleep(1.0)
        if len(rec.status) == seen and rec.status and rec.status[-1]["counts"] == cold_counts:
            return
    last = rec.status[-1]["counts"] if rec.status else None
    raise AssertionError(f"server never settled on the cold counts: {last} != {cold_counts}")


async def test_live_writer_ends_equal_to_cold_read(client, tmp_path):
    project = client.project
    manifest = tmp_path / "manifest.json"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(sys.executable, str(WRITER), str(project), str(N_EVENTS), str(manifest), env=env)
    # Meanwhile the editor keeps asking (reads interleave with the writer).
    while proc.returncode is None:
        await content(client, "harn-state:/index.md")
        try:
            await asyncio.wait_for(proc.wait(), 0.05)
        except TimeoutError:
            pass
    assert proc.returncode == 0
    write_seconds = time.monotonic() - started
    expected = json.loads(manifest.read_text())

    cold = Workspace.load(str(project))
    # The cold read itself shows what was written: nothing lost, nothing duplicated.
    live = cold.memory["agent/live"]
    assert [r.id for r in live.records()] == expected["active"]
    assert live.forgotten == set(expected["forgotten"])
    assert sum(1 for f in cold.facts.values() if f.claim.startswith("live fact number")) == expected["facts"]
    assert sorted(cold.checkpoints["live"].entries) == expected["checkpoint"]
    assert not [p for p in cold.problems() if p.code.startswith("HL-JSONL")]

    await settle(client, cold.counts())
    assert client.rec.status[-1]["problems"] == len(cold.problems())

    # Every page of every memory namespace, the checkpoint document and the index: byte-equal to the cold render.
    uris = [make_uri("index"), make_uri("checkpoints", "live")]
    for ns, space in cold.memory.items():
        pages = max(1, (len(space.records()) + 199) // 200)
        uris += [make_uri("memory", ns, page=str(p)) for p in range(pages)]
    for uri in uris:
        served = await content(client, uri)
        if uri == make_uri("checkpoints", "live"):
            # Only a watching server keeps checkpoint history (outside the project); a cold read has
            # none. The history lists the versions it saw; the rest must equal the cold render.
            served, sep, history = served.partition("## History (")
            assert sep and "first kept version" in history, "the watching server kept no checkpoint history"
        # This client is no VS Code: the server strips picture lines for it (plain-text readers).
        assert served == strip_pictures(render_uri(cold, uri)), uri
    index = await content(client, "harn-state:/index.md")
    assert "HL-JSONL" not in index  # no torn line was ever parsed (or left a problem behind)
    first = await content(client, make_uri("memory", "agent/live"))
    assert f"{len(expected['active'])} active" in first
    print(f"live writer: {N_EVENTS} events in {write_seconds:.2f} s, settled after {time.monotonic() - started:.2f} s")
