"""Issue 12 items 3, 4, 5, 9 over LSP (real `harn-ls serve` on stdio): a cloned project with a recursive-view
session store, a fact whose source is a symlink to /dev/zero, a fact with range `1-999999999`, a run
record symlinked into `proj-evil` and `.harn-runs/` entries — every attack is a diagnostic, and the
rest of the project is served promptly.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.conftest import SAMPLE, make_client_fixture, open_file

client = make_client_fixture()

FACT_LINE = json.loads((SAMPLE / ".harn/memory/project/facts/events.jsonl").read_text().splitlines()[0])


def _fact(fid: str, ref: str, snippet: str) -> str:
    rec = json.loads(json.dumps(FACT_LINE))
    rec["id"] = fid
    rec["key"] = f"fact:observation:{fid}"
    rec["value"]["id"] = fid
    rec["value"]["claim"] = f"claim of {fid}"
    rec["value"]["evidence"] = [{"kind": "file_range", "ref": ref, "snippet": snippet}]
    rec["text"] = json.dumps(rec["value"])
    rec["tags"] = ["fact", "schema:harn.fact.v1"]
    return json.dumps(rec)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    store = proj / ".harn" / "session-store.sqlite"
    if store.exists():
        store.unlink()
    conn = sqlite3.connect(store)
    conn.executescript(
        "CREATE TABLE _harn_sqlite_schema_versions(name TEXT PRIMARY KEY, version INTEGER);"
        "INSERT INTO _harn_sqlite_schema_versions VALUES('session_store', 4);"
        "CREATE VIEW sessions AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
        "SELECT 'id' || n AS id, n AS updated_at_ms FROM r ORDER BY 2 DESC;")
    conn.close()
    os.symlink("/dev/zero", proj / "src" / "zero.py")
    with open(proj / ".harn/memory/project/facts/events.jsonl", "a") as fh:
        fh.write(_fact("fact_zero", "src/zero.py:1-3", "anything") + "\n")
        fh.write(_fact("fact_absurd", "src/billing/invoice.py:1-999999999", "this snippet is absent") + "\n")
    (evil / "run.json").write_text('{"_type": "run_record", "id": "SECRET-run", "status": "complete"}')
    (proj / ".harn-runs").mkdir(exist_ok=True)
    os.symlink(evil / "run.json", proj / ".harn-runs" / "leak.json")
    return proj


async def test_hostile_project_problems_and_the_rest_served(client):
    proj = client.project
    store_uri = (proj / ".harn" / "session-store.sqlite").as_uri()
    leak_uri = (proj / ".harn-runs" / "leak.json").as_uri()
    await client.rec.wait_for(lambda: store_uri in client.diagnostics and leak_uri in client.diagnostics, 10)
    assert [d.code for d in client.diagnostics[store_uri]] == ["HL-SESS-007"]
    assert "is a view, not a table; not evaluated" in client.diagnostics[store_uri][0].message
    leak = client.diagnostics[leak_uri]
    assert [d.code for d in leak] == ["HL-LINK-001"] and "leaves the project; not followed" in leak[0].message

    # The fact with an absurd range: hover is fast and its range ends at the end of the file.
    uri = open_file(client, proj / "src/billing/invoice.py")
    n_lines = len((proj / "src/billing/invoice.py").read_text().splitlines())
    t0 = time.monotonic()
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)))
    assert time.monotonic() - t0 < 2.0
    assert hover is not None and "claim of fact" in hover.contents.value and "absurd" in hover.contents.value
    assert hover.range.end.line <= n_lines - 1

    # The /dev/zero fact target: answered at once, nothing read.
    zero_uri = (proj / "src" / "zero.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=zero_uri, language_id="python", version=1, text="x = 1\n")))
    t0 = time.monotonic()
    await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=zero_uri), position=types.Position(line=0, character=0)))
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=zero_uri)))
    assert time.monotonic() - t0 < 2.0
    assert lenses is not None

    # The rest of the project is served.
    index = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/index.md"))).text
    assert "harn-state:/checkpoints/ingest.md" in index and "SECRET-run" not in index
    fact_doc = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/facts/fact_zero.md"))).text
    assert "file not read:" in fact_doc and "/dev/zero" in fact_doc
