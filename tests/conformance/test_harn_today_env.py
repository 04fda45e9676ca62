"""Issue 28 item 2: Harn's location variables, resolved exactly as Harn resolves them, from harn-ls's
environment and from `harnState.harnEnv`; the places stay inside the project unless the user chose them.

Harn sources (burin-labs/harn, mirror snapshot e45362cf):
* crates/harn-vm/src/event_log/mod.rs `EventLogConfig::for_base_dir`: HARN_EVENT_LOG_BACKEND parsed
  (trimmed, lower-cased; memory | file | sqlite, anything else "unsupported event log backend"),
  default sqlite; HARN_EVENT_LOG_DIR / HARN_EVENT_LOG_SQLITE_PATH when not blank →
  `resolve_path(base_dir, value)` (absolute as is, else `base_dir.join(value)`), else
  `runtime_paths::event_log_dir` / `event_log_sqlite_path` = `<state root>/events`, `/events.sqlite`;
* crates/harn-vm/src/runtime_paths.rs: `state_root` (HARN_STATE_DIR, else `.harn`), `worktree_root`
  (HARN_WORKTREE_DIR absolute or joined to the base dir, else `<state root>/worktrees`);
* crates/harn-cli/src/cli.rs `OrchestratorLocalArgs.state_dir` (HARN_ORCHESTRATOR_STATE_DIR, default
  `.harn/orchestrator`), common.rs `absolutize_from_cwd`, role.rs `build_vm` (HARN_STATE_DIR := state dir);
* crates/harn-vm/src/stdlib/memory.rs `memory_root` / `resolve_memory_root`: HARN_MEMORY_ROOT through
  process.rs `resolve_source_relative_path` = `execution_root_path().join(value)`, where
  `execution_root_path()` is the run's execution-context cwd, else the process working folder (the
  newest version also refuses a `..` walk past the filesystem root). Not the script's folder: only an
  older process.rs fell back to the VM source dir. For a project harn-ls takes the project root, the
  folder `harn run` is started from and the one `runtime_root_base()` finds.
"""

from __future__ import annotations

import os

from harn_ls.formats.paths import resolve
from harn_ls.model.workspace import CODE_ENV_REFUSED, Workspace
from harn_ls.render.documents import render_uri
from tests.helpers import event_log_writer as W


def _project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "harn.toml").write_text("")
    return proj


