"""Writes keep the file's mode/owner and never follow a symlink swapped in after the check;
lock files drive the "running now" state, and reading them never creates one (harn-formats §O.6, §O.7)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed, append_lines, atomic_write
from harn_ls.formats import locks as L
from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json
from tests.helpers.lock_holder import lock_holder  # noqa: F401 (pytest fixture)
from tests.helpers.tree import snapshot

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"



@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    (tmp_path / "proj-evil").mkdir()
    return dest




def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_replaced_file_keeps_mode_new_file_gets_harns(project):
    target = project / ".harn/checkpoints/review.json"
    for mode in (0o600, 0o640, 0o604):
        os.chmod(target, mode)
        atomic_write(str(project), str(target), "{}")
        assert stat.S_IMODE(target.stat().st_mode) == mode and target.read_text() == "{}"
        assert target.stat().st_uid == os.getuid()
    fresh = project / ".harn/new/file.json"
    atomic_write(str(project), str(fresh), "x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~_umask()
    log = project / ".harn/memory/new/events.jsonl"
    append_lines(str(project), str(log), ["{}"])
    assert stat.S_IMODE(log.stat().st_mode) == 0o666 & ~_umask()
    os.chmod(log, 0o600)
    append_lines(str(project), str(log), ["{}"])
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and log.read_text() == "{}\n{}\n"


def test_symlinked_targets_are_refused(project, tmp_path):
    secret = tmp_path / "proj-evil" / "secret.json"
    secret.write_text("keep")
    link = project / ".harn/checkpoints/evil.json"
    os.symlink(secret, link)
    with pytest.raises(ActionFailed, match="refused"):
        atomic_write(str(project), str(link), "{}")
    inner = project / ".harn/checkpoints/inner.json"
    os.symlink(project / ".harn/checkpoints/review.json", inner)  # even one that stays inside
    with pytest.raises(ActionFailed, match="symlink"):
        atomic_write(str(project), str(inner), "{}")
    log_link = project / ".harn/memory/evil/events.jsonl"
    log_link.parent.mkdir(parents=True)
    os.symlink(secret, log_link)
    with pytest.raises(ActionFailed, match="refused"):
        append_lines(str(project), str(log_link), ["{}"])
    assert secret.read_text() == "keep"


FLIPPER = """
import os, sys
race, inside, evil, target, evil_target, stop, count = sys.argv[1:8]
cfd = os.open(count, os.O_WRONLY | os.O_CREAT, 0o600)
for name, dest in (("l-in", inside), ("l-evil", evil), ("t-evil", evil_target)):
    if not os.path.lexists(race + "." + name):
        os.symlink(dest, race + "." + name)
print("ready", flush=True)
n = 0
while not os.path.exists(stop):
    # the folder: a symlink flipped atomically between a folder inside and one in proj-evil
    os.symlink(inside, race + ".tmp-in"); os.rename(race + ".tmp-in", race)
    os.symlink(evil, race + ".tmp-evil"); os.rename(race + ".tmp-evil", race)
    os.symlink(inside, race + ".tmp-in"); os.rename(race + ".tmp-in", race)
    # the file: replaced by a symlink to a file in proj-evil, then by a regular file again
    try:
        os.symlink(evil_target, target + ".tmp-link"); os.rename(target + ".tmp-link", target)
        with open(target + ".tmp-file", "w") as fh:
            fh.write("{}")
        os.rename(target + ".tmp-file", target)
    except OSError:
        pass
    n += 1
    if n % 10 == 0:  # (how far it got, for the writer: it stops on counts, never on the clock)
        os.pwrite(cfd, str(n).encode().ljust(20), 0)
print(n, flush=True)
"""
MIN_FLIPS = 100  # flips of the folder and the file the writes must have raced with
MIN_ATTEMPTS = 1200  # writes tried, half atomic_write, half append_lines
MAX_ATTEMPTS = 300_000  # (a flipper that never runs fails the test here, or at its timeout)


def test_symlink_swapped_in_during_writes_is_never_followed(project, tmp_path):
    """A second process flips the target's folder and the target itself between real and symlinks to `proj-evil`."""
    evil = tmp_path / "proj-evil"
    (evil / "target.json").write_text("evil")
    inside = project / ".harn/race-real"
    inside.mkdir()
    (inside / "target.json").write_text("{}")
    race = project / ".harn/race"
    os.symlink(inside, race)
    stop, count = tmp_path / "stop", tmp_path / "flips"
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(race), str(inside), str(evil),
                                str(inside / "target.json"), str(evil / "target.json"), str(stop), str(count)],
                               stdout=subprocess.PIPE, text=True)
    assert flipper.stdout.readline().strip() == "ready"
    outcomes = {"written": 0, "refused": 0}

    def flipped() -> int:
        try:
            return int(count.read_bytes().strip() or 0)
        except (OSError, ValueError):
            return 0

    # Deterministic in what it shows: the writes go on until they have raced with enough flips and
    # both outcomes happened (on a busy machine the flipper may get little CPU: then it takes longer)
    attempts = 0
    try:
        while attempts < MAX_ATTEMPTS and not (attempts >= MIN_ATTEMPTS and outcomes["written"] and outcomes["refused"]
                                               and flipped() >= MIN_FLIPS):
            i = attempts // 2
            try:
                if attempts % 2 == 0:
                    atomic_write(str(project), str(race / "target.json"), f'{{"n": {i}}}')
                else:
                    append_lines(str(project), str(race / "log.jsonl"), [f'{{"n": {i}}}'])
                outcomes["written"] += 1
            except (ActionFailed, OSError):
                outcomes["refused"] += 1
            attempts += 1
    finally:
        stop.write_text("")
        flips = int(flipper.stdout.readline().strip() or 0)
        flipper.wait(timeout=10)
    assert sorted(os.listdir(evil)) == ["target.json"] and (evil / "target.json").read_text() == "evil"
    assert flips >= MIN_FLIPS and outcomes["written"] > 0 and outcomes["refused"] > 0, (flips, attempts, outcomes)


