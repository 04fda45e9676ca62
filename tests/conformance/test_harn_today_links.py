"""Issue 28 item 7: every symlink that leaves the project or loops is a problem naming the link, wherever
harn-ls meets it (a linked folder in `.harn/skills/`, a loop in `.harn/memory/`, candidates, worktrees).

Harn source (burin-labs/harn, mirror snapshot e45362cf): Harn's own loaders follow links
(crates/harn-vm/src/skills/ walks skill roots with std::fs, which resolves symlinks;
stdlib/memory.rs reads `<root>/<namespace>/events.jsonl` through them), so a link out of a cloned
project would make Harn read the sibling folder; harn-ls reports it and reads nothing there.
"""

from __future__ import annotations

import os

from harn_ls.model.workspace import Workspace
from harn_ls.util.safe_read import CODE_LINK_LOOP, CODE_LINK_OUT


def _project(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    evil = tmp_path / "proj-evil"
    (evil / "skilldir").mkdir(parents=True)
    (evil / "skilldir" / "notes.txt").write_text("secret")
    return proj, evil


def _problems(ws, code=None):
    return [p for p in ws.problems() if code is None or p.code == code]


def test_linked_folder_leaving_the_project_in_skills_is_named(tmp_path):
    proj, evil = _project(tmp_path)
    skills = proj / ".harn" / "skills"
    skills.mkdir()
    os.symlink(evil / "skilldir", skills / "borrowed")  # no SKILL.md there: was dropped silently
    ws = Workspace.load(str(proj), env={})
    probs = [p for p in ws.problems() if p.path == str(skills / "borrowed")]
    assert len(probs) == 1 and f"symlink {skills / 'borrowed'} -> {evil / 'skilldir'} leaves the project" in probs[0].message


def test_memory_loop_is_named(tmp_path):
    proj, _ = _project(tmp_path)
    ns = proj / ".harn" / "memory" / "agent"
    ns.mkdir(parents=True)
    (ns / "events.jsonl").write_text("")
    os.symlink("..", ns / "again")  # .harn/memory/agent/again -> .harn/memory
    os.symlink("self", proj / ".harn" / "memory" / "self")  # ELOOP
    ws = Workspace.load(str(proj), env={})
    loops = {p.path: p.message for p in _problems(ws, CODE_LINK_LOOP)}
    assert loops[str(ns / "again")] == \
        f"symlink {ns / 'again'} -> .. points back to a folder that holds it (a loop); not followed"
    assert loops[str(proj / ".harn" / "memory" / "self")].endswith("-> self loops; not followed")
    assert list(ws.memory) == ["agent"]  # the rest is still served


def test_links_in_candidates_and_worktrees_are_named(tmp_path):
    proj, evil = _project(tmp_path)
    crys = proj / ".harn" / "crystallization"
    (crys / "cand-1").mkdir(parents=True)
    (crys / "cand-1" / "proposal.json").write_text('{"id": "cand-1"}')
    os.symlink(evil / "skilldir" / "notes.txt", crys / "cand-1" / "workflow.harn")
    os.symlink(evil, crys / "cand-evil")
    wt = proj / ".harn" / "worktrees"
    wt.mkdir()
    os.symlink(evil, wt / "repo")
    ws = Workspace.load(str(proj), env={})
    named = {p.path for p in _problems(ws, CODE_LINK_OUT)}
    assert {str(crys / "cand-1" / "workflow.harn"), str(crys / "cand-evil"), str(wt / "repo")} <= named
    assert [c.id for c in ws.event_logs.candidates] == ["cand-1"] and ws.event_logs.worktrees == []
