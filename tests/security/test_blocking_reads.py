"""Issue 27 item 2: reads never block and never leave the project.

A cloned repository commits symlinks to `/dev/stdin` at a worktree's git pointers (`.git/worktrees/<w>/HEAD`,
`.../gitdir`) and at `.harn/events/consumers/*.json`, and a FIFO at `.harn/memory/<ns>/events.jsonl`.
Before: `inspect` waited for stdin and printed what arrived as a branch name; over stdio the server read
the client's own messages; the FIFO hung `inspect` (cache on) and, after the settle, the server's project
thread. Now each is a problem naming the path, `inspect` exits at once, the server answers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types

from tests.helpers.samples import SAMPLES
from tests.lsp.conftest import REPO, SAMPLE, make_client_fixture

CONSTRUCTED = SAMPLES / "constructed"
FIFO_NS = Path(".harn/memory/project/facts/events.jsonl")


def hostile_project(tmp_path: Path, fifo: bool = True) -> Path:
    """The sample project plus: a worktree whose git pointers and a consumer cursor are committed
    symlinks to /dev/stdin, a worktree whose gitdir lives in the sibling `proj-evil`, and (if `fifo`)
    a FIFO in place of a memory log."""
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    evil = tmp_path / "proj-evil"
    (evil / "gitdir-w2").mkdir(parents=True)
    (evil / "gitdir-w2" / "HEAD").write_text("ref: refs/heads/SECRET-branch\n")
    harn = proj / ".harn"
    shutil.copytree(CONSTRUCTED / "events", harn / "events")
    os.symlink("/dev/stdin", harn / "events" / "consumers" / "evil__stdin.json")
    wt = harn / "worktrees" / "w1"
    wt.mkdir(parents=True)
    gitdir = proj / ".git" / "worktrees" / "w1"
    gitdir.mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    os.symlink("/dev/stdin", gitdir / "HEAD")
    os.symlink("/dev/stdin", gitdir / "gitdir")
    wt2 = harn / "worktrees" / "w2"
    wt2.mkdir(parents=True)
    (wt2 / ".git").write_text(f"gitdir: {evil / 'gitdir-w2'}\n")
    wt3 = harn / "worktrees" / "w3"
    wt3.mkdir(parents=True)
    os.symlink("/dev/stdin", wt3 / ".git")
    if fifo:
        (proj / FIFO_NS).unlink()
        os.mkfifo(proj / FIFO_NS)
    return proj


def run_inspect(proj: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    """`harn-ls inspect` with a stdin that stays open and holds a line (what /dev/stdin would give)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), HARN_LS_CACHE_DIR=str(cache))
    proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "inspect", str(proj), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(proj.parent))
    proc.stdin.write(b"SECRET-from-stdin\n")
    proc.stdin.flush()
    try:
        out, err = proc.communicate(timeout=30)  # closes stdin only after the 30 s: a blocked read never ends first
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"inspect blocked for 30 s on a read; stdout so far: {out[-2000:]!r}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def test_inspect_does_not_read_stdin_or_a_fifo(tmp_path):
    proj = hostile_project(tmp_path)
    t0 = time.monotonic()
    done = run_inspect(proj, tmp_path / "cache", "--json")
    elapsed = time.monotonic() - t0
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert "SECRET" not in done.stdout, "stdin or proj-evil content leaked into inspect"
    assert elapsed < 20
    data = json.loads(done.stdout)
    problems = {(p["path"], p["message"]) for p in data["problems"]}
    text = json.dumps(data["problems"])
    for rel in (".git/worktrees/w1/HEAD", ".git/worktrees/w1/gitdir", ".harn/worktrees/w3/.git",
                ".harn/events/consumers/evil__stdin.json", str(FIFO_NS)):
        assert rel in text, (rel, problems)
    assert f"{FIFO_NS}: not a regular file" in text or "not a regular file" in text
    assert text.count("-> /dev/stdin leaves the project; not followed") >= 4
    assert "proj-evil/gitdir-w2" in text and "leaves the project" in text


def test_inspect_with_a_warm_cache_then_a_fifo(tmp_path):
    """Cache on: the first run caches the namespace; the log is then replaced by a FIFO, and the
    cache's validators (which open the log to compare it) must not wait on it."""
    proj = hostile_project(tmp_path, fifo=False)
    cache = tmp_path / "cache"
    first = run_inspect(proj, cache, "--json")
    assert first.returncode in (0, 1) and "Traceback" not in first.stderr
    assert any(cache.rglob("manifest.json")), "the first run should have filled the cache"
    (proj / FIFO_NS).unlink()
    os.mkfifo(proj / FIFO_NS)
    second = run_inspect(proj, cache, "--json")
    assert "Traceback" not in second.stderr
    text = json.dumps(json.loads(second.stdout)["problems"])
    assert str(FIFO_NS) in text and "not a regular file" in text


# ------------------------------------------------------------------------------------------ over LSP (stdio)
@pytest.fixture
def project(tmp_path: Path) -> Path:
    return hostile_project(tmp_path, fifo=False)


client = make_client_fixture()


async def test_server_over_stdio_keeps_its_messages_and_serves(client):
    """The server's stdin is the client's pipe: a reader following /dev/stdin would eat LSP messages.
    The project opens, each link is a diagnostic, and after a FIFO replaces a memory log once the
    project settled, every later request is still answered."""
    proj = client.project
    consumer = (proj / ".harn/events/consumers/evil__stdin.json").as_uri()
    await client.rec.wait_for(lambda: consumer in client.diagnostics, 15)
    assert "-> /dev/stdin leaves the project; not followed" in client.diagnostics[consumer][0].message
    t0 = time.monotonic()
    wts = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/worktrees.md"))).text
    assert time.monotonic() - t0 < 5
    assert "w1" in wts and "SECRET" not in wts and "Content-Length" not in wts
    head = (proj / ".git/worktrees/w1/HEAD").as_uri()
    await client.rec.wait_for(lambda: head in client.diagnostics, 10)
    assert "-> /dev/stdin leaves the project; not followed" in client.diagnostics[head][0].message

    # After the settle: the log becomes a FIFO; the watcher re-reads it.
    log = proj / FIFO_NS
    log.unlink()
    os.mkfifo(log)
    await client.rec.wait_for(lambda: log.as_uri() in client.diagnostics, 15)
    assert "not a regular file" in client.diagnostics[log.as_uri()][0].message
    t0 = time.monotonic()
    index = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/index.md"))).text
    assert time.monotonic() - t0 < 5 and "harn-state:/checkpoints/ingest.md" in index