def test_reads_never_create_lock_files(project, tmp_path):
    before = snapshot(tmp_path)
    ws = Workspace.load(str(project))
    data = inspect_json(ws)
    assert [c["running"] for c in data["checkpoints"]] == [False, False]
    assert [s["running"] for s in data["sessions"]["sessions"]] == [False, False]
    from harn_ls.render import RenderSettings, parse_uri
    from harn_ls.render.documents import render

    render(ws, parse_uri("harn-state:/checkpoints/ingest.md"), RenderSettings())
    render(ws, parse_uri("harn-state:/sessions/sess-review-481.md"), RenderSettings())
    assert snapshot(tmp_path) == before


def test_running_state_follows_real_lock_holders(project, lock_holder):
    ws = Workspace.load(str(project))
    store = ws.paths.session_store
    lease = Path(L.session_lock_path(store, "sess-review-481"))
    assert lease.name == L.blake3_hex(b"sess-review-481") + ".lock"
    lease.parent.mkdir()
    lock_holder(lease.parent / "project.lock", "sh")  # a live writer holds the project lease shared
    proc = lock_holder(lease)  # and its session lease exclusively
    ckpt = lock_holder(project / ".harn/checkpoints/ingest.lock")
    data = inspect_json(ws)
    assert {s["id"]: s["running"] for s in data["sessions"]["sessions"]} == {"sess-ingest-0506": False,
                                                                            "sess-review-481": True}
    assert data["sessions"]["running_writers"] == 1
    assert {c["pipeline"]: c["running"] for c in data["checkpoints"]} == {"ingest": True, "review": False}
    from harn_ls.render import RenderSettings, parse_uri
    from harn_ls.render.documents import render

    assert "**Writing now**" in render(ws, parse_uri("harn-state:/checkpoints/ingest.md"), RenderSettings())
    assert "| running now | yes" in render(ws, parse_uri("harn-state:/sessions/sess-review-481.md"), RenderSettings())
    proc.stdin.close()
    proc.wait(timeout=10)
    ckpt.stdin.close()
    ckpt.wait(timeout=10)
    data = inspect_json(ws)
    assert not any(s["running"] for s in data["sessions"]["sessions"])
    assert not any(c["running"] for c in data["checkpoints"])


def test_lock_helpers():
    assert L.checkpoint_lock_path("/s/checkpoints/a.b.json") == "/s/checkpoints/a.b.lock"  # Path::with_extension
    assert L.checkpoint_lock_path("/s/checkpoints/main.json") == "/s/checkpoints/main.lock"
    # harn-formats §O.7 vector (computed there with the PyPI blake3 package) and BLAKE3's empty-input hash
    assert L.blake3_hex(b"0196a7c2-5a10-7d3e-9b1f-2c4d6e8fa0b1") == \
        "df488619e4d1b1e0155e2f58e97e4f18f1789f596cb0c77c62b905e81690bd7f"
    assert L.blake3_hex(b"") == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    assert L.blake3_hex(b"x" * 1025) is None
    table = L.read_flock_table()
    assert table is not None and L.FlockTable({}).state("/nonexistent/x.lock") is False
    proc_locks = "1: FLOCK  ADVISORY  WRITE 12 fd:01:5678 0 EOF\n2: POSIX  ADVISORY  WRITE 13 fd:01:99 0 EOF\n" \
                 "3: -> FLOCK  ADVISORY  WRITE 14 fd:01:77 0 EOF\n"
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"harn-ls-proc-locks-{os.getpid()}"
    path.write_text(proc_locks)
    try:
        parsed = L.read_flock_table(str(path))
    finally:
        path.unlink()
    assert parsed.held == {(0xFD, 0x01, 5678): "WRITE"}  # POSIX locks and blocked waiters are not flocks held
