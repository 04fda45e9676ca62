"""Adapters: feed bytes to each on-disk reader the way the workspace would, collect every Problem.

Each adapter writes the bytes where the reader expects them (under a scratch
project), calls the pure reader, and returns the problems. Anything the reader
raises escapes to the test, which is the point.
"""

from __future__ import annotations

import os
from pathlib import Path

from harn_ls.formats import checkpoints as ckpt_fmt
from harn_ls.formats import facts as facts_fmt
from harn_ls.formats import paths as paths_mod
from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats import probes as probes_fmt
from harn_ls.formats import runs as runs_fmt
from harn_ls.formats import session_store as ss_fmt
from harn_ls.formats import skills as skills_fmt
from harn_ls.formats import transcripts as tr_fmt
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.recall import NamespaceIndex
from tests.fuzz.common import LEGACY, SAMPLE
from tests.helpers import transcripts as tr_helpers


class Scratch:
    """One scratch project reused across examples (hypothesis forbids function fixtures per example)."""

    def __init__(self, base: Path) -> None:
        self.root = base / "scratch"
        (self.root / ".harn").mkdir(parents=True, exist_ok=True)
        (self.root / "harn.toml").write_text('[package]\nname = "scratch"\n')
        self.paths = paths_mod.resolve(str(self.root), env={}, home=str(base / "home"))

    def put(self, rel: str, data: bytes) -> str:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
        return str(path)


def read_memory(sc: Scratch, data: bytes, ns: str = "project/facts") -> list:
    path = sc.put(f".harn/memory/{ns}/events.jsonl", data)
    tail = JsonlTail(path, chunk_bytes=4096)  # small chunks: exercise the carry between chunks
    space = MemoryNamespace(ns, path)
    index = NamespaceIndex(ns)
    for batch in tail.iter_batches():
        delta = space.apply_lines(batch.lines)
        index.apply_delta(delta)
    problems = list(space.problems)
    torn = tail.torn_problem()
    if torn is not None:
        problems.append(torn)
    records = space.records()
    for r in records:
        if isinstance(r.value, dict) and r.value.get("schema") == "harn.fact.v1":
            _, fp = facts_fmt.fact_from_record(r, str(sc.root), path)
            problems.extend(fp)
    problems.extend(pl_fmt.project_pattern_learning(records, path).problems)
    space.apply_lines([])
    return problems


def read_checkpoint(sc: Scratch, data: bytes) -> list:
    path = sc.put(".harn/checkpoints/fuzz.json", data)
    cf = ckpt_fmt.read_checkpoint_file(path)
    for e in cf.entries.values():
        repr(e)
    return cf.problems


def read_skill(sc: Scratch, data: bytes, sig: bytes | None = None) -> list:
    path = sc.put(".harn/skills/fuzzed/SKILL.md", data)
    sig_path = path + ".sig"
    if sig is not None:
        sc.put(".harn/skills/fuzzed/SKILL.md.sig", sig)
    elif os.path.exists(sig_path):
        os.unlink(sig_path)
    problems = list(skills_fmt.parse_skill_file(path, "project", trusted_signers_dir=str(SAMPLE.parent / "trusted-signers"),
                                                confine_to=str(sc.root)).problems)
    problems += skills_fmt.parse_skill_file(path, "claude", confine_to=str(sc.root)).problems
    return problems


def read_run(sc: Scratch, data: bytes) -> list:
    path = sc.put(".harn-runs/run_fuzz.json", data)
    run = runs_fmt.read_run_record(path)
    problems = list(run.problems)
    for tr in run.transcripts:
        problems += tr.problems
        tr_helpers.visible_events(tr, include_private=True)
        tr_helpers.compactions(tr)
    # The same bytes read in parts (a big record's path): the same record and problems (bytes the
    # parts refuse are parsed whole, as above).
    whole_from, runs_fmt.LAZY_RECORD_BYTES = runs_fmt.LAZY_RECORD_BYTES, 1
    try:
        parts = runs_fmt.read_run_record(path)
    finally:
        runs_fmt.LAZY_RECORD_BYTES = whole_from
    assert parts.problems == run.problems and parts.id == run.id and parts.status == run.status
    assert parts.retry == run.retry and (parts.data is None) == (run.data is None)
    assert [len(t.events) for t in parts.transcripts] == [len(t.events) for t in run.transcripts]
    for tr in parts.transcripts:
        tr_helpers.visible_events(tr, include_private=True)
    return problems


