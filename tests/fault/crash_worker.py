"""Runs a fixed sequence of harn-ls write actions on two projects; killed at random by
test_crash_safety.py. Every step tolerates having been done already, so running the
sequence again after a kill is the recovery path (and must end in the same state).

The sequence touches a copy of fixtures/sample-project (accept of skill and executable
kinds, reject, invalidate, forget-stage, a typecheck probe storing its observation fact)
and a copy of fixtures/legacy-project (the pattern-learning migration).

Modes:
  crash_worker.py SAMPLE LEGACY   run the sequence once ("ready" after loading, "done" at the end)
  crash_worker.py --serve         fork server: imports everything once, then for each stdin line
                                  `run SAMPLE LEGACY` forks a child that prints `loaded <pid>`,
                                  `step <i>` as each step starts, and `done` at the end; the server prints
                                  `exit <status>` once the child is gone (killed or not). Forking
                                  an already-imported interpreter keeps a kill round at a few ms
                                  instead of a fresh interpreter's ~250 ms.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

if __name__ == "__main__":  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harn_ls.actions import checkpoints as C
from harn_ls.actions import facts as F
from harn_ls.actions import migrate as M
from harn_ls.actions import probes as PR
from harn_ls.actions import proposals as P
from harn_ls.model.workspace import Workspace

NOW = "2026-05-12T09:14:03.512Z"  # fixed: every file written is deterministic

RECONCILE = "prompt-2629ccc60808"
CURATED = "curated-31a76cb2e5b1"
TOOLS = "tools-7742da9fd499"
OPENAPI = "prompt-0e59f51d1e7d"
FACT_1 = "fact_a26c5c67468c8d3fe33f8c8c0f5489e6"
FACT_2 = "fact_cd5cbe83cf038f756167ec14bc59b59c"

HARN_DOUBLE = str(Path(__file__).resolve().parents[1] / "harn_test_double.py")
PROBE_FILE = "pipelines/review.harn"
PROBE_RANGE = PR.CliRange(10, None, 12, None)  # whole lines 10-12: the `pipeline review` header
PROBE_REF = f"{PROBE_FILE}:10-12"

STEPS = [
    ("accept", RECONCILE, None),
    ("invalidate", FACT_1),
    ("probe",),
    ("accept", CURATED, None),
    ("forget_stage", "review", "lint"),
    ("migrate",),
    ("reject", TOOLS, 14),
    ("forget_stage", "ingest", "prepare"),
    ("accept", OPENAPI, ".harn/skills"),
    ("invalidate", FACT_2),
]

# files each accept writes before its forget event (relative to the sample project)
ACCEPT_FILES = {
    RECONCILE: [".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"],
    CURATED: [f".harn/crystallization/{CURATED}/{name}" for name in
              ("workflow.harn", "test.harn", ".claude/skills/learned-month-end-close/SKILL.md", "proposal.json")],
    OPENAPI: [".harn/skills/learned-regenerate-openapi-client-types/SKILL.md"],
}


def _probe_done(ws) -> bool:
    return any(ev.kind == "file_range" and ev.ref == PROBE_REF for fact in ws.facts_by_id.values()
               for ev in fact.evidence)


def run(sample: str, legacy: str, ready=None, after_step=None, before_step=None) -> None:
    ws = Workspace.load(sample)
    legacy_ws = Workspace.load(legacy)
    if ready is not None:
        ready()
    for i, step in enumerate(STEPS):
        kind = step[0]
        if before_step is not None:
            before_step(i)
        if kind == "accept":
            if ws.proposal(step[1]) is not None:
                P.accept_proposal(ws, step[1], skill_root=step[2], now=NOW)
        elif kind == "reject":
            if ws.proposal(step[1]) is not None:
                P.reject_proposal(ws, step[1], days=step[2], now=NOW)
        elif kind == "invalidate":
            if step[1] in ws.facts_by_id:
                F.invalidate_fact(ws, step[1], now=NOW)
        elif kind == "forget_stage":
            cf = ws.checkpoints.get(step[1])
            if cf is not None and step[2] in cf.entries:
                C.forget_stage(ws, step[1], step[2])
        elif kind == "probe":
            # `harn-ls probe typecheck FILE --range 10-12` with the harn test double; it stores the
            # observation fact with one append (the real write path of the probe command)
            if not _probe_done(ws):
                out = PR.run_typecheck_probe_cli(os.path.join(sample, PROBE_FILE), PROBE_RANGE, harn=HARN_DOUBLE,
                                                 store=True, timeout=30.0, now=NOW)
                assert out.fact_id is not None, out.store_error
                ws.apply_changes([out.events_path])
        elif kind == "migrate":
            M.migrate_pattern_learning(legacy_ws, now=NOW)  # a no-op once the marker exists
        if after_step is not None:
            after_step(step)


def _say(text: str) -> None:
    os.write(1, text.encode())  # one write(2) of a short line: atomic on the shared pipe


def serve() -> None:
    _say("ready\n")
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] != "run" or len(cmd) != 3:
            _say(f"error bad command {line.strip()!r}\n")
            continue
        pid = os.fork()
        if pid == 0:  # child: the process that gets killed
            code = 0
            try:
                run(cmd[1], cmd[2], ready=lambda: _say(f"loaded {os.getpid()}\n"),
                    before_step=lambda i: _say(f"step {i}\n"))
                _say("done\n")
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        _say(f"exit {os.waitstatus_to_exitcode(status)}\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        run(sys.argv[1], sys.argv[2], ready=lambda: _say("ready\n"))
        _say("done\n")
