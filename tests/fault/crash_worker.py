"""Runs a fixed sequence of harn-ls write actions on one project; killed at random by
test_crash_safety.py. Every step tolerates having been done already, so running the
sequence again after a kill is the recovery path (and must end in the same state)."""

from __future__ import annotations

import sys

from harn_ls.actions import checkpoints as C
from harn_ls.actions import facts as F
from harn_ls.actions import proposals as P
from harn_ls.workspace import Workspace

NOW = "2026-05-12T09:14:03.512Z"  # fixed: every file written is deterministic

RECONCILE = "prompt-2629ccc60808"
CURATED = "curated-31a76cb2e5b1"
TOOLS = "tools-7742da9fd499"
OPENAPI = "prompt-0e59f51d1e7d"
FACT_1 = "fact_a26c5c67468c8d3fe33f8c8c0f5489e6"
FACT_2 = "fact_cd5cbe83cf038f756167ec14bc59b59c"

STEPS = [
    ("accept", RECONCILE, None),
    ("invalidate", FACT_1),
    ("accept", CURATED, None),
    ("forget_stage", "review", "lint"),
    ("reject", TOOLS, 14),
    ("forget_stage", "ingest", "prepare"),
    ("accept", OPENAPI, ".harn/skills"),
    ("invalidate", FACT_2),
]

# files each accept writes before its forget event (project-relative)
ACCEPT_FILES = {
    RECONCILE: [".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"],
    CURATED: [f".burin/crystallization/{CURATED}/{name}" for name in
              ("workflow.harn", "test.harn", ".claude/skills/learned-month-end-close/SKILL.md", "proposal.json")],
    OPENAPI: [".harn/skills/learned-regenerate-openapi-client-types/SKILL.md"],
}


def run(project: str, ready=None) -> None:
    ws = Workspace.load(project)
    if ready is not None:
        ready()
    for step in STEPS:
        kind = step[0]
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


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


if __name__ == "__main__":
    run(sys.argv[1], ready=_ready)
    sys.stdout.write("done\n")
    sys.stdout.flush()
