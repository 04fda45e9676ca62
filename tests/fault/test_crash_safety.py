"""Fault injection: SIGKILL a process running accept / reject / invalidate / forget-stage at
random moments, then check that nothing on disk is torn or half-done, and that running the
sequence again (the recovery path) ends exactly where an uninterrupted run ends.

HARN_LS_FAULT_KILLS (default 60) sets the number of kills, HARN_LS_FAULT_SEED the seed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from harn_ls.formats.problems import Severity
from harn_ls.workspace import Workspace
from tests.fault import crash_worker as W

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "sample-project"
WORKER = Path(__file__).with_name("crash_worker.py")
KILLS = int(os.environ.get("HARN_LS_FAULT_KILLS", "60"))
SEED = int(os.environ.get("HARN_LS_FAULT_SEED", "20260512"))
# Only what the actions read or write: keeps each fresh copy cheap.
COPY = ["harn.toml", ".harn/memory", ".harn/checkpoints", ".harn/skills", ".claude", ".burin"]
LOGS = [".harn/memory/project/pattern-learning/events.jsonl", ".harn/memory/project/facts/events.jsonl"]


def fresh_copy(dest: Path) -> None:
    for rel in COPY:
        src = FIXTURE / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, symlinks=True)
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def is_temp(name: str) -> bool:
    return ".harn-ls-" in name and name.endswith(".tmp")


def files(project: Path) -> tuple[dict[str, bytes], list[str]]:
    """Every regular file except the logs (project path normalized), plus leftover temp files."""
    out, temps = {}, []
    root = str(project).encode()
    for dirpath, _, names in os.walk(project):
        for name in names:
            p = Path(dirpath) / name
            rel = str(p.relative_to(project))
            if rel in LOGS:
                continue
            if is_temp(name):
                temps.append(rel)
                continue
            out[rel] = p.read_bytes().replace(root, b"<ROOT>")
    return out, temps


def log_lines(project: Path, rel: str) -> list[str]:
    data = (project / rel).read_bytes()
    assert data == b"" or data.endswith(b"\n"), f"{rel}: torn last line"
    lines = data.decode("utf-8").split("\n")[:-1]
    for no, line in enumerate(lines, 1):
        event = orjson.loads(line)  # raises on a torn or merged line
        assert isinstance(event, dict) and event.get("type") in ("store", "forget", "open", "update"), (rel, no)
    return lines


def shape(line: str) -> tuple:
    e = json.loads(line)
    return (e["type"], e.get("key") or json.dumps(e.get("predicate"), sort_keys=True))


def semantic(project: Path) -> dict:
    ws = Workspace.load(str(project))
    return {
        "pending": sorted(p.id for p in ws.pattern.pending),
        "suppressed": dict(ws.pattern.state.suppressed_until),
        "enabled": ws.pattern.state.enabled,
        "states": len(ws.pattern.state_records),
        "facts": sorted(ws.facts_by_id),
        "checkpoints": {k: sorted(v.entries) for k, v in ws.checkpoints.items()},
        "skills": sorted((s.id, s.layer, s.loadable) for s in ws.skills.skills),
        "errors": sorted((os.path.relpath(p.path, project), p.code) for p in ws.problems()
                         if p.severity == Severity.ERROR),
    }


def groups(init: list[str], final: list[str]) -> list[int]:
    """Line counts of each action's append in the reference log (a reject is 3 lines, in one write)."""
    out, i = [], len(init)
    while i < len(final):
        e = json.loads(final[i])
        pred = e.get("predicate") or {}
        if e["type"] == "forget" and i + 1 < len(final) and json.loads(final[i + 1]).get("predicate") == {"key": "state"}:
            out.append(3)
            i += 3
        else:
            out.append(1)
            i += 1
        assert e["type"] == "forget" and pred, "the sequence appends forget-led groups only"
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("fault-ref")
    init = base / "init"
    fresh_copy(init)
    ref = base / "ref"
    fresh_copy(ref)
    W.run(str(ref))
    # the worker is deterministic apart from ids: a second run is a no-op
    before = {rel: (ref / rel).read_bytes() for rel in LOGS}
    W.run(str(ref))
    assert {rel: (ref / rel).read_bytes() for rel in LOGS} == before
    init_files, _ = files(init)
    ref_files, ref_temps = files(ref)
    assert not ref_temps
    init_logs = {rel: log_lines(init, rel) for rel in LOGS}
    ref_logs = {rel: log_lines(ref, rel) for rel in LOGS}
    # the project path differs per copy: compare through the <ROOT> placeholder
    return {
        "init_files": init_files, "ref_files": ref_files, "init_logs": init_logs,
        "ref_shapes": {rel: [shape(line) for line in ref_logs[rel][len(init_logs[rel]):]] for rel in LOGS},
        "groups": {rel: groups(init_logs[rel], ref_logs[rel]) for rel in LOGS},
        "init_sem": semantic(init), "ref_sem": {**semantic(ref)}, "ref_path": ref,
    }


