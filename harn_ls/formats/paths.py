"""Where a Harn project keeps its state (harn-formats §A, §F.1).

Resolution mirrors Harn's runtime: project root = nearest `harn.toml` above
the given path, else the path itself; each root honours its environment
override. Nothing here creates a directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import cast

from harn_ls.formats.parse_limits import load_toml
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.message_text import quote
from harn_ls.util.safe_read import first_link, is_under, read_confined, resolves_inside


def find_project_root(start: str) -> str:
    """Nearest directory at or above `start` holding `harn.toml`, else `start`."""
    start = os.path.abspath(start)
    if os.path.isfile(start):
        start = os.path.dirname(start)
    current = start
    while True:
        if os.path.isfile(os.path.join(current, "harn.toml")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return start
        current = parent


def _env_path(env: Mapping[str, str], name: str, base: str) -> str | None:
    """Harn's `resolve_root` / `resolve_path` (runtime_paths.rs, event_log/mod.rs): a value that is not
    blank, as it is (not trimmed), absolute or joined to `base`."""
    value = env.get(name, "")
    if not value.strip():
        return None
    return os.path.normpath(value if os.path.isabs(value) else os.path.join(base, value))


# Harn's variables that move state (runtime_paths.rs, event_log/mod.rs, cli.rs, memory.rs): the only
# keys `harnState.harnEnv` may set.
LOCATION_VARS = ("HARN_STATE_DIR", "HARN_RUN_DIR", "HARN_MEMORY_ROOT", "HARN_WORKER_STATE_DIR", "HARN_SKILLS_PATH",
                 "HARN_EVENT_LOG_BACKEND", "HARN_EVENT_LOG_DIR", "HARN_EVENT_LOG_SQLITE_PATH",
                 "HARN_ORCHESTRATOR_STATE_DIR", "HARN_WORKTREE_DIR")
EVENT_LOG_BACKENDS = ("sqlite", "file", "memory")


@lean_dataclass(frozen=True)
class EventLogPlace:
    """Where one Harn producer keeps its event log, and why there (issue 28: the tree says so)."""

    label: str  # run | orchestrator | personas
    backend: str  # what HARN_EVENT_LOG_BACKEND selects: sqlite | file | memory
    sqlite_path: str
    file_dir: str
    state_dir: str  # what `--state-dir` names for this log
    why_sqlite: str
    why_file: str


@lean_dataclass(frozen=True)
class SkillLayerRoot:
    """A folder skills are loaded from, and the layer it belongs to."""

    layer: str  # env | project | manifest | user | package | system, plus claude / burin (pattern learning)
    path: str


@lean_dataclass(frozen=True)
class ProjectPaths:
    """Where a project's Harn state lives, after the environment and harn.toml."""

    project_root: str
    state_root: str  # .harn (HARN_STATE_DIR)
    run_root: str  # .harn-runs (HARN_RUN_DIR)
    memory_root: str  # HARN_MEMORY_ROOT or <root>/.harn/memory — ignores HARN_STATE_DIR
    pattern_memory_root: str  # <state root>/memory — honours HARN_STATE_DIR
    skill_roots: tuple[SkillLayerRoot, ...] = field(default=())
    trusted_signers_dir: str = ""
    worker_dir: str = ""
    # (path, reason): roots the project's own configuration (harn.toml) put outside the project. Ignored.
    refused_roots: tuple[tuple[str, str], ...] = field(default=())
    # Roots the user's environment (HARN_*_DIR, HARN_SKILLS_PATH) placed: trusted to be outside the project.
    env_roots: tuple[str, ...] = field(default=())
    event_logs: tuple[EventLogPlace, ...] = field(default=())
    worktree_root: str = ""  # HARN_WORKTREE_DIR, else <state root>/worktrees
    orchestrator_state_dir: str = ""  # HARN_ORCHESTRATOR_STATE_DIR, else .harn/orchestrator
    # (path, reason): a location variable that is not the user's choice (harnState.harnEnv in an untrusted
    # workspace) pointing outside the project, or a bad HARN_EVENT_LOG_BACKEND. Not read.
    env_refusals: tuple[tuple[str, str], ...] = field(default=())

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.state_root, "checkpoints")

    @property
    def session_store(self) -> str:
        return os.path.join(self.state_root, "session-store.sqlite")

    @property
    def legacy_session_store_dir(self) -> str:
        return os.path.join(self.state_root, "session-store")

    @property
    def pattern_learning_dir(self) -> str:
        return os.path.join(self.pattern_memory_root, "project", "pattern-learning")

    def watch_roots(self, confined: bool = True) -> list[str]:
        """Directories a watcher should follow (they may not exist yet).

        Only roots inside the project, or placed by the user's environment: a root that is inside the
        project by name but leaves it through a symlink (`.harn-runs -> /usr`) is left out (see
        `watch_refusals`), and harn.toml cannot add roots outside the project (`refused_roots`).
        `confined=False`: every candidate (the watcher re-checks each with `root_allowed` when arming it,
        since a root may turn into a symlink later)."""
        roots = self._data_roots()
        # staged candidates (§O.5): the newest Harn's `.harn/crystallization` (under the state root's
        # default place) and the older `.burin/crystallization`
        roots.append(os.path.join(self.project_root, ".harn", "crystallization"))
        roots.append(os.path.join(self.project_root, ".burin", "crystallization"))
        out: list[str] = []
        for r in roots:
            if r and r not in out and not any(r.startswith(o + os.sep) for o in out) and (
                    not confined or self.root_allowed(r) is None):
                out.append(r)
        return out

    def _data_roots(self) -> list[str]:
        roots = [self.state_root, self.run_root, self.memory_root, self.pattern_memory_root, self.worker_dir]
        roots += [r.path for r in self.skill_roots if r.layer not in ("user", "system")]
        # where Harn's variables put event logs, worktrees and the orchestrator's state (issue 28)
        for pl in self.event_logs:
            roots += [os.path.dirname(pl.sqlite_path), pl.file_dir]
        roots += [self.worktree_root, self.orchestrator_state_dir]
        return roots

    def root_allowed(self, root: str) -> str | None:
        """None when harn-ls may watch/read `root`, else the reason (a symlink out of the project)."""
        if any(_inside_by_name(root, e) for e in self.env_roots if not _inside_by_name(e, self.project_root)):
            return None  # the user's environment placed it (or its parent) outside the project on purpose
        if self.is_inside_project(root):
            return None
        if _inside_by_name(root, self.project_root):
            link = first_link(root, self.project_root)
            where = f"symlink {link} -> {_readlink(link)}" if link else root
            return f"{where} leads outside the project; not watched or read"
        return f"{root} is outside the project; not watched or read"

    def watch_refusals(self) -> list[tuple[str, str]]:
        """(root, reason) for every root left out of `watch_roots`, and every refused harn.toml root."""
        out = list(self.refused_roots)
        for r in dict.fromkeys(self._data_roots()):  # (each once, in order)
            why = self.root_allowed(r) if r else None
            if why is not None:
                out.append((r, why))
        return out

    def is_inside_project(self, path: str) -> bool:
        """True when `path`, with symlinks resolved, stays inside the project root."""
        return resolves_inside(path, self.project_root)