def read_worker(sc: Scratch, data: bytes) -> list:
    path = sc.put(".harn/workers/worker-fuzz.json", data)
    snap = runs_fmt.read_worker_snapshot(path)
    problems = list(snap.problems)
    if snap.transcript is not None:
        problems += snap.transcript.problems
    return problems


def read_llm(sc: Scratch, data: bytes) -> list:
    path = sc.put(".harn-runs/run_fuzz-llm/llm_transcript.jsonl", data)
    tr = tr_fmt.read_llm_transcript(path)
    return tr.problems


def read_transcript_value(sc: Scratch, value) -> list:
    path = str(sc.root / ".harn-runs/run_fuzz.json")
    tr = tr_fmt.transcript_from_value(value, "run:fuzz", path=path, line=1)
    if tr is None:
        return []
    for ev in tr.events:
        _ = ev.visible_text, ev.compaction  # the lazy properties must not raise on any input
    tr_helpers.message_text(value, hide_private=True) if isinstance(value, dict) else None
    return tr.problems


def read_legacy(sc: Scratch, kind: str, data: bytes) -> list:
    state = sc.root / ".harn"
    name = f"burin.agent_context.pattern_learning.{kind}.jsonl"
    (state / "session-store").mkdir(parents=True, exist_ok=True)
    for other in os.listdir(state / "session-store"):
        os.unlink(state / "session-store" / other)
    for src in (LEGACY / ".harn" / "session-store").iterdir():
        if src.name != name:
            (state / "session-store" / src.name).write_bytes(src.read_bytes())
    sc.put(f".harn/session-store/{name}", data)
    return pl_fmt.read_legacy_streams(str(state)).problems


def read_session(sc: Scratch, data: bytes) -> list:
    path = sc.put(".harn/session-store.sqlite", data)
    for extra in ("-wal", "-shm", "-journal"):
        if os.path.exists(path + extra):
            os.unlink(path + extra)
    snap = ss_fmt.read_session_store(path)
    problems = list(snap.problems)
    for s in snap.sessions[:3]:
        ss_fmt.read_session_events(path, s.id, limit=50, problems=problems)
    return problems


def read_probe_envelope(_sc: Scratch, data: bytes) -> list:
    env = probes_fmt.parse_check_envelope(data.decode("utf-8", "replace"))
    if env is not None:
        assert all(isinstance(i, str) for i in env.issues)
    return []


# name -> (adapter, sample files as repo paths); every adapter takes (scratch, bytes)
BYTE_READERS = {
    "memory": (read_memory, sorted(str(p) for p in SAMPLE.glob(".harn/memory/**/events.jsonl"))),
    "checkpoints": (read_checkpoint, sorted(str(p) for p in SAMPLE.glob(".harn/checkpoints/*.json"))),
    "skills": (read_skill, sorted(str(p) for p in SAMPLE.glob("**/SKILL.md"))),
    "runs": (read_run, sorted(str(p) for p in SAMPLE.glob(".harn-runs/*.json"))),
    "workers": (read_worker, sorted(str(p) for p in SAMPLE.glob(".harn/workers/*.json"))),
    "llm_transcripts": (read_llm, sorted(str(p) for p in SAMPLE.glob(".harn-runs/*-llm/llm_transcript.jsonl"))),
    "legacy_observations": (lambda sc, b: read_legacy(sc, "observations", b),
                            [str(LEGACY / ".harn/session-store/burin.agent_context.pattern_learning.observations.jsonl")]),
    "legacy_pending": (lambda sc, b: read_legacy(sc, "pending", b),
                       [str(LEGACY / ".harn/session-store/burin.agent_context.pattern_learning.pending.jsonl")]),
    "legacy_state": (lambda sc, b: read_legacy(sc, "state", b),
                     [str(LEGACY / ".harn/session-store/burin.agent_context.pattern_learning.state.jsonl")]),
    "session_store": (read_session, [str(SAMPLE / ".harn/session-store.sqlite")]),
    "probe_envelope": (read_probe_envelope, []),
}
