"""Fault injection: SIGKILL a process running accept (skill and executable kinds) / reject /
invalidate / forget-stage / probe-fact / pattern-learning migration at random moments, then
check that nothing on disk is torn or half-done, and that running the sequence again (the
recovery path) ends exactly where an uninterrupted run ends.

After every kill:
* every events.jsonl parses line by line, nothing torn, earlier lines untouched, and each
  action's append is all there or not at all;
* every other file is the old one or the complete new one (SKILL.md, staged files,
  checkpoints, the migration marker);
* each candidate folder under .harn/crystallization is absent or complete (all 4 files,
  each with the planned bytes); a staging folder is hidden and never mistaken for one;
* the migration marker exists only if every migrated event is in the log;
* a reader sees no new errors; re-running the sequence converges to the reference state.

HARN_LS_FAULT_KILLS (default 60) sets the number of kills, HARN_LS_FAULT_SEED the seed.
The killed processes are forked from one pre-imported server (crash_worker.py --serve).
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

from harn_ls.actions import STAGING_SUFFIX
from harn_ls.formats import pattern_learning as pl
from harn_ls.formats.problems import Severity
from harn_ls.model.workspace import Workspace
from tests.fault import crash_worker as W

REPO = Path(__file__).resolve().parents[2]
SAMPLE_FIXTURE = REPO / "fixtures" / "sample-project"
LEGACY_FIXTURE = REPO / "fixtures" / "legacy-project"
WORKER = Path(__file__).with_name("crash_worker.py")
KILLS = int(os.environ.get("HARN_LS_FAULT_KILLS", "60"))
SEED = int(os.environ.get("HARN_LS_FAULT_SEED", "20260512"))
# Only what the actions read or write: keeps each fresh copy cheap.
SAMPLE_COPY = ["harn.toml", ".harn/memory", ".harn/checkpoints", ".harn/skills", ".claude", ".burin", "pipelines"]
PATTERN_LOG = ".harn/memory/project/pattern-learning/events.jsonl"
FACTS_LOG = ".harn/memory/project/facts/events.jsonl"
LOGS = [f"sample/{PATTERN_LOG}", f"sample/{FACTS_LOG}", f"legacy/{PATTERN_LOG}"]
LEGACY_LOG = LOGS[2]
MARKER = f"legacy/.harn/memory/project/pattern-learning/{pl.MIGRATION_MARKER}"
CRYSTAL = "sample/.harn/crystallization"


def is_staging_name(name: str) -> bool:
    """A harn-ls staging folder: `.<target>.harn-ls-<hex>.staging` (see harn_ls.actions.staging_name)."""
    return name.startswith(".") and ".harn-ls-" in name and name.endswith(STAGING_SUFFIX)


def fresh_copy(case: Path) -> None:
    """`case/sample` (a part of the sample project) and `case/legacy` (the whole legacy project)."""
    for rel in SAMPLE_COPY:
        src, dest = SAMPLE_FIXTURE / rel, case / "sample" / rel
        if src.is_dir():
            shutil.copytree(src, dest, symlinks=True)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
    shutil.copytree(LEGACY_FIXTURE, case / "legacy", symlinks=True)


def projects(case: Path) -> tuple[str, str]:
    return str(case / "sample"), str(case / "legacy")


def is_temp(name: str) -> bool:
    return ".harn-ls-" in name and name.endswith(".tmp")


def files(case: Path) -> tuple[dict[str, bytes], list[str]]:
    """Every regular file except the logs (case path normalized), plus leftover temp files and
    staging folders (whose content is never read as state)."""
    out, temps = {}, []
    root = str(case).encode()
    for dirpath, dirnames, names in os.walk(case):
        for d in list(dirnames):
            if is_staging_name(d):
                temps.append(str((Path(dirpath) / d).relative_to(case)))
                dirnames.remove(d)
        for name in names:
            p = Path(dirpath) / name
            rel = str(p.relative_to(case))
            if rel in LOGS:
                continue
            if is_temp(name):
                temps.append(rel)
                continue
            out[rel] = p.read_bytes().replace(root, b"<ROOT>")
    return out, temps


def log_lines(case: Path, rel: str, torn: list | None = None) -> list[str]:
    """The complete lines of a log. A torn tail fails, unless `torn` collects it (right after a kill)."""
    path = case / rel
    if not path.exists():
        return []
    data = path.read_bytes()
    if torn is not None and data and not data.endswith(b"\n"):
        data, tail = data[: data.rfind(b"\n") + 1], data[data.rfind(b"\n") + 1:]
        torn.append((rel, tail))
    assert data == b"" or data.endswith(b"\n"), f"{rel}: torn last line"
    lines = data.decode("utf-8").split("\n")[:-1]
    for no, line in enumerate(lines, 1):
        event = orjson.loads(line)  # raises on a torn or merged line
        assert isinstance(event, dict) and event.get("type") in ("store", "forget", "open", "update"), (rel, no)
    return lines


def shape(line: str) -> tuple:
    e = json.loads(line)
    return (e["type"], e.get("key") or json.dumps(e.get("predicate"), sort_keys=True))


def semantic(case: Path) -> dict:
    out = {}
    for name in ("sample", "legacy"):
        ws = Workspace.load(str(case / name))
        out[name] = {
            "pending": sorted(p.id for p in ws.pattern.pending),
            "suppressed": dict(ws.pattern.state.suppressed_until),
            "enabled": ws.pattern.state.enabled,
            "states": len(ws.pattern.state_records),
            "facts": sorted(ws.facts_by_id),
            "checkpoints": {k: sorted(v.entries) for k, v in ws.checkpoints.items()},
            "skills": sorted((s.id, s.layer, s.loadable) for s in ws.skills.skills),
            "errors": sorted((os.path.relpath(p.path, case), p.code) for p in ws.problems()
                             if p.severity == Severity.ERROR),
        }
    return out


def log_lengths(case: Path) -> dict[str, int]:
    return {rel: len(log_lines(case, rel)) for rel in LOGS}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("fault-ref")
    init = base / "init"
    fresh_copy(init)
    ref = base / "ref"
    fresh_copy(ref)
    # the line counts of every log after each step: an action's append is one group
    cuts = {rel: {n} for rel, n in log_lengths(ref).items()}

    def after_step(_step):
        for rel, n in log_lengths(ref).items():
            cuts[rel].add(n)

    W.run(*projects(ref), after_step=after_step)
    # the worker is deterministic apart from ids: a second run is a no-op
    before = {rel: (ref / rel).read_bytes() for rel in LOGS}
    files_before = files(ref)
    W.run(*projects(ref))
    assert {rel: (ref / rel).read_bytes() for rel in LOGS} == before
    assert files(ref) == files_before
    init_files, _ = files(init)
    ref_files, ref_temps = files(ref)
    assert not ref_temps
    init_logs = {rel: log_lines(init, rel) for rel in LOGS}
    ref_logs = {rel: log_lines(ref, rel) for rel in LOGS}
    # every kind of write really happens in the sequence
    assert all(rel in ref_files for rels in W.ACCEPT_FILES.values() for rel in (f"sample/{r}" for r in rels))
    assert MARKER in ref_files and MARKER not in init_files
    assert len(ref_logs[LEGACY_LOG]) > 2 and init_logs[LEGACY_LOG] == []
    probe_facts = [json.loads(x) for x in ref_logs[f"sample/{FACTS_LOG}"][len(init_logs[f"sample/{FACTS_LOG}"]):]]
    assert any(W.PROBE_REF in x.get("text", "") for x in probe_facts if x["type"] == "store")
    candidates = {}
    for rel, data in ref_files.items():
        if rel.startswith(CRYSTAL + "/"):
            candidates.setdefault(rel[len(CRYSTAL) + 1:].split("/")[0], {})[rel] = data
    assert set(candidates) == {W.CURATED} and len(candidates[W.CURATED]) == 4
    # the project path differs per copy: compare through the <ROOT> placeholder
    return {
        "init_files": init_files, "ref_files": ref_files, "init_logs": init_logs,
        "ref_shapes": {rel: [shape(line) for line in ref_logs[rel][len(init_logs[rel]):]] for rel in LOGS},
        "cuts": {rel: sorted(n - len(init_logs[rel]) for n in cuts[rel]) for rel in LOGS},
        "candidates": candidates,
        "init_sem": semantic(init), "ref_sem": semantic(ref), "ref_path": ref,
    }


class ForkServer:
    """crash_worker.py --serve: each round forks a pre-imported child that is then SIGKILLed."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen([sys.executable, str(WORKER), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, cwd=str(REPO))
        assert self._line() == "ready"

    def _line(self) -> str:
        line = self.proc.stdout.readline().decode()
        assert line.endswith("\n"), f"fork server died (exit {self.proc.poll()})"
        return line.strip()

    def start(self, case: Path) -> int:
        self.proc.stdin.write("run {} {}\n".format(*projects(case)).encode())
        self.proc.stdin.flush()
        word, pid = self._line().split()
        assert word == "loaded", word
        self.done, self.step, self.status, self.stamps = False, -1, None, {}
        return int(pid)

    def _next(self) -> None:
        line = self._line()
        if line == "done":
            self.done = True
        elif line.startswith("step "):
            self.step = int(line.split()[1])
            self.stamps[self.step] = time.perf_counter()
        elif line.startswith("exit "):
            self.status = int(line.split()[1])
        else:
            raise AssertionError(f"fork server: {line}")

    def wait_step(self, k: int) -> bool:
        """Block until the child starts step k (True) or is gone (False)."""
        while self.status is None and self.step < k:
            self._next()
        return self.status is None and self.step == k

    def finish(self) -> tuple[bool, int, int]:
        """(the sequence printed `done`, the child's exit status: -9 when killed, last step started)."""
        while self.status is None:
            self._next()
        return self.done, self.status, self.step

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def check_after_kill(case: Path, ref: dict, torn: list) -> str:
    # 1. every log line parses, earlier lines untouched, whole action groups only. The one exception:
    # a kill inside a write that spans pages leaves a prefix of that write (the kernel stops between
    # pages); it must be the last write, end torn, and the recovery run must cut it away (asserted
    # by the caller, which reads the logs strictly again after recovery).
    for rel in LOGS:
        before = len(torn)
        lines = log_lines(case, rel, torn)
        init = ref["init_logs"][rel]
        assert lines[: len(init)] == init, f"{rel}: earlier lines changed"
        got = [shape(line) for line in lines[len(init):]]
        assert got == ref["ref_shapes"][rel][: len(got)], f"{rel}: unexpected events {got}"
        if len(torn) > before:
            tail = torn[-1][1]
            assert tail.startswith(b'{"type":"'), f"{rel}: torn tail is not the start of one of our lines: {tail[:60]!r}"
            continue
        assert len(got) in ref["cuts"][rel], f"{rel}: an action was half-appended ({len(got)} lines)"
    # 2. every file is the old one or the complete new one (SKILL.md, staged files, checkpoints, marker)
    current, _temps = files(case)
    for rel, data in current.items():
        assert data in (ref["init_files"].get(rel), ref["ref_files"].get(rel)), f"{rel}: partial or unexpected content"
    for rel in ref["init_files"]:
        assert rel in current, f"{rel}: an existing file vanished"
    for rel in (r for r in current if r.startswith("sample/.harn/checkpoints/") and r.endswith(".json")):  # not <pipeline>.lock
        assert isinstance(orjson.loads(current[rel]), dict)
    # 3. a candidate folder is absent or complete: all 4 files, each with the planned bytes
    crystal = case / CRYSTAL
    for name in (os.listdir(crystal) if crystal.is_dir() else []):
        if is_staging_name(name):
            continue
        got = {rel: data for rel, data in current.items() if rel.startswith(f"{CRYSTAL}/{name}/")}
        assert got == ref["candidates"].get(name), f"candidate {name}: half-staged ({sorted(got)})"
    # 4. the migration marker exists only if every migrated event is in the log
    if (case / MARKER).exists():
        got = [shape(x) for x in log_lines(case, LEGACY_LOG)]
        assert got == ref["ref_shapes"][LEGACY_LOG], "migration marker written before all events were appended"
    # 5. Harn's order for accept: the files are complete before the forget is appended
    pattern = log_lines(case, LOGS[0], [])
    for i, line in enumerate(pattern[len(ref["init_logs"][LOGS[0]]):], len(ref["init_logs"][LOGS[0]])):
        pred = json.loads(line).get("predicate") or {}
        pid = pred.get("key", "")[len("pending:"):]
        is_reject = i + 1 < len(pattern) and json.loads(pattern[i + 1]).get("predicate") == {"key": "state"}
        if pid in W.ACCEPT_FILES and not is_reject:
            for rel in W.ACCEPT_FILES[pid]:
                rel = f"sample/{rel}"
                assert current.get(rel) == ref["ref_files"][rel], f"forget for {pid} appended before {rel} was complete"
    logs_now = {rel: [shape(x) for x in log_lines(case, rel, [])[len(ref["init_logs"][rel]):]] for rel in LOGS}
    if current == ref["init_files"] and not any(logs_now.values()):
        return "nothing"
    return "complete" if current == ref["ref_files"] and logs_now == ref["ref_shapes"] else "partial"


