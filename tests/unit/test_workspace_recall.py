"""The workspace's recall index: built on first use, then kept current by apply() — equal to a cold build."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from harn_ls.model.workspace import Workspace

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"


def _hits(ws, query):
    res = ws.recall.recall(query, k=50)
    return [(h.namespace, h.id, round(h.score, 12)) for h in res.hits]


def test_lazy_then_incremental_equals_cold(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(SAMPLE, project)
    ws = Workspace.load(str(project))
    assert not ws.recall_ready
    ws.counts()
    ws.problems()
    assert not ws.recall_ready  # nothing but a search builds it
    before = _hits(ws, "invoice stripe")
    assert ws.recall_ready and before
    rnd = random.Random(7)
    log = project / ".harn/memory/agent/notes/events.jsonl"
    words = ["invoice", "stripe", "ledger", "payout", "tax", "webhook", "retry"]
    with open(log, "a") as fh:
        for i in range(60):
            text = " ".join(rnd.choice(words) for _ in range(5))
            fh.write(json.dumps({"type": "store", "id": f"n{i}", "namespace": "agent/notes", "key": f"note-{i}",
                                 "value": text, "text": text, "tags": [rnd.choice(words)],
                                 "stored_at": f"2026-11-29T00:00:{i:02d}Z"}) + "\n")
        fh.write(json.dumps({"type": "forget", "id": "f", "namespace": "agent/notes", "predicate": {"key": "note-3"},
                             "forgotten_ids": ["n3", "n10"], "forgotten_at": "2026-11-29T01:00:00Z"}) + "\n")
    ws.apply_changes([str(log)])
    cold = Workspace.load(str(project))
    for q in ("invoice stripe", "ledger", "retry webhook tax", ""):
        assert _hits(ws, q) == _hits(cold, q)
    assert _hits(ws, "invoice stripe") != before