def spawn(project: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, str(WORKER), str(project)], stdout=subprocess.PIPE, env=env, cwd=str(REPO))
    assert proc.stdout.readline() == b"ready\n"
    return proc


def check_after_kill(project: Path, ref: dict) -> str:
    # 1. every log line parses, nothing torn, earlier lines untouched, whole action groups only
    for rel in LOGS:
        lines = log_lines(project, rel)
        init = ref["init_logs"][rel]
        assert lines[: len(init)] == init, f"{rel}: earlier lines changed"
        got = [shape(line) for line in lines[len(init):]]
        assert got == ref["ref_shapes"][rel][: len(got)], f"{rel}: unexpected events {got}"
        cuts = [0]
        for size in ref["groups"][rel]:
            cuts.append(cuts[-1] + size)
        assert len(got) in cuts, f"{rel}: an action was half-appended ({len(got)} lines)"
    # 2. every file is the old one or the complete new one (SKILL.md, staged files, checkpoints)
    current, _temps = files(project)
    for rel, data in current.items():
        assert data in (ref["init_files"].get(rel), ref["ref_files"].get(rel)), f"{rel}: partial or unexpected content"
    for rel in ref["init_files"]:
        assert rel in current, f"{rel}: an existing file vanished"
    for rel in (r for r in current if r.startswith(".harn/checkpoints/")):
        assert isinstance(orjson.loads(current[rel]), dict)
    # 3. Harn's order for accept: the files are complete before the forget is appended
    pattern = log_lines(project, LOGS[0])
    for line in pattern[len(ref["init_logs"][LOGS[0]]):]:
        pred = json.loads(line).get("predicate") or {}
        pid = pred.get("key", "")[len("pending:"):]
        if pid in W.ACCEPT_FILES and (pred.get("key") and not _is_reject(pattern, line)):
            for rel in W.ACCEPT_FILES[pid]:
                assert current.get(rel) == ref["ref_files"][rel], f"forget for {pid} appended before {rel} was complete"
    if current == ref["init_files"] and all(
            log_lines(project, rel) == ref["init_logs"][rel] for rel in LOGS):
        return "nothing"
    done = current == ref["ref_files"] and all(
        [shape(x) for x in log_lines(project, rel)[len(ref["init_logs"][rel]):]] == ref["ref_shapes"][rel] for rel in LOGS)
    return "complete" if done else "partial"


def _is_reject(lines: list[str], line: str) -> bool:
    i = lines.index(line)
    return i + 1 < len(lines) and json.loads(lines[i + 1]).get("predicate") == {"key": "state"}


def test_kill_at_random_points(reference, tmp_path, capsys):
    rng = random.Random(SEED)
    # calibrate: how long the whole sequence takes once the workspace is loaded
    calib = tmp_path / "calib"
    fresh_copy(calib)
    proc = spawn(calib)
    start = time.perf_counter()
    assert proc.stdout.readline() == b"done\n"
    span = max(time.perf_counter() - start, 0.005)
    assert proc.wait(timeout=120) == 0
    shutil.rmtree(calib)

    outcomes: Counter = Counter()
    temps_left = 0
    for i in range(KILLS):
        project = tmp_path / f"k{i}"
        fresh_copy(project)
        proc = spawn(project)
        time.sleep(rng.uniform(0, span))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        outcome = check_after_kill(project, reference)
        outcomes[outcome] += 1
        temps_left += len(files(project)[1])
        # a reader sees no new errors even on the crashed state (Harn would load it)
        assert semantic(project)["errors"] == reference["init_sem"]["errors"]
        # recovery: run the sequence again; it must end exactly where the uninterrupted run ended
        W.run(str(project))
        final_files, _ = files(project)
        assert final_files == reference["ref_files"], f"kill {i}: recovery left different files"
        for rel in LOGS:
            got = [shape(x) for x in log_lines(project, rel)[len(reference["init_logs"][rel]):]]
            assert got == reference["ref_shapes"][rel], f"kill {i}: recovery appended {got}"
        assert semantic(project) == reference["ref_sem"], f"kill {i}: recovered state differs"
        shutil.rmtree(project)
    with capsys.disabled():
        print(f"\n[fault] {KILLS} SIGKILLs (seed {SEED}, sequence {span * 1000:.0f} ms): "
              f"{dict(outcomes)}; temp files left behind: {temps_left}; all recovered")
    assert sum(outcomes.values()) == KILLS
