"""Where a Harn project keeps its state (harn-formats §A, §F.1).

Resolution mirrors Harn's runtime: project root = nearest `harn.toml` above
the given path, else the path itself; each root honours its environment
override. Nothing here creates a directory.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Mapping

from harn_ls.lean_dataclass import lean_dataclass
from harn_ls.formats.parse_limits import load_toml
from harn_ls.safe_read import read_confined


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
    value = env.get(name, "").strip()
    if not value:
        return None
    return os.path.normpath(value if os.path.isabs(value) else os.path.join(base, value))


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
        roots = [self.state_root, self.run_root, self.memory_root, self.pattern_memory_root, self.worker_dir]
        roots += [r.path for r in self.skill_roots if r.layer not in ("user", "system")]
        roots.append(os.path.join(self.project_root, ".burin", "crystallization"))  # staged candidates (§O.5)
        out: list[str] = []
        for r in roots:
            if r and r not in out and not any(r.startswith(o + os.sep) for o in out) and (
                    not confined or self.root_allowed(r) is None):
                out.append(r)
        return out

    def root_allowed(self, root: str) -> str | None:
        """None when harn-ls may watch/read `root`, else the reason (a symlink out of the project)."""
        if any(_inside_by_name(root, e) for e in self.env_roots if not _inside_by_name(e, self.project_root)):
            return None  # the user's environment placed it (or its parent) outside the project on purpose
        if self.is_inside_project(root):
            return None
        if _inside_by_name(root, self.project_root):
            link = _first_link(root, self.project_root)
            where = f"symlink {link} -> {_readlink(link)}" if link else root
            return f"{where} leads outside the project; not watched or read"
        return f"{root} is outside the project; not watched or read"

    def watch_refusals(self) -> list[tuple[str, str]]:
        """(root, reason) for every root left out of `watch_roots`, and every refused harn.toml root."""
        out = list(self.refused_roots)
        roots = [self.state_root, self.run_root, self.memory_root, self.pattern_memory_root, self.worker_dir]
        roots += [r.path for r in self.skill_roots if r.layer not in ("user", "system")]
        seen = set()
        for r in roots:
            if r and r not in seen:
                seen.add(r)
                why = self.root_allowed(r)
                if why is not None:
                    out.append((r, why))
        return out

    def is_inside_project(self, path: str) -> bool:
        """True when `path`, with symlinks resolved, stays inside the project root."""
        real_root = os.path.realpath(self.project_root)
        real = os.path.realpath(path)
        return real == real_root or real.startswith(real_root + os.sep)


def _inside_by_name(path: str, root: str) -> bool:
    path, root = os.path.abspath(path), os.path.abspath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _first_link(path: str, root: str) -> str | None:
    root, path = os.path.abspath(root), os.path.abspath(path)
    if not _inside_by_name(path, root):
        return None
    current = root
    for part in path[len(root):].split(os.sep):
        if part:
            current = os.path.join(current, part)
            if os.path.islink(current):
                return current
    return None


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
    real_root = os.path.realpath(project_root)
    for p in paths[:64]:
        if isinstance(p, str) and p and "*" not in p and "\x00" not in p:
            full = os.path.normpath(os.path.join(project_root, p))
            real = os.path.realpath(full)
            if _inside_by_name(full, project_root) and (real == real_root or real.startswith(real_root + os.sep)):
                out.append(full)
            else:
                refused.append((full, f"harn.toml [skills] paths entry {p!r} is outside the project ({real}); "
                                      "ignored: project configuration cannot make harn-ls watch or read outside it"))
    return out, refused


def resolve(path: str, env: Mapping[str, str] | None = None, home: str | None = None) -> ProjectPaths:
    env = os.environ if env is None else env
    home = home if home is not None else os.path.expanduser("~")
    root = find_project_root(path)
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
    )
