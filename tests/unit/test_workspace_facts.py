"""Facts indexed from memory: duplicate ids show the last store; a replaced log re-indexes cleanly."""

from __future__ import annotations

import os
from pathlib import Path

from harn_ls.formats.facts import fact_store_event, normalize_fact
from harn_ls.formats.harn_json import serde_compact
from harn_ls.model.workspace import Workspace


def _line(confidence: float, stored_at: str) -> str:
    env = normalize_fact({"kind": "claim", "claim": "Tax is rounded last", "confidence": confidence,
                          "evidence": [{"kind": "file_range", "ref": "src/tax.py:1-2"}]}, now="2026-01-01T00:00:00.000Z")
    return serde_compact(fact_store_event(env, "project/facts", stored_at)) + "\n"


def test_duplicate_fact_ids_and_reset(tmp_path: Path):
    (tmp_path / "harn.toml").write_text("")
    (tmp_path / "src").mkdir()
    (tmp_path / "src/tax.py").write_text("a = 1\nb = 2\n")
    log = tmp_path / ".harn/memory/project/facts/events.jsonl"
    log.parent.mkdir(parents=True)
    first, second = _line(0.4, "2026-01-01T00:00:01+00:00"), _line(0.8, "2026-01-01T00:00:02+00:00")
    log.write_text(first + second)
    ws = Workspace.load(str(tmp_path))
    (fid,) = ws.facts_by_id
    assert len(ws.facts) == 2 and ws.facts_by_id[fid].confidence == 0.8
    assert [f.confidence for f in ws.facts_for_file("src/tax.py")] == [0.4, 0.8]
    # the log is replaced (new inode) by one holding only the first store
    tmp = log.with_name("events.jsonl.new")
    tmp.write_text(first)
    os.replace(tmp, log)
    ws.apply_changes([str(log)])
    assert len(ws.facts) == 1 and ws.facts_by_id[fid].confidence == 0.4
    assert [f.confidence for f in ws.facts_for_file("src/tax.py")] == [0.4]
    cold = Workspace.load(str(tmp_path))
    assert cold.facts_by_id[fid].confidence == 0.4
