"""Small projects for the view-model tests: a copy of fixtures/sample-project plus facts appended
the way Harn writes them (a store event in project/facts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"
FACTS_LOG = ".harn/memory/project/facts/events.jsonl"
INVOICE = "src/billing/invoice.py"
INVOICE_FACT = "fact_a26c5c67468c8d3fe33f8c8c0f5489e6"  # observation 0.9 on invoice.py:28-29
LATE_FEE_FACT = "fact_cd5cbe83cf038f756167ec14bc59b59c"  # observation 0.6 on invoice.py:16


def copy_sample(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return dest


def fact_event(fact_id: str, claim: str, ref: str, *, snippet: str | None = None, kind: str = "observation",
               confidence: float = 0.8, provenance=None) -> dict:
    evidence = {"kind": "file_range", "ref": ref}
    if snippet is not None:
        evidence["snippet"] = snippet
    value = {"asserted_at": "2026-05-06T14:11:02.318Z", "claim": claim, "confidence": confidence, "evidence": [evidence],
             "id": fact_id, "kind": kind, "provenance": provenance if provenance is not None else {"agent": "test"},
             "schema": "harn.fact.v1"}
    return {"type": "store", "id": fact_id, "namespace": "project/facts", "key": f"fact:{kind}:{fact_id}",
            "value": value, "text": json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True),
            "tags": ["fact", f"fact:{kind}"], "stored_at": "2026-05-06T14:11:02.400000000+00:00"}


def append_events(project: Path, events: list[dict], log: str = FACTS_LOG) -> Path:
    path = project / log
    with path.open("a", encoding="utf-8") as fh:
        for ev in events:
            fh.write(json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path
