"""Legacy Burin pattern-learning import (harn-formats §E.4, seed "Migration")."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from harn_ls.actions.migrate import migrate_pattern_learning, normalize_tools
from harn_ls.formats.pattern_learning import redact_prompt
from harn_ls.model.workspace import Workspace
from tests.helpers.tree import snapshot

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOG = ".harn/memory/project/pattern-learning/events.jsonl"
MARKER = ".harn/memory/project/pattern-learning/.burin-session-store-migrated-v1.json"
NOW_NS = 1778577243512848123
NOW_MS = "2026-05-12T09:14:03.512Z"
STORE_KEYS = ["type", "id", "namespace", "key", "value", "text", "tags", "stored_at", "provenance"]


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    dest = tmp_path / "legacy"
    shutil.copytree(FIXTURES / "legacy-project", dest, symlinks=True)
    return dest




def events(project: Path) -> list[dict]:
    return [json.loads(line) for line in (project / LOG).read_text().splitlines()]


def test_reading_never_migrates(legacy, tmp_path):
    before = snapshot(tmp_path)
    ws = Workspace.load(str(legacy))
    assert ws.migration_needed and ws.pattern.pending == []
    assert snapshot(tmp_path) == before


def test_migrate_imports_and_writes_marker(legacy):
    ws = Workspace.load(str(legacy))
    result = migrate_pattern_learning(ws, now=NOW_NS)
    assert result["migrated"] and result["counts"] == {"observations": 3, "proposals": 1, "state": 1, "skipped": 0}
    evs = events(legacy)
    assert [e["type"] for e in evs] == ["store"] * 4 + ["forget", "store"]
    for e in evs[:4] + evs[5:]:
        assert list(e) == STORE_KEYS
        assert e["namespace"] == "project/pattern-learning" and e["stored_at"] == NOW_MS
        assert e["provenance"] == {"source": "harn.pattern_learning"}
        assert list(e["value"]) == sorted(e["value"])
        assert e["text"] == json.dumps(e["value"], separators=(",", ":"), ensure_ascii=False)
    obs = evs[0]
    assert obs["id"] == "895fb0ee-c6e3-4639-b52d-adfb0bf2da41"  # original id kept
    assert obs["key"] == "observation:895fb0ee-c6e3-4639-b52d-adfb0bf2da41"
    assert obs["value"] == {"evidence_kind": "", "id": "895fb0ee-c6e3-4639-b52d-adfb0bf2da41",
                            "observed_at": "2026-03-02T08:00:12.000Z", "prompt": "Summarise yesterday's failed payments",
                            "record_kind": "observation", "run_id": "", "schema": "harn.pattern_learning.v1",
                            "session_id": "burin-000", "source_id": "", "tool_sequence": ["read-file", "write-file"]}
    assert obs["tags"] == ["pattern_learning", "pattern_learning:observation", "schema:harn.pattern_learning.v1"]
    assert "1e1bb79d-5169-458a-8a17-a1dbacb5b632" not in [e["id"] for e in evs]  # deleted in the legacy stream
    pending = evs[3]
    assert re.fullmatch(r"pending_prompt_064b350632c9_[0-9a-f]{12}", pending["id"])  # fresh pending id
    assert pending["key"] == "pending:prompt-064b350632c9"
    assert pending["value"]["when_to_use"].startswith("Use when") and pending["value"]["support"] == 3
    assert pending["value"]["record_kind"] == "pending"
    assert pending["value"]["sample_prompts"][0] == "Summarise yesterday's failed payments"
    assert evs[4]["predicate"] == {"key": "state"} and evs[4]["forgotten_ids"] == []
    state = evs[5]
    assert re.fullmatch(r"state_[0-9a-f]{12}", state["id"])
    assert state["value"] == {"enabled": True, "record_kind": "state", "schema": "harn.pattern_learning.v1",
                              "suppressed_until": {"tools-37d2b12d5d9a": "2026-03-31T11:30:00Z"}, "updated_at": NOW_MS}
    assert (legacy / MARKER).read_text() == \
        '{\n  "migrated_at": "2026-05-12T09:14:03.512Z",\n  "schema": "harn.pattern_learning.v1"\n}'

    cold = Workspace.load(str(legacy))
    assert not cold.migration_needed
    assert [p.id for p in cold.pattern.pending] == ["prompt-064b350632c9"]
    assert len(cold.pattern.observations) == 3
    assert cold.pattern.state.suppressed_until == {"tools-37d2b12d5d9a": "2026-03-31T11:30:00Z"}
    assert not [p for p in cold.problems() if "pattern-learning" in p.path]


def test_marker_present_is_a_noop(legacy, tmp_path):
    ws = Workspace.load(str(legacy))
    migrate_pattern_learning(ws, now=NOW_NS)
    before = snapshot(tmp_path)
    again = migrate_pattern_learning(ws, now=NOW_NS)
    assert again["migrated"] is False and "already migrated" in again["message"]
    assert migrate_pattern_learning(Workspace.load(str(legacy)))["migrated"] is False
    assert snapshot(tmp_path) == before


def test_no_legacy_streams_is_a_noop(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "sample-project", project, symlinks=True)
    before = snapshot(tmp_path)
    assert migrate_pattern_learning(Workspace.load(str(project)))["migrated"] is False
    assert snapshot(tmp_path) == before


def test_crash_before_marker_then_rerun_adds_nothing_twice(legacy):
    ws = Workspace.load(str(legacy))
    migrate_pattern_learning(ws, now=NOW_NS)
    os.unlink(legacy / MARKER)  # as if killed between the append and the marker
    lines = (legacy / LOG).read_text()
    result = migrate_pattern_learning(Workspace.load(str(legacy)), now=NOW_NS + 10**9)
    assert result["migrated"] and result["counts"]["skipped"] == 5
    assert (legacy / LOG).read_text() == lines
    assert (legacy / MARKER).exists()


def test_normalizers():
    assert redact_prompt("  deploy   with token=abc123 \n now ") == "deploy with token=<redacted> now"
    assert redact_prompt("key -----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- end") \
        == "key <redacted-private-key> end"
    assert normalize_tools(["Read File", "load_skill", "", "git.log"]) == ["read-file", "git-log"]
