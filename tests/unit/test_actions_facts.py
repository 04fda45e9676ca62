"""invalidate_fact: Harn's `invalidate_facts("fact_…")` forget event (harn-formats §D.5, §C.2, §C.4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed
from harn_ls.actions.facts import invalidate_fact
from harn_ls.model.workspace import Workspace
from tests.helpers.tree import snapshot

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"
LOG = ".harn/memory/project/facts/events.jsonl"
NOW_NS = 1778577243512848123
FACT = "fact_a26c5c67468c8d3fe33f8c8c0f5489e6"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return dest




def test_invalidate_appends_exact_forget(project):
    ws = Workspace.load(str(project))
    before = (project / LOG).read_text().splitlines()
    result = invalidate_fact(ws, FACT, now=NOW_NS)
    after = (project / LOG).read_text().splitlines()
    assert after[: len(before)] == before and len(after) == len(before) + 1
    event = json.loads(after[-1])
    assert list(event) == ["type", "id", "namespace", "predicate", "forgotten_ids", "forgotten_at"]
    assert event["type"] == "forget"
    assert event["namespace"] == "project/facts"
    assert event["predicate"] == {"id": FACT}  # Harn's translation of a `fact_…` string
    assert event["forgotten_ids"] == [FACT]
    assert event["forgotten_at"] == "2026-05-12T09:14:03.512848123+00:00"
    assert event["id"][14] == "7" and int(event["id"].replace("-", "")[:12], 16) == NOW_NS // 10**6
    assert after[-1] == ('{"type":"forget","id":"%s","namespace":"project/facts","predicate":{"id":"%s"},'  # noqa: UP031 (a JSON template: % keeps its braces as they are)
                         '"forgotten_ids":["%s"],"forgotten_at":"2026-05-12T09:14:03.512848123+00:00"}'
                         % (event["id"], FACT, FACT))
    assert result["forget"] == event
    assert FACT not in ws.facts_by_id  # live model updated
    cold = Workspace.load(str(project))
    assert FACT not in cold.facts_by_id
    assert len(cold.facts_by_id) == len(Workspace.load(str(FIXTURE)).facts_by_id) - 1


def test_unknown_and_repeated_refused(project, tmp_path):
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    for bad in ("fact_00000000000000000000000000000000", "", "../x"):
        with pytest.raises(ActionFailed, match="refused"):
            invalidate_fact(ws, bad, now=NOW_NS)
    assert snapshot(tmp_path) == before
    invalidate_fact(ws, FACT, now=NOW_NS)
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="refused"):
        invalidate_fact(ws, FACT, now=NOW_NS)
    with pytest.raises(ActionFailed, match="refused"):
        invalidate_fact(Workspace.load(str(project)), FACT, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_invalidated_elsewhere_meanwhile_refused(project, tmp_path):
    ws = Workspace.load(str(project))
    with open(project / LOG, "a") as fh:  # Harn invalidated it after we loaded
        fh.write(json.dumps({"type": "forget", "id": "019e2000-0000-7000-8000-000000000001", "namespace": "project/facts",
                             "predicate": {"id": FACT}, "forgotten_ids": [FACT],
                             "forgotten_at": "2026-05-12T09:00:00+00:00"}, separators=(",", ":")) + "\n")
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="already invalidated"):
        invalidate_fact(ws, FACT, now=NOW_NS)
    assert snapshot(tmp_path) == before
