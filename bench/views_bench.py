"""Hover and code lens right after an append batch (issue 14, "views" row), in process.

    python bench/views_bench.py [PROJECT] [--batches N] [--batch-events K]

Loads PROJECT (default bench/out/large, made by bench/generate.py), picks the source file with
the most facts, warms a FactSpanCache, then N times: appends K memory events (every 5th batch
also a fact on that file), applies them to the model (`Workspace.apply_changes`, as the server's worker
does), and times the first hover and the first code lens (ranges + one resolve) after the batch,
on the worker-thread path the server runs (render/hover.py, render/lenses.py). "before" is the
previous behaviour, measured the same way: the whole file re-anchored after every model change.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from harn_ls.model.fact_spans import FactSpanCache  # noqa: E402
from harn_ls.model.workspace import Workspace  # noqa: E402
from harn_ls.render.hover import hover_at  # noqa: E402
from harn_ls.render.lenses import fact_lens, fact_lens_ranges  # noqa: E402


def pcts(values: list[float]) -> dict:
    s = sorted(values)
    return {"p50": round(statistics.median(s), 3), "p95": round(s[min(len(s) - 1, int(0.95 * len(s)))], 3),
            "max": round(s[-1], 3), "n": len(s)}


def busiest(ws) -> tuple[str, list[tuple[int, int]]]:
    rel = max(ws.facts_by_file, key=lambda p: len(ws.facts_by_file[p]))
    ranges = sorted({(ev.range.start, ev.range.end) for f in ws.facts_for_file(rel) for ev in f.evidence
                     if ev.range is not None and ev.range.path == rel})
    return rel, ranges


def store_line(ns: str, i: int, tag: str, value=None, key: str | None = None) -> str:
    rid = f"bench-{tag}-{i}"
    return json.dumps({"type": "store", "id": rid, "namespace": ns, "key": key or f"bench/{tag}/{i}",
                       "value": value if value is not None else f"note {tag} {i} about invoices and rounding",
                       "text": f"note {tag} {i}", "tags": ["bench"], "stored_at": "2026-05-06T14:11:02.400000000+00:00"},
                      separators=(",", ":"))


def fact_line(rel: str, start: int, i: int, tag: str) -> str:
    fid = f"fact_bench{tag}{i:04d}"
    value = {"asserted_at": "2026-05-06T14:11:02.318Z", "claim": f"bench fact {tag} {i}", "confidence": 0.7,
             "evidence": [{"kind": "file_range", "ref": f"{rel}:{start}"}], "id": fid, "kind": "observation",
             "provenance": {"agent": "bench"}, "schema": "harn.fact.v1"}
    return json.dumps({"type": "store", "id": fid, "namespace": "project/facts", "key": f"fact:observation:{fid}",
                       "value": value, "text": json.dumps(value, sort_keys=True, separators=(",", ":")),
                       "tags": ["fact", "fact:observation"], "stored_at": "2026-05-06T14:11:02.400000000+00:00"},
                      separators=(",", ":"))


def run(ws, batches: int, k: int, reuse: bool, tag: str) -> dict:
    rel, ranges = busiest(ws)
    path = os.path.join(ws.root, rel)
    plain_ns = next(ns for ns in sorted(ws.memory) if ns not in ("project/facts", "project/pattern-learning"))
    plain_log, facts_log = ws.namespace_path(plain_ns), ws.namespace_path("project/facts")
    rng = random.Random(7)
    cache = FactSpanCache()
    hover_at(ws, path, ranges[0][0] - 1, 0.0, cache)  # warm: the file read and every anchor
    hov, lens, apply_ms = [], [], []
    for b in range(batches):
        with open(plain_log, "a", encoding="utf-8") as fh:
            fh.write("".join(store_line(plain_ns, i, f"{tag}{b}") + "\n" for i in range(k)))
        changed = [plain_log]
        if b % 5 == 4:
            with open(facts_log, "a", encoding="utf-8") as fh:
                fh.write(fact_line(rel, rng.choice(ranges)[0], b, tag) + "\n")
            changed.append(facts_log)
        t0 = time.perf_counter()
        ws.apply_changes(changed)
        apply_ms.append((time.perf_counter() - t0) * 1000)
        if not reuse:
            cache = FactSpanCache()  # before: any model change re-anchored the whole file
        s, e = rng.choice(ranges)
        t0 = time.perf_counter()
        view = hover_at(ws, path, rng.randint(s, e) - 1, 0.0, cache)
        hov.append((time.perf_counter() - t0) * 1000)
        assert view is not None
        if not reuse:
            cache = FactSpanCache()
        t0 = time.perf_counter()
        found = fact_lens_ranges(ws, path, 0.0, cache)
        start, end = rng.choice(found)
        cmd = fact_lens(ws, path, start, end, 0.0, cache)
        lens.append((time.perf_counter() - t0) * 1000)
        assert cmd.arguments
    return {"file": rel, "facts_on_file": len(ws.facts_by_file[rel]), "lenses": len(found),
            "apply_ms": pcts(apply_ms), "hover_after_append_ms": pcts(hov), "code_lens_after_append_ms": pcts(lens),
            "cache": vars(cache.stats)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(HERE / "out" / "large"))
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--batch-events", type=int, default=100)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    ws = Workspace.load(args.project)
    out = {"project": args.project, "events": sum(len(s.records()) for s in ws.memory.values()),
           "load_s": round(time.perf_counter() - t0, 2)}
    out["before"] = run(ws, args.batches, args.batch_events, reuse=False, tag="b")
    out["after"] = run(ws, args.batches, args.batch_events, reuse=True, tag="a")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
