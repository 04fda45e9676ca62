"""Where a Harn project keeps its state (harn-formats §A, §F.1).

Resolution mirrors Harn's runtime: project root = nearest `harn.toml` above
the given path, else the path itself; each root honours its environment
override. Nothing here creates a directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping


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


@dataclass(frozen=True)
class SkillLayerRoot:
    layer: str  # env | project | manifest | user | package | system, plus claude / burin (pattern learning)
    path: str


@dataclass(frozen=True)
class ProjectPaths:
    project_root: str
    state_root: str  # .harn (HARN_STATE_DIR)
    run_root: str  # .harn-runs (HARN_RUN_DIR)
    memory_root: str  # HARN_MEMORY_ROOT or <root>/.harn/memory — ignores HARN_STATE_DIR
    pattern_memory_root: str  # <state root>/memory — honours HARN_STATE_DIR
    skill_roots: tuple[SkillLayerRoot, ...] = field(default=())
    trusted_signers_dir: str = ""
    worker_dir: str = ""

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

    def watch_roots(self) -> list[str]:
        """Directories a watcher should follow (they may not exist yet)."""
        roots = [self.state_root, self.run_root, self.memory_root, self.pattern_memory_root, self.worker_dir]
        roots += [r.path for r in self.skill_roots if r.layer not in ("user", "system")]
        roots.append(os.path.join(self.project_root, ".burin", "crystallization"))  # staged candidates (§O.5)
        out: list[str] = []
        for r in roots:
            if r and r not in out and not any(r.startswith(o + os.sep) for o in out):
                out.append(r)
        return out

    def is_inside_project(self, path: str) -> bool:
        """True when `path`, with symlinks resolved, stays inside the project root."""
        real_root = os.path.realpath(self.project_root)
        real = os.path.realpath(path)
        return real == real_root or real.startswith(real_root + os.sep)


def _manifest_skill_paths(project_root: str) -> list[str]:
    manifest = os.path.join(project_root, "harn.toml")
    try:
        import tomllib

        with open(manifest, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError):
        return []
    skills = data.get("skills") if isinstance(data, dict) else None
    paths = skills.get("paths") if isinstance(skills, dict) else None
    if not isinstance(paths, list):
        return []
    out = []
    for p in paths:
        if isinstance(p, str) and p and "*" not in p:
            out.append(os.path.normpath(os.path.join(project_root, p)))
    return out


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
    for entry in env.get("HARN_SKILLS_PATH", "").split(sep):
        if entry.strip():
            layers.append(SkillLayerRoot("env", os.path.normpath(os.path.join(root, entry.strip()))))
    layers.append(SkillLayerRoot("project", os.path.join(root, ".harn", "skills")))
    for p in _manifest_skill_paths(root):
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
    )
