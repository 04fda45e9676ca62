"""Which Harn projects a workspace folder holds: the bounded search and the explicit roots (issue 29, item 5)."""

from __future__ import annotations

import os
from pathlib import Path

from harn_ls.formats.paths import find_project_root
from harn_ls.model.project_discovery import discover, explicit, folder_projects


def _project(path: Path, marker: str = "harn.toml") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if marker == "harn.toml":
        (path / "harn.toml").write_text("[package]\nname = \"x\"\n")
    else:
        (path / ".harn").mkdir()
    return path


def _monorepo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    _project(repo / "services" / "agent")
    _project(repo / "tools" / "other")
    (repo / "services" / "agent" / "src").mkdir()
    # decoys: dependencies, build output, VCS, virtualenvs, caches
    for decoy in ("node_modules/left-pad/deep/er/pkg", "target/debug/x", ".git/modules/x", ".venv/lib/x",
                  "venv/lib/x", "env3/lib/x", "__pycache__/x", "dist/x", "build/x"):
        _project(repo / decoy)
    (repo / "env3" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv by its marker, any name
    # a symbolic link out of the repository, to a sibling that looks like a project
    evil = _project(tmp_path / "repo-evil")
    os.symlink(evil, repo / "linked-evil")
    return repo


def test_a_monorepo_serves_its_projects_and_no_decoy(tmp_path):
    repo = _monorepo(tmp_path)
    found = discover(str(repo))
    assert found.roots == [str(repo / "services" / "agent"), str(repo / "tools" / "other")]
    assert found.notes == []


def test_the_folder_itself_and_the_project_above_it(tmp_path):
    repo = _monorepo(tmp_path)
    (repo / "harn.toml").write_text("")
    assert discover(str(repo)).roots == [str(repo), str(repo / "services" / "agent"), str(repo / "tools" / "other")]
    # a workspace folder inside a project serves that project (Harn's nearest-harn.toml-above rule), and
    # the projects below it
    src = repo / "services" / "agent" / "src"
    _project(src / "nested")
    assert discover(str(src)).roots == [str(repo / "services" / "agent"), str(src / "nested")]


def test_a_state_folder_without_manifest_is_a_project_unless_a_manifest_encloses_it(tmp_path):
    repo = tmp_path / "repo"
    _project(repo / "a", marker=".harn")  # Harn run in a/ keeps its state in a/.harn
    _project(repo / "b")
    _project(repo / "b" / "sub", marker=".harn")  # Harn run in b/sub uses b/ (its harn.toml) as the root
    assert discover(str(repo)).roots == [str(repo / "a"), str(repo / "b")]
    assert find_project_root(str(repo / "b" / "sub")) == str(repo / "b")


def test_nothing_found_serves_the_folder_as_it_is(tmp_path):
    (tmp_path / "src").mkdir()
    assert discover(str(tmp_path)).roots == [str(tmp_path)]


def test_the_caps_hold(tmp_path):
    repo = tmp_path / "repo"
    for i in range(6):
        _project(repo / f"p{i}")
    capped = discover(str(repo), max_projects=4)
    assert capped.roots == [str(repo / f"p{i}") for i in range(4)]
    assert len(capped.notes) == 1 and "more than 4 Harn projects" in capped.notes[0]
    # depth: a project 4 levels down is found with max_depth 4, not with 3 (and that is not an error)
    _project(repo / "p0" / "x" / "y" / "deep")
    assert str(repo / "p0" / "x" / "y" / "deep") in discover(str(repo), max_depth=4).roots
    assert str(repo / "p0" / "x" / "y" / "deep") not in discover(str(repo), max_depth=3).roots
    # folders read: the search stops and says so
    wide = tmp_path / "wide"
    for i in range(50):
        (wide / f"d{i:02}").mkdir(parents=True)
    _project(wide / "zz-last")
    stopped = discover(str(wide), max_dirs=20)
    assert stopped.roots == [str(wide)]
    assert len(stopped.notes) == 1 and "after 20 folders" in stopped.notes[0] and "projectRoots" in stopped.notes[0]


def test_explicit_roots(tmp_path):
    repo = _monorepo(tmp_path)
    chosen = explicit(str(repo), ["tools/other", "services/agent/src", "missing", "../repo-evil", "linked-evil"],
                      trusted=False)
    # a folder inside a project names that project; what leaves the folder is refused when untrusted
    assert chosen.roots == [str(repo / "tools" / "other"), str(repo / "services" / "agent")]
    assert any("`missing` is not a folder" in n for n in chosen.notes)
    assert sum("not trusted" in n for n in chosen.notes) == 2  # ../repo-evil, and the symlink out
    trusted = explicit(str(repo), ["../repo-evil"], trusted=True)
    assert trusted.roots == [str(tmp_path / "repo-evil")] and trusted.notes == []
    assert explicit(str(repo), ["a\nb", 3, ""], trusted=True).roots == []


def test_the_setting_replaces_the_search_and_falls_back_when_it_names_nothing(tmp_path):
    repo = _monorepo(tmp_path)
    assert folder_projects(str(repo), ["tools/other"], False, [str(repo)]).roots == [str(repo / "tools" / "other")]
    fallback = folder_projects(str(repo), ["nope"], False, [str(repo)])
    assert fallback.roots == [str(repo / "services" / "agent"), str(repo / "tools" / "other")]
    assert any("`nope` is not a folder" in n for n in fallback.notes)
    # an absolute root outside every folder: served with the first folder, only when trusted
    elsewhere = _project(tmp_path / "elsewhere")
    assert folder_projects(str(repo), [str(elsewhere)], True, [str(repo)]).roots == [str(elsewhere)]
    assert str(elsewhere) not in folder_projects(str(repo), [str(elsewhere)], False, [str(repo)]).roots


def test_notes_about_setting_entries_quote_them_inert_and_capped(tmp_path):
    """A workspace's `.vscode/settings.json` is the repository's: an entry is shown as the server shows any
    untrusted value in a message (util/message_text.quote), not as Python's repr: no live link for VS Code's
    notification, control characters spelled out, at most QUOTE_BYTES of it."""
    repo = _monorepo(tmp_path)
    link = "[Open terminal](command:workbench.action.terminal.new)"
    notes = explicit(str(repo), [link + "x" * 5000, link + "\x1b[2J", 7, None], trusted=False).notes
    assert len(notes) == 4, notes
    for note in notes:
        assert "](command:" not in note and "\x1b" not in note and "'" not in note, note
        assert len(note.encode()) < 700, len(note)
    assert "(… 4,754 more bytes)" in notes[0] and "\\x1b[2J`" in notes[1]
    assert "ignored `7` (not a folder name)" in notes[2] and "ignored `null` (not a folder name)" in notes[3]