def test_kill_at_random_points(reference, tmp_path, capsys):
    rng = random.Random(SEED)
    server = ForkServer()
    try:
        # calibrate: how long each step takes once the workspaces are loaded (slowest of 3 runs)
        durations = [0.0] * len(W.STEPS)
        for c in range(3):
            calib = tmp_path / f"calib{c}"
            fresh_copy(calib)
            server.start(calib)
            done, status, _ = server.finish()
            end = time.perf_counter()
            assert done and status == 0
            stamps = [server.stamps[k] for k in range(len(W.STEPS))] + [end]
            for k in range(len(W.STEPS)):
                durations[k] = max(durations[k], stamps[k + 1] - stamps[k])
            shutil.rmtree(calib)
        span = sum(durations)

        outcomes: Counter = Counter()
        during: Counter = Counter()  # the step a kill interrupted
        windows: Counter = Counter()
        temps_left = killed = 0
        started = time.perf_counter()
        for i in range(KILLS):
            case = tmp_path / f"k{i}"
            fresh_copy(case)
            pid = server.start(case)
            # 4 kills in 5 aim at one step, taking the steps in turn (so the fast ones are hit as
            # often as the slow probe), at a uniform moment within it; the 5th anywhere in the sequence
            if i % 5 != 4:
                k = (i - i // 5) % len(W.STEPS)
                server.wait_step(k)
                time.sleep(rng.uniform(0, durations[k]))
            else:
                time.sleep(rng.uniform(0, span))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            done, status, step = server.finish()
            assert status in (0, -signal.SIGKILL), f"kill {i}: worker failed with status {status}"
            killed += status == -signal.SIGKILL
            if status == -signal.SIGKILL:
                during[f"{step}:{W.STEPS[step][0]}" if step >= 0 else "load"] += 1
            torn: list = []
            outcome = check_after_kill(case, reference, torn)
            windows["write cut between pages (rolled back on recovery)"] += bool(torn)
            outcomes[outcome] += 1
            temps = files(case)[1]
            temps_left += len(temps)
            # the windows this test exists for, counted so a run shows they were really hit
            windows["staging folder left, no candidate"] += any(is_staging_name(Path(t).name) for t in temps) \
                and not (case / CRYSTAL / W.CURATED).exists()
            windows["candidate complete, forget not appended"] += (case / CRYSTAL / W.CURATED).exists() \
                and Workspace.load(str(case / "sample")).proposal(W.CURATED) is not None
            windows["migrated events, no marker"] += bool(log_lines(case, LEGACY_LOG, [])) and not (case / MARKER).exists()
            # a reader sees no new errors even on the crashed state (Harn would load it)
            assert {k: v["errors"] for k, v in semantic(case).items()} == \
                {k: v["errors"] for k, v in reference["init_sem"].items()}
            # recovery: run the sequence again; it must end exactly where the uninterrupted run ended
            W.run(*projects(case))
            final_files, _ = files(case)
            assert final_files == reference["ref_files"], f"kill {i}: recovery left different files"
            for rel in LOGS:
                got = [shape(x) for x in log_lines(case, rel)[len(reference["init_logs"][rel]):]]
                assert got == reference["ref_shapes"][rel], f"kill {i}: recovery appended {got}"
            assert semantic(case) == reference["ref_sem"], f"kill {i}: recovered state differs"
            shutil.rmtree(case)
    finally:
        server.close()
    with capsys.disabled():
        print(f"\n[fault] {KILLS} SIGKILLs sent, {killed} landed mid-sequence (seed {SEED}, sequence "
              f"{span * 1000:.0f} ms, {time.perf_counter() - started:.1f} s): {dict(outcomes)}; "
              f"temp files/staging dirs left behind: {temps_left}; all recovered\n"
              f"[fault] crash windows hit: {dict(windows)}\n"
              f"[fault] kills by step: "
              f"{dict(sorted(during.items(), key=lambda kv: int(kv[0].split(':')[0]) if kv[0] != 'load' else -1))}")
    assert sum(outcomes.values()) == KILLS