def _inside_by_name(path: str, root: str) -> bool:
    """(Its inputs may come from the environment: made absolute and normalised first.)"""
    return is_under(os.path.abspath(path), os.path.abspath(root))


def _readlink(path: str | None) -> str:
    try:
        return os.readlink(path) if path else "?"
    except OSError:
        return "?"


MANIFEST_CAP = 1024 * 1024  # harn.toml


def _manifest_skill_paths(project_root: str) -> tuple[list[str], list[tuple[str, str]]]:
    """harn.toml `[skills] paths`: (accepted, refused). Project configuration cannot point outside the
    project (`/usr`, `../../..`, a symlink out): such entries are refused with a reason. (A harn.toml
    that does not parse is reported once, by skill discovery.)"""
    manifest = os.path.join(project_root, "harn.toml")
    try:
        raw = read_confined(manifest, project_root, MANIFEST_CAP)
    except (OSError, ValueError):
        return [], []
    data, _why = load_toml(raw)
    if data is None:
        return [], []
    skills = data.get("skills") if isinstance(data, dict) else None
    paths = skills.get("paths") if isinstance(skills, dict) else None
    if not isinstance(paths, list):
        return [], []
    out, refused = [], []
    for p in paths[:64]:
        if isinstance(p, str) and p and "*" not in p and "\x00" not in p:
            full = os.path.normpath(os.path.join(project_root, p))
            if _inside_by_name(full, project_root) and resolves_inside(full, project_root):
                out.append(full)
            else:
                refused.append((full, f"harn.toml [skills] paths entry {quote(p)} is outside the project "
                                      f"({quote(os.path.realpath(full))}); ignored: project configuration cannot "
                                      "make harn-ls watch or read outside it"))
    return out, refused


