"""Issue 28 item 1: executable candidates are read from both places and staged where the newest Harn reads them.

Harn sources (burin-labs/harn):
* crates/harn-stdlib/src/stdlib/agent/pattern_knowledge.harn @0526ba57 `pl_write_candidate`:
  `path_join(path_join(project, ".burin", "crystallization"), proposal.id)` — the older place;
  entrypoint + test.harn + `.claude/skills/<name>/SKILL.md` + proposal.json (schema
  `harn.crystallization.authored-candidate.v1`, status `staged`, candidate_dir, staged_at).
* Issue 28 (the lead's reading of Harn's newest pattern_knowledge.harn, which the stored index
  does not hold yet): the newest Harn stages under `.harn/crystallization/<id>/` and reads
  `.burin/crystallization/` only as a compatibility root. The issue wins over harn-formats §O.5.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harn_ls.actions import proposals as P
from harn_ls.model.workspace import Workspace
from harn_ls.render.documents import render_uri
from harn_ls.render.inspect import inspect_json

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"
CURATED = "curated-31a76cb2e5b1"
NOW_NS = 1778577243512848123


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return dest


def _stage(root: Path, layout: str, cid: str, staged_at: str, title: str) -> Path:
    d = root / layout / "crystallization" / cid
    d.mkdir(parents=True)
    (d / "workflow.harn").write_text("pipeline main(task) {}\n")
    (d / "test.harn").write_text("test t {}\n")
    (d / "proposal.json").write_text(json.dumps({"id": cid, "kind": "harn_workflow", "title": title,
                                                 "schema": "harn.crystallization.authored-candidate.v1",
                                                 "status": "staged", "staged_at": staged_at}))
    return d


def test_candidates_are_read_from_both_roots_layout_then_newest(project):
    _stage(project, ".harn", "cand-new", "2026-05-10T00:00:00.000Z", "Only in .harn")
    _stage(project, ".burin", "cand-old", "2026-01-01T00:00:00.000Z", "Only in .burin")
    _stage(project, ".burin", "cand-both", "2026-02-01T00:00:00.000Z", "Older staging")
    newer = _stage(project, ".harn", "cand-both", "2026-05-01T00:00:00.000Z", "Newer staging")
    ws = Workspace.load(str(project))
    got = {c.id: (c.layout, c.proposal["title"]) for c in ws.event_logs.candidates}
    assert got == {"cand-new": ("harn", "Only in .harn"), "cand-old": ("burin", "Only in .burin"),
                   "cand-both": ("harn", "Newer staging")}
    both = next(c for c in ws.event_logs.candidates if c.id == "cand-both")
    assert both.path == str(newer) and both.shadowed == [str(project / ".burin/crystallization/cand-both")]
    data = {c["id"]: c for c in inspect_json(ws)["crystallization"]}
    assert data["cand-old"]["layout"] == "burin" and data["cand-old"]["path"] == ".burin/crystallization/cand-old"
    doc = render_uri(ws, "harn-state:/crystallization/cand-old.md")
    assert "older Harn, read-only here" in doc
    doc = render_uri(ws, "harn-state:/crystallization/cand-both.md")
    assert "newest Harn" in doc and ".burin/crystallization/cand-both" in doc


def test_a_newer_burin_staging_wins_over_an_older_harn_one(project):
    _stage(project, ".harn", "cand-x", "2026-01-01T00:00:00.000Z", "old under .harn")
    _stage(project, ".burin", "cand-x", "2026-03-01T00:00:00.000Z", "new under .burin")
    ws = Workspace.load(str(project))
    (c,) = [c for c in ws.event_logs.candidates if c.id == "cand-x"]
    assert (c.layout, c.proposal["title"]) == ("burin", "new under .burin")


def test_a_candidate_appearing_under_either_root_is_picked_up_live(project):
    ws = Workspace.load(str(project))
    assert ws.event_logs.candidates == []
    d = _stage(project, ".burin", "cand-live", "2026-01-01T00:00:00.000Z", "live")
    changes = ws.apply_changes([str(d / "proposal.json")])
    assert "crystallization" in changes.kinds and [c.id for c in ws.event_logs.candidates] == ["cand-live"]
    d2 = _stage(project, ".harn", "cand-live2", "2026-01-01T00:00:00.000Z", "live2")
    ws.apply_changes([str(d2 / "proposal.json")])
    assert sorted(c.id for c in ws.event_logs.candidates) == ["cand-live", "cand-live2"]


def test_accept_stages_under_harn_crystallization_never_burin(project):
    ws = Workspace.load(str(project))
    P.accept_proposal(ws, CURATED, now=NOW_NS)
    cand = project / ".harn" / "crystallization" / CURATED
    assert sorted(os.listdir(cand)) == [".claude", "proposal.json", "test.harn", "workflow.harn"]
    assert json.loads((cand / "proposal.json").read_text())["candidate_dir"] == str(cand)
    assert not (project / ".burin" / "crystallization").exists()
    ws2 = Workspace.load(str(project))
    assert [(c.id, c.layout, c.complete) for c in ws2.event_logs.candidates] == [(CURATED, "harn", True)]
