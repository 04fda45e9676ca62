"""Issue 27 item 8: reads leave every project byte unchanged, `-shm` included.

Before: a reader opened a WAL database in place (`mode=ro`), and SQLite wrote its read marks into
the project's `events.sqlite-shm`: `inspect` rewrote it. Now a database whose `-wal` holds frames is
read from a private snapshot (copies of the database and its `-wal`, outside the project), so the
project's bytes stay the same, and rows another process committed (still only in its WAL) are seen.
Every file of the project is hashed before and after `inspect` and after a server's load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.conftest import REPO, SAMPLE, make_client_fixture

WRITER = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
from tests.helpers import event_log_writer as W
conn = W.open_log(sys.argv[1])
conn.execute("PRAGMA wal_autocheckpoint = 0")  # the rows stay in the -wal only
for i in range(25):
    W.append(conn, "shm.probe", "tick", {"n": i})
print("ready", flush=True)
sys.stdin.read()  # hold the connection (and so the -wal and -shm) until the test is done
"""


def hashes(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def project(tmp_path: Path):
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(proj / ".harn/events.sqlite"), str(REPO)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "ready"
    assert (proj / ".harn/events.sqlite-shm").exists() and (proj / ".harn/events.sqlite-wal").stat().st_size > 0
    yield proj
    writer.stdin.close()
    writer.wait(timeout=10)


def test_inspect_changes_no_byte_and_sees_the_writers_rows(project, tmp_path):
    before = hashes(project)
    assert ".harn/events.sqlite-shm" in before
    done = subprocess.run([sys.executable, "-m", "harn_ls", "inspect", str(project), "--json"], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO),
                                                          HARN_LS_CACHE_DIR=str(tmp_path / "cache")))
    assert "Traceback" not in done.stderr
    after = hashes(project)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert changed == [], f"inspect changed {changed}"
    data = json.loads(done.stdout)
    topics = {t["topic"]: t for lg in data["event_logs"] for t in lg["topics"]}
    assert topics["shm.probe"]["count"] == 25  # committed by the other process, only in its WAL
    assert not list((tmp_path / "cache").rglob("harn-ls-sqlite-*")), "the private snapshot was not removed"


# ------------------------------------------------------------------------------------------ over LSP (stdio)
client = make_client_fixture()


@pytest.fixture
def before_load(project):
    return hashes(project)  # taken before the server starts (this fixture is set up before `client`)


async def test_server_load_changes_no_byte(before_load, client):
    proj = client.project
    events = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/events.md"))).text
    assert "shm.probe" in events
    page = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/events/shm.probe.md"))).text
    assert "tick" in page
    time.sleep(0.5)
    after = hashes(proj)
    changed = sorted(k for k in before_load.keys() | after.keys() if before_load.get(k) != after.get(k))
    assert changed == [], f"the server's load changed {changed}"
