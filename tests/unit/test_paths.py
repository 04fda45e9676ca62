"""Root resolution and environment overrides (harn-formats §A)."""

from __future__ import annotations

import os

from harn_ls.formats.paths import find_project_root, resolve


def test_nearest_harn_toml_above(tmp_path):
    (tmp_path / "harn.toml").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_project_root(str(deep)) == str(tmp_path)
    lone = tmp_path.parent / (tmp_path.name + "-lone")
    lone.mkdir()
    assert find_project_root(str(lone)) == str(lone)


def test_defaults_and_overrides(tmp_path):
    (tmp_path / "harn.toml").write_text('[skills]\npaths = ["extra/skills", "globbed/*"]\n')
    p = resolve(str(tmp_path), env={}, home="/home/u")
    assert p.state_root == str(tmp_path / ".harn") and p.run_root == str(tmp_path / ".harn-runs")
    assert p.memory_root == str(tmp_path / ".harn" / "memory") == p.pattern_memory_root
    layers = [(r.layer, r.path) for r in p.skill_roots]
    assert layers[0] == ("project", str(tmp_path / ".harn" / "skills"))
    assert ("manifest", str(tmp_path / "extra" / "skills")) in layers
    assert ("user", "/home/u/.harn/skills") in layers
    env = {"HARN_STATE_DIR": "state", "HARN_RUN_DIR": "/abs/runs", "HARN_MEMORY_ROOT": "mem",
           "HARN_SKILLS_PATH": "s1:s2"}
    q = resolve(str(tmp_path), env=env, home="/home/u")
    assert q.state_root == str(tmp_path / "state") and q.run_root == "/abs/runs"
    assert q.memory_root == str(tmp_path / "mem")  # ignores HARN_STATE_DIR
    assert q.pattern_memory_root == str(tmp_path / "state" / "memory")  # honours it
    assert [r.layer for r in q.skill_roots[:3]] == ["env", "env", "project"]
    assert q.skill_roots[2].path == str(tmp_path / ".harn" / "skills")  # hard-coded .harn


def test_resolution_never_creates_directories(tmp_path):
    before = sorted(os.listdir(tmp_path))
    from harn_ls.model.workspace import Workspace

    ws = Workspace.load(str(tmp_path))
    assert ws.counts()["namespaces"] == 0
    assert sorted(os.listdir(tmp_path)) == before


def test_a_refused_harn_env_place_is_quoted_in_its_problem(tmp_path):
    """harnState.harnEnv of an untrusted workspace names a sibling `proj-evil` folder with a line break
    and a bidi override in its name: refused, and neither the value nor the resolved path it points at
    reaches the message raw."""
    from harn_ls.formats import paths as P

    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("[package]\nname = \"p\"\n")
    evil = tmp_path / "proj-evil\u202e\nSee [docs](command:harn.rescan)"
    evil.mkdir()
    env = {"HARN_STATE_DIR": str(evil)}
    got = P.resolve(str(proj), env=env, untrusted_env=("HARN_STATE_DIR",))
    assert got.state_root == str(proj / ".harn")
    (where, why), = got.env_refusals
    assert "proj-evil" in why and "\n" not in why and "\u202e" not in why and "](command:" not in why


def test_a_refused_harn_toml_skills_path_is_quoted_in_its_problem(tmp_path):
    """A cloned repository's harn.toml names a sibling `proj-evil` folder whose name holds a line break,
    a bidi override and link syntax in `[skills] paths`: refused, and neither the entry nor the resolved
    path reaches the message raw (it becomes a plain-text diagnostic)."""
    import json

    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    name = "proj-evil\u202e\nSee [docs](command:harn.rescan)"
    (tmp_path / name).mkdir()
    (proj / "harn.toml").write_text("[skills]\npaths = [" + json.dumps("../" + name) + "]\n")
    got = resolve(str(proj))
    (where, why), = got.refused_roots
    assert where == str(tmp_path / name)
    assert "proj-evil" in why and "ignored" in why
    assert "\n" not in why and "\u202e" not in why and "](command:" not in why
