"""Issue 12 item 5: watching (and reading) stays inside the project.

Before, on this machine (StateWatcher on a cloned project, inotify watches counted in /proc/self/fdinfo):
* harn.toml `[skills] paths = ["/usr"]`: 15,555 watches, 12.9 s to start;
* a committed symlink `.harn-runs -> /usr`: 15,554 watches, 3.6 s;
* `paths = ["../../../../../../../../../usr/share"]`: 3,286 watches.
After: 1-2 watches, a problem naming the entry or the link, the root neither watched nor read.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harn_ls.formats import paths as paths_mod  # noqa: E402
from harn_ls.formats.skills import CODE_ROOT_OUTSIDE  # noqa: E402
from harn_ls.model.workspace import CODE_LINK_OUT, Workspace  # noqa: E402
from harn_ls.util.message_text import quote  # noqa: E402
from harn_ls.watch.observer import CODE_WATCH_BUDGET, StateWatcher  # noqa: E402
from tests.helpers.watch import roots_watched  # noqa: E402

SAMPLE = REPO / "fixtures" / "sample-project"


def inotify_watches() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                n += sum(1 for line in fh if line.startswith("inotify wd:"))
        except OSError:
            pass
    return n


@pytest.fixture
def evil_tree(tmp_path) -> Path:
    """`proj-evil/big`: a directory tree the attacker wants watched (600 directories, a SKILL.md)."""
    big = tmp_path / "proj-evil" / "big"
    for i in range(30):
        for j in range(20):
            (big / f"d{i}" / f"e{j}").mkdir(parents=True)
    (big / "stolen").mkdir()
    (big / "stolen" / "SKILL.md").write_text("---\nname: stolen\ndescription: outside\n---\nbody\n")
    return big


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    return proj


def _watch(paths, **kw) -> tuple[StateWatcher, int]:
    before = inotify_watches()
    w = StateWatcher(paths, lambda p, r: None, **kw)
    w.start()
    return w, inotify_watches() - before


@pytest.mark.parametrize("entry", ["ABS", "../proj-evil/big", "../../../../../../../../../../../{evil}"])
def test_harn_toml_skill_paths_outside_are_refused(tmp_path, evil_tree, entry):
    proj = _project(tmp_path)
    entry = str(evil_tree) if entry == "ABS" else entry.format(evil=str(evil_tree).lstrip("/"))
    (proj / "harn.toml").write_text(f'[skills]\npaths = ["{entry}"]\n')
    paths = paths_mod.resolve(str(proj), env={}, home=str(tmp_path / "home"))
    assert not any(str(evil_tree) in r for r in paths.watch_roots(confined=False))
    w, added = _watch(paths)
    try:
        assert added < 60  # the project's own .harn tree; before: + every directory under the entry
        assert not any(str(evil_tree) in r for r in roots_watched(w))
    finally:
        w.stop()
    ws = Workspace(paths)
    ws.rescan()
    probs = [p for p in ws.problems() if p.code == CODE_ROOT_OUTSIDE]
    assert len(probs) == 1 and quote(entry) in probs[0].message and "ignored" in probs[0].message
    assert probs[0].path == str(proj / "harn.toml")
    assert "stolen" not in {s.name for s in ws.skills.skills}  # not read either
    assert ws.facts  # the rest is served


def test_committed_symlink_state_root_is_not_watched_or_read(tmp_path, evil_tree):
    proj = _project(tmp_path)
    (evil_tree / "run.json").write_text('{"_type": "run_record", "id": "evil-run", "status": "complete"}')
    if (proj / ".harn-runs").exists():
        shutil.rmtree(proj / ".harn-runs")
    os.symlink(evil_tree, proj / ".harn-runs")
    paths = paths_mod.resolve(str(proj), env={}, home=str(tmp_path / "home"))
    w, added = _watch(paths)
    try:
        assert added < 60 and str(proj / ".harn-runs") not in roots_watched(w)
    finally:
        w.stop()
    ws = Workspace(paths)
    ws.rescan()
    assert "evil-run" not in ws.runs
    probs = [p for p in ws.problems() if p.code == CODE_LINK_OUT]
    assert [(p.path, p.message) for p in probs] == [
        (str(proj / ".harn-runs"),
         f"symlink {proj / '.harn-runs'} -> {evil_tree} leads outside the project; not watched or read")]


def test_symlink_root_appearing_later_is_not_watched(tmp_path, evil_tree):
    proj = _project(tmp_path)
    if (proj / ".harn-runs").exists():
        shutil.rmtree(proj / ".harn-runs")
    paths = paths_mod.resolve(str(proj), env={}, home=str(tmp_path / "home"))
    w, _ = _watch(paths, health_interval=0.1)
    try:
        base = inotify_watches()
        os.symlink(evil_tree, proj / ".harn-runs")
        time.sleep(1.0)  # several supervisor rounds
        assert str(proj / ".harn-runs") not in roots_watched(w)
        assert inotify_watches() - base < 5
    finally:
        w.stop()


def test_watch_budget_gives_a_problem(tmp_path):
    proj = _project(tmp_path)
    for i in range(150):
        (proj / ".harn" / "memory" / "project" / f"ns{i}").mkdir(parents=True)
    paths = paths_mod.resolve(str(proj), env={}, home=str(tmp_path / "home"))
    w, added = _watch(paths, watch_budget=100)
    try:
        assert added <= 100
        assert str(proj / ".harn") not in roots_watched(w)
        assert [p.code for p in w.problems] == [CODE_WATCH_BUDGET]
        assert "watch budget exceeded" in w.problems[0].message and "budget 100" in w.problems[0].message
    finally:
        w.stop()
    # Within budget: watched, no problem.
    w, added = _watch(paths, watch_budget=1000)
    try:
        assert str(proj / ".harn") in roots_watched(w) and w.problems == []
        assert added > 150
    finally:
        w.stop()


def test_environment_roots_outside_the_project_are_still_watched(tmp_path):
    proj = _project(tmp_path)
    runs = tmp_path / "elsewhere-runs"
    runs.mkdir()
    paths = paths_mod.resolve(str(proj), env={"HARN_RUN_DIR": str(runs)}, home=str(tmp_path / "home"))
    assert paths.root_allowed(str(runs)) is None
    w, _ = _watch(paths)
    try:
        assert str(runs) in roots_watched(w)  # the user's own environment chose it
    finally:
        w.stop()
