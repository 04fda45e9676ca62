"""A fact as Harn's `store_fact` appends it to `project/facts/events.jsonl` (one line, no newline)."""

from __future__ import annotations

from harn_ls.formats.facts import fact_store_event, normalize_fact
from harn_ls.formats.harn_json import serde_compact


def fact_line(claim: str, ref: str, snippet: str | None = None, confidence: float = 0.7) -> tuple[str, str]:
    """(the fact's id, its store event) for an observation with one `file_range` evidence."""
    evidence = {"kind": "file_range", "ref": ref, **({"snippet": snippet} if snippet is not None else {})}
    env = normalize_fact({"kind": "observation", "claim": claim, "confidence": confidence, "evidence": [evidence],
                          "provenance": {"agent": "test"}}, now="2026-11-29T10:00:00.000Z")
    return env["id"], serde_compact(fact_store_event(env, "project/facts", "2026-11-29T10:00:00.100000+00:00"))