def _source(name: str, sources: Mapping[str, str]) -> str:
    return sources.get(name) or "harn-ls's environment"


def _event_log_place(label: str, base: str, state_root: str, env: Mapping[str, str], sources: Mapping[str, str],
                     backend: str, base_name: str) -> EventLogPlace:
    """Harn's `EventLogConfig::for_base_dir(base)`: HARN_EVENT_LOG_SQLITE_PATH / HARN_EVENT_LOG_DIR
    (not blank) resolved against the base dir, else `<state root>/events.sqlite` / `<state root>/events`."""
    places = []
    for var, default in (("HARN_EVENT_LOG_SQLITE_PATH", "events.sqlite"), ("HARN_EVENT_LOG_DIR", "events")):
        p = _env_path(env, var, base)
        if p is not None:
            places.append((p, f"{var}={env[var]!r} ({_source(var, sources)})"
                              + ("" if os.path.isabs(env[var]) else f", relative to {base_name}")))
        else:
            places.append((os.path.join(state_root, default), f"default: {default} in the state root"
                           + (f" ({state_root})" if label != "run" else "")))
    return EventLogPlace(label, backend, places[0][0], places[1][0], state_root, places[0][1], places[1][1])


def _confine_env(env: Mapping[str, str], untrusted: Iterable[str], root: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Drop location variables not chosen by the user (`untrusted`: set by harnState.harnEnv in an untrusted
    workspace) whose place is outside the project, by name or through a symlink. (path, reason) for each."""
    out = dict(env)
    refused: list[tuple[str, str]] = []
    for name in untrusted:
        value = out.get(name, "")
        if name not in LOCATION_VARS or not value.strip() or name in ("HARN_EVENT_LOG_BACKEND",):
            continue
        entries = value.split(";" if os.name == "nt" else ":") if name == "HARN_SKILLS_PATH" else [value]
        for entry in entries:
            full = os.path.normpath(entry if os.path.isabs(entry) else os.path.join(root, entry))
            if not (_inside_by_name(full, root) and resolves_inside(full, root)):
                refused.append((full, f"{name}={quote(value)} from harnState.harnEnv points outside the project "
                                      f"({quote(os.path.realpath(full))}) and the workspace is not trusted; "
                                      "ignored, nothing read there"))
                out.pop(name, None)
                break
    return out, refused


def resolve(path: str, env: Mapping[str, str] | None = None, home: str | None = None,
            env_sources: Mapping[str, str] | None = None, untrusted_env: Iterable[str] = ()) -> ProjectPaths:
    """`env_sources`: where a variable came from when not harn-ls's own environment (shown in the tree);
    `untrusted_env`: names whose values the user did not choose (confined to the project)."""
    env = os.environ if env is None else env
    sources = env_sources or {}
    home = home if home is not None else os.path.expanduser("~")
    root = find_project_root(path)
    env_refusals: list[tuple[str, str]] = []
    if untrusted_env:
        env, env_refusals = _confine_env(env, untrusted_env, root)
    state_root = _env_path(env, "HARN_STATE_DIR", root) or os.path.join(root, ".harn")
    run_root = _env_path(env, "HARN_RUN_DIR", root) or os.path.join(root, ".harn-runs")
    memory_root = _env_path(env, "HARN_MEMORY_ROOT", root) or os.path.join(root, ".harn", "memory")
    worker_dir = _env_path(env, "HARN_WORKER_STATE_DIR", root) or os.path.join(root, ".harn", "workers")
    layers: list[SkillLayerRoot] = []
    sep = ";" if os.name == "nt" else ":"
    env_roots = [p for p in (_env_path(env, name, root) for name in
                 ("HARN_STATE_DIR", "HARN_RUN_DIR", "HARN_MEMORY_ROOT", "HARN_WORKER_STATE_DIR")) if p]
    if _env_path(env, "HARN_STATE_DIR", root):
        env_roots.append(os.path.join(state_root, "memory"))
    for entry in env.get("HARN_SKILLS_PATH", "").split(sep):
        if entry.strip():
            layers.append(SkillLayerRoot("env", os.path.normpath(os.path.join(root, entry.strip()))))
            env_roots.append(layers[-1].path)
    layers.append(SkillLayerRoot("project", os.path.join(root, ".harn", "skills")))
    manifest_paths, refused = _manifest_skill_paths(root)
    for p in manifest_paths:
        layers.append(SkillLayerRoot("manifest", p))
    layers.append(SkillLayerRoot("user", os.path.join(home, ".harn", "skills")))
    packages = os.path.join(root, ".harn", "packages")
    try:
        for alias in sorted(os.listdir(packages)):
            layers.append(SkillLayerRoot("package", os.path.join(packages, alias, "skills")))
    except OSError:
        pass
    backend = env.get("HARN_EVENT_LOG_BACKEND", "").strip().lower() or "sqlite"
    if backend not in EVENT_LOG_BACKENDS:
        env_refusals.append((root, f"HARN_EVENT_LOG_BACKEND={quote(env['HARN_EVENT_LOG_BACKEND'])} "
                                   f"({_source('HARN_EVENT_LOG_BACKEND', sources)}): Harn refuses it (\"unsupported event log "
                                   "backend\") and opens no log; harn-ls reads the default places"))
        backend = "sqlite"
    # the orchestrator: `--state-dir` (HARN_ORCHESTRATOR_STATE_DIR, default .harn/orchestrator) resolved against
    # its working folder (the project root); it sets HARN_STATE_DIR to that dir, so its state root is the dir itself
    orch = _env_path(env, "HARN_ORCHESTRATOR_STATE_DIR", root) or os.path.join(root, ".harn", "orchestrator")
    personas_base = os.path.join(root, ".harn", "personas")
    personas_state = _env_path(env, "HARN_STATE_DIR", personas_base) or os.path.join(personas_base, ".harn")
    event_logs = (
        _event_log_place("run", root, state_root, env, sources, backend, "the project root"),
        _event_log_place("orchestrator", orch, orch, env, sources, backend, "the orchestrator state dir"),
        _event_log_place("personas", personas_base, personas_state, env, sources, backend, ".harn/personas"),
    )
    worktree_root = _env_path(env, "HARN_WORKTREE_DIR", root) or os.path.join(state_root, "worktrees")
    for name in ("HARN_EVENT_LOG_SQLITE_PATH", "HARN_EVENT_LOG_DIR", "HARN_WORKTREE_DIR", "HARN_ORCHESTRATOR_STATE_DIR"):
        place = _env_path(env, name, root)
        if place:
            env_roots.append(place)
            if name.startswith("HARN_EVENT_LOG_"):  # the orchestrator's copy, resolved against its dir
                # the same non-blank value as `place`, so never None
                env_roots.append(cast(str, _env_path(env, name, orch)))
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    layers.append(SkillLayerRoot("system", os.path.join(xdg, "harn", "skills")))
    # Where pattern learning writes and reads accepted skills (not a Harn loader layer).
    layers.append(SkillLayerRoot("claude", os.path.join(root, ".claude", "skills")))
    layers.append(SkillLayerRoot("burin", os.path.join(root, ".burin", "skills")))
    return ProjectPaths(
        project_root=root,
        state_root=state_root,
        run_root=run_root,
        memory_root=memory_root,
        pattern_memory_root=os.path.join(state_root, "memory"),
        skill_roots=tuple(layers),
        trusted_signers_dir=os.path.join(home, ".harn", "trusted-signers"),
        worker_dir=worker_dir,
        refused_roots=tuple(refused),
        env_roots=tuple(env_roots),
        event_logs=event_logs,
        worktree_root=worktree_root,
        orchestrator_state_dir=orch,
        env_refusals=tuple(env_refusals),
    )