def _log(path, topic="t.one"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    conn = W.open_log(str(path))
    W.append(conn, topic, "k", {"n": 1})
    conn.close()


def test_sqlite_path_relative_to_the_base_dir_is_found_and_explained(tmp_path):
    proj = _project(tmp_path)
    _log(proj / "state" / "custom.sqlite")
    env = {"HARN_EVENT_LOG_SQLITE_PATH": "state/custom.sqlite"}
    ws = Workspace.load(str(proj), env=env)
    (run,) = [v for v in ws.event_logs.existing_logs()]
    assert run.label == "run" and run.path == str(proj / "state" / "custom.sqlite")
    assert "t.one" in run.summary.topics
    assert run.loc.why == "HARN_EVENT_LOG_SQLITE_PATH='state/custom.sqlite' (harn-ls's environment), relative to the project root"
    doc = render_uri(ws, "harn-state:/events.md")
    assert "Found here because: HARN\\_EVENT\\_LOG\\_SQLITE\\_PATH" in doc \
        or "Found here because: HARN_EVENT_LOG_SQLITE_PATH" in doc
    import functools

    from harn_ls.render import tree_items, tree_state
    (node,) = tree_state.children(ws, "events", functools.partial(tree_items.tree_item, "open"))
    assert node.description == "1 topic(s) · HARN_EVENT_LOG_SQLITE_PATH"
    assert node.tooltip.endswith("relative to the project root")


def test_blank_value_falls_back_and_value_is_not_trimmed(tmp_path):
    proj = _project(tmp_path)
    p = resolve(str(proj), env={"HARN_EVENT_LOG_SQLITE_PATH": "   ", "HARN_EVENT_LOG_DIR": " ev"})
    run = p.event_logs[0]
    assert run.sqlite_path == str(proj / ".harn" / "events.sqlite")  # blank: Harn's default
    assert run.file_dir == str(proj / " ev")  # not blank: used as it is, leading space and all


def test_backend_dir_orchestrator_and_worktrees_follow_their_variables(tmp_path):
    proj = _project(tmp_path)
    os.makedirs(proj / "flog" / "topics")
    (proj / "flog" / "topics" / "t.file.jsonl").write_text(
        '{"id":1,"event":{"kind":"k","payload":{},"headers":{},"occurred_at_ms":1}}\n')
    _log(proj / "orch-state" / "events.sqlite", "orch.topic")
    wt = proj / "trees" / "repo" / "worker-1"
    wt.mkdir(parents=True)
    env = {"HARN_EVENT_LOG_BACKEND": " FILE ", "HARN_EVENT_LOG_DIR": "flog", "HARN_ORCHESTRATOR_STATE_DIR": "orch-state",
           "HARN_WORKTREE_DIR": "trees"}
    ws = Workspace.load(str(proj), env=env)
    logs = {v.label: v for v in ws.event_logs.existing_logs()}
    assert set(logs) == {"run-file", "orchestrator"}
    assert logs["run-file"].loc.selected and "t.file" in logs["run-file"].summary.topics
    assert logs["orchestrator"].path == str(proj / "orch-state" / "events.sqlite")
    assert logs["orchestrator"].loc.state_dir == str(proj / "orch-state")  # what resume's --state-dir names
    assert not logs["orchestrator"].loc.selected  # HARN_EVENT_LOG_BACKEND=file: Harn writes sqlite no more
    assert ws.paths.worktree_root == str(proj / "trees")
    assert [w.name for w in ws.event_logs.worktrees] == ["repo/worker-1"] or len(ws.event_logs.worktrees) == 1


def test_unsupported_backend_is_a_problem(tmp_path):
    proj = _project(tmp_path)
    ws = Workspace.load(str(proj), env={"HARN_EVENT_LOG_BACKEND": "kafka"})
    (p,) = [p for p in ws.problems() if p.code == CODE_ENV_REFUSED]
    assert "HARN_EVENT_LOG_BACKEND=`kafka`" in p.message and "unsupported event log backend" in p.message


def test_relative_memory_root_resolves_against_the_execution_root(tmp_path):
    proj = _project(tmp_path)
    (proj / "pipelines").mkdir()
    p = resolve(str(proj / "pipelines"), env={"HARN_MEMORY_ROOT": "mem"})
    assert p.memory_root == str(proj / "mem")  # the project root, not the folder asked about


def test_places_outside_the_project(tmp_path):
    """The user's own environment may put a log in a sibling (`proj-evil` here stands for any folder the
    user chose); harnState.harnEnv from an untrusted workspace may not: a problem, nothing read."""
    proj = _project(tmp_path)
    evil = tmp_path / "proj-evil"
    _log(evil / "events.sqlite", "evil.secret")
    env = {"HARN_EVENT_LOG_SQLITE_PATH": "../proj-evil/events.sqlite"}
    trusted = Workspace.load(str(proj), env=env)
    assert [v.path for v in trusted.event_logs.existing_logs()] == [os.path.normpath(str(evil / "events.sqlite"))]
    assert "evil.secret" in trusted.event_logs.existing_logs()[0].summary.topics

    untrusted = Workspace.load(str(proj), env=env, env_sources={"HARN_EVENT_LOG_SQLITE_PATH": "harnState.harnEnv"},
                               untrusted_env=("HARN_EVENT_LOG_SQLITE_PATH",))
    assert untrusted.event_logs.existing_logs() == []
    (p,) = [p for p in untrusted.problems() if p.code == CODE_ENV_REFUSED]
    assert "HARN_EVENT_LOG_SQLITE_PATH" in p.message and "not trusted" in p.message and str(evil) in p.message
    # a symlink inside the project that leads to the sibling is refused the same way
    os.symlink(evil, proj / "logs")
    untrusted = Workspace.load(str(proj), env={"HARN_WORKTREE_DIR": "logs"}, untrusted_env=("HARN_WORKTREE_DIR",))
    assert any(p.code == CODE_ENV_REFUSED and "HARN_WORKTREE_DIR" in p.message for p in untrusted.problems())
    assert untrusted.paths.worktree_root == str(proj / ".harn" / "worktrees")
    # inside the project, an untrusted value is harmless and followed
    _log(proj / "in" / "e.sqlite")
    ws = Workspace.load(str(proj), env={"HARN_EVENT_LOG_SQLITE_PATH": "in/e.sqlite"},
                        untrusted_env=("HARN_EVENT_LOG_SQLITE_PATH",))
    assert [v.path for v in ws.event_logs.existing_logs()] == [str(proj / "in" / "e.sqlite")]
