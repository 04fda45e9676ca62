"""WorkProgress (what the load tells) and the CLI's bar (what a terminal shows), issue 36."""

from __future__ import annotations

import io
import json
import os
import pty
import selectors
import subprocess
import sys
from pathlib import Path

from harn_ls.model.workspace import Workspace
from harn_ls.render.progress_bar import TerminalBar, bar_line
from harn_ls.util.progress import WorkProgress, format_bytes, format_of
from tests.lsp.test_progress import _write_project as write_big_project

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"


def test_phases_share_the_whole_and_percentages_never_fall() -> None:
    w = WorkProgress("Harn: loading p")
    assert w.snapshot().percentage is None  # nothing measured yet
    w.phase("memory logs", 1000, 0.9, in_bytes=True)
    w.read_bytes(500)
    s = w.snapshot()
    assert s.percentage == 45 and s.message == "memory logs 500 of 1000 B" and s.done_bytes == 500
    w.phase("checkpoints, skills, runs", 4, 0.1, counted=False)
    w.step(0, "runs")
    w.step(2)
    assert w.snapshot().percentage == 95 and w.snapshot().message == "runs"
    # a later part of the same command (recall's index after its load) takes its own share
    w.within(0.5, 1.0)
    w.phase("recall index", 10, 1.0)
    w.step(2)
    assert w.snapshot().percentage == 95, "never lower than a percentage already shown"
    w.step(8)
    assert w.snapshot().percentage == 100 and w.snapshot().message == "recall index 10 of 10"


def test_sizes_read_as_people_read_them() -> None:
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KB"
    assert format_of(412 * 2**20, 888 * 2**20) == "412 of 888 MB"
    assert format_of(0, 3 * 2**30) == "0 of 3 GB"


def test_bar_line_fits_the_width_and_keeps_its_numbers() -> None:
    w = WorkProgress("harn-ls: a-very-long-project-name-" + "x" * 80)
    w.phase("memory logs", 100 * 2**20, 1.0, in_bytes=True)
    w.read_bytes(25 * 2**20)
    snap = w.snapshot()._replace(elapsed=5.0)
    for width in (40, 79, 200):
        line = bar_line(snap, width)
        assert len(line) <= width
        assert " 25%" in line and "MB/s" in line and "0:15 left" in line
    assert "#" in bar_line(snap, 79, unicode_ok=False) and "\u2588" not in bar_line(snap, 79, unicode_ok=False)


def test_a_fast_piece_of_work_shows_no_bar() -> None:
    stream = io.StringIO()
    stream.isatty = lambda: True  # type: ignore[method-assign]
    w = WorkProgress("harn-ls: p")
    with TerminalBar(w, stream, after=1.0):
        w.phase("memory logs", 10, 1.0, in_bytes=True)
        w.read_bytes(10)
    assert stream.getvalue() == ""


def test_the_load_tells_its_bytes(tmp_path: Path) -> None:
    """Every byte of every memory log is counted once, restored from the cache or read."""
    logs = [p for p in SAMPLE.rglob("events.jsonl") if ".harn/memory" in p.as_posix()]
    total = sum(p.stat().st_size for p in logs)
    env = {"HARN_LS_CACHE_DIR": str(tmp_path / "cache")}
    for attempt in ("cold", "warm"):
        w = WorkProgress("t")
        ws = Workspace.load(str(SAMPLE), env=env, cache=True, progress=w)
        snap = w.snapshot()
        assert snap.done_bytes == total, attempt
        assert snap.percentage == 100, attempt
        assert ws.progress is None  # later batches of the watcher tell nobody
        ws.save_cache()


def _run_on_terminal(argv: list[str], env: dict) -> tuple[bytes, bytes, int]:
    """stdout a pipe, stderr a pseudo-terminal: what a person at a terminal sees, and what a pipe gets."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = proc.stdout.read()
    err = b""
    with selectors.DefaultSelector() as readable:  # (select.select refuses a descriptor over 1023)
        readable.register(master, selectors.EVENT_READ)
        while True:
            if not readable.select(5):
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            err += chunk
    os.close(master)
    return out, err, proc.wait(30)


def test_cli_draws_a_bar_on_a_terminal_and_leaves_stdout_alone(tmp_path: Path) -> None:
    """A cold `inspect --json` of ~120k records: long enough for the bar to have drawn a measure."""
    project = write_big_project(tmp_path / "big-project", 120_000)
    base = dict(os.environ, PYTHONPATH=str(REPO), HARN_LS_CACHE="off", HARN_LS_PROGRESS_AFTER="0",
                HARN_LS_PROGRESS_EVERY="0.05")
    argv = [sys.executable, "-m", "harn_ls", "inspect", "--json", str(project)]
    out, err, code = _run_on_terminal(argv, base)
    assert code == 0
    assert b"harn-ls: big-project" in err and b"%" in err and b"memory logs" in err, err[:300]
    assert err.endswith(b"\r\x1b[K"), "the bar takes its line away at the end"
    piped = subprocess.run(argv, capture_output=True, env=base, check=True)
    assert out == piped.stdout, "stdout is exactly what it is without a terminal"
    assert piped.stderr == b"", "no bar when stderr is not a terminal"
    json.loads(out)
    # --quiet: nothing on the terminal either
    out_q, err_q, code_q = _run_on_terminal(argv + ["--quiet"], base)
    assert code_q == 0 and err_q == b"" and out_q == out


def test_cli_recall_bar_covers_the_index_build(tmp_path: Path) -> None:
    """A cold recall over ~120k records: the load's bytes, then the index build's slices."""
    project = write_big_project(tmp_path / "big", 120_000)
    env = dict(os.environ, PYTHONPATH=str(REPO), HARN_LS_CACHE="off", HARN_LS_PROGRESS_AFTER="0",
                HARN_LS_PROGRESS_EVERY="0.05")
    out, err, code = _run_on_terminal([sys.executable, "-m", "harn_ls", "recall", str(project), "invoice rounding",
                                       "--json"], env)
    assert code == 0 and len(json.loads(out)) == 5
    piped = subprocess.run([sys.executable, "-m", "harn_ls", "recall", str(project), "invoice rounding", "--json"],
                           capture_output=True, env=env, check=True)
    assert out == piped.stdout, "the index built in slices for the bar gives the same scores, bit for bit"
    frames = [f for f in err.split(b"\r") if f.strip(b"\x1b[K")]
    assert any(b"memory logs" in f for f in frames) and any(b"recall index" in f for f in frames), frames[:5]
    pcts = [int(f.rsplit(b"%", 1)[0].rsplit(b" ", 1)[-1]) for f in frames if b"%" in f]
    assert pcts == sorted(pcts) and pcts[-1] > 50
