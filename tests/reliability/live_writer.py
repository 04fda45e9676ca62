"""A stand-in for a running Harn agent: `python live_writer.py PROJECT N MANIFEST`.

Appends N memory events at full speed (stores, forgets, some facts), splitting some lines across two
write() calls (a reader can always catch a line half-written), and rewrites a checkpoint file in place
(truncate, then write in pieces) every 150 events. Writes the expected end state to MANIFEST as JSON.
"""

from __future__ import annotations

import json
import os
import random
import sys

TS = "2026-11-29T10:00:00.000Z"


def fact_line(i: int) -> str:
    # A harn.fact.v1 store event as Harn writes it (§D); built with harn_ls's writer helpers.
    from harn_ls.formats.facts import fact_store_event, normalize_fact
    from harn_ls.formats.harn_json import serde_compact

    env = normalize_fact({"kind": "observation", "claim": f"live fact number {i}", "confidence": 0.6,
                          "evidence": [{"kind": "file_range", "ref": f"src/billing/tax.py:{1 + i % 5}"}],
                          "provenance": {"agent": "live-writer"}}, now=TS)
    return serde_compact(fact_store_event(env, "project/facts", TS))


def main() -> None:
    project, n, manifest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(1234)
    live_dir = os.path.join(project, ".harn", "memory", "agent", "live")
    os.makedirs(live_dir, exist_ok=True)
    live = os.open(os.path.join(live_dir, "events.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    facts = os.open(os.path.join(project, ".harn", "memory", "project", "facts", "events.jsonl"), os.O_WRONLY | os.O_APPEND)
    ckpt_path = os.path.join(project, ".harn", "checkpoints", "live.json")
    active: list[str] = []
    forgotten: set[str] = set()
    fact_count = 0
    ckpt: dict = {}
    for i in range(n):
        if i % 20 == 7:
            fd, line = facts, fact_line(i)
            fact_count += 1
        elif i % 6 == 5 and active:
            victims = [active.pop(rng.randrange(len(active))) for _ in range(min(len(active), rng.randint(1, 2)))]
            forgotten.update(victims)
            fd, line = live, json.dumps({"type": "forget", "predicate": {"ids": victims}, "forgotten_ids": victims,
                                         "forgotten_at": TS}, separators=(",", ":"))
        else:
            rid = f"live-{i:05d}"
            active.append(rid)
            fd, line = live, json.dumps({"type": "store", "id": rid, "key": f"note:{i % 97}", "value": f"note {i}",
                                         "text": f"live note {i} about invoices", "tags": ["live"], "stored_at": TS},
                                        separators=(",", ":"))
        data = (line + "\n").encode()
        if i % 5 == 0:  # torn on purpose: the reader may look between these two writes
            cut = rng.randrange(1, len(data))
            os.write(fd, data[:cut])
            os.write(fd, data[cut:])
        else:
            os.write(fd, data)
        if i % 150 == 149:
            ckpt[f"stage_{i // 150:03d}"] = {"events": i + 1}
            text = json.dumps(ckpt, indent=2, sort_keys=True).encode()
            with open(ckpt_path, "r+b" if os.path.exists(ckpt_path) else "wb") as fh:  # Harn: in place, not atomic
                fh.truncate(0)
                fh.flush()
                half = len(text) // 2
                fh.write(text[:half])
                fh.flush()
                fh.write(text[half:])
    os.close(live)
    os.close(facts)
    with open(manifest, "w") as fh:
        json.dump({"active": active, "forgotten": sorted(forgotten), "facts": fact_count, "checkpoint": sorted(ckpt)}, fh)


if __name__ == "__main__":
    main()
