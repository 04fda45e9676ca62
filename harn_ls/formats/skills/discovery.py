"""Discovery across skill layers and Harn's shadowing (§F.1).

Skills in the pattern-learning roots (`claude`, `burin`) never take part in
Harn's shadowing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.safe_read import CODE_LINK_OUT, is_under, link_problem, resolves_inside

from ..parse_limits import CODE_TOO_DEEP, load_toml
from ..problems import Problem, Severity
from .common import (
    CODE_LAYER_DISABLED,
    CODE_MANIFEST,
    CODE_ROOT_OUTSIDE,
    CODE_SYMLINK_OUTSIDE,
    HARN_LAYERS,
    MAX_SKILL_BYTES,
    PATTERN_LAYERS,
    _read_bounded,
)

if TYPE_CHECKING:
    from ..paths import ProjectPaths
    from .skill_file import Skill


# --------------------------------------------------------------------------
# Discovery (§F.1)


@lean_dataclass
class SkillInventory:
    """Every skill found across the layers, after Harn's shadowing."""

    skills: list[Skill]  # winners (sorted by id) plus entries that do not compete: unloadable, claude/burin
    shadowed: list[Skill]  # losers, each with shadowed_by set
    # Every problem: those found while walking roots (symlinks, disabled
    # layers) followed by each skill's own (also kept on `Skill.problems`).
    problems: list[Problem]

    def get(self, skill_id: str) -> Skill | None:
        for skill in self.skills:
            if skill.id == skill_id and skill.loadable and skill.layer not in PATTERN_LAYERS:
                return skill
        return None


@lean_dataclass(frozen=True)
class _SkillsConfig:
    """The `[skills]` table of the project's harn.toml."""

    lookup_order: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    signer_registry_url: str | None = None
    problem: str | None = None  # why harn.toml was not loaded (not valid TOML, nested too deeply)


def _read_skills_config(project_root: str) -> _SkillsConfig:
    try:
        raw = _read_bounded(os.path.join(project_root, "harn.toml"), MAX_SKILL_BYTES)
    except (OSError, ValueError):
        return _SkillsConfig()
    data, why = load_toml(raw)
    if data is None:
        return _SkillsConfig(problem=f"harn.toml {why}")
    skills = data.get("skills")
    if not isinstance(skills, dict):
        return _SkillsConfig()

    def labels(key: str) -> tuple[str, ...]:
        value = skills.get(key)
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    url = skills.get("signer_registry_url")
    return _SkillsConfig(labels("lookup_order"), labels("disable"), url if isinstance(url, str) else None)


def _registry_dir(url: str | None, project_root: str) -> str | None:
    """Local-path registries only; Harn resolves a relative path against its cwd,
    we use the project root (where `harn run` normally starts)."""
    if not url or not url.strip():
        return None
    url = url.strip()
    if url.startswith(("http://", "https://")):
        return None  # a passive viewer never fetches keys
    if url.startswith("file://"):
        # start-up: urllib.parse (with ipaddress, ~5 ms) only for a registry given as a file:// URL
        from urllib.parse import unquote, urlparse

        url = unquote(urlparse(url).path)
    return url if os.path.isabs(url) else os.path.normpath(os.path.join(project_root, url))


def _layer_order(lookup_order: Sequence[str], disabled: Sequence[str]) -> list[str]:
    """Harn's `build_report` order: explicit labels first, then the default order."""
    order: list[str] = []
    for label in list(lookup_order) + list(HARN_LAYERS):
        if label in HARN_LAYERS and label not in disabled and label not in order:
            order.append(label)
    return order


def _linked_entries(root: str) -> list[str]:
    """Names in `root` that are symlinks (few; listed once more only where a root exists)."""
    try:
        with os.scandir(root) as it:
            return sorted(e.name for e in it if e.is_symlink())
    except OSError:
        return []


def _candidates(root: str) -> list[str]:
    """SKILL.md paths under one root: the root itself, else `<root>/<dir>/SKILL.md` by dir name."""
    single = os.path.join(root, "SKILL.md")
    if os.path.isfile(single):
        return [single]
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []  # missing or unreadable root: Harn lists nothing
    out = []
    for name in names:
        candidate = os.path.join(root, name, "SKILL.md")
        if os.path.isdir(os.path.join(root, name)) and os.path.lexists(candidate):
            out.append(candidate)
    return out


def discover_skills(
    paths: ProjectPaths,
    trusted_signers_dir: str | None = None,
    *,
    lookup_order: Sequence[str] | None = None,
    disabled_layers: Sequence[str] | None = None,
    registry_url: str | None = None,
) -> SkillInventory:
    """Walk every skill root of `paths` (a ProjectPaths) and resolve shadowing.

    `lookup_order`, `disabled_layers` and `registry_url` default to harn.toml
    `[skills] lookup_order / disable / signer_registry_url`. Symlinks are
    followed only while they stay inside the project (project-local roots)
    or inside the layer's own root (user/system/env/manifest roots outside
    the project).
    """
    project_root = paths.project_root
    config = _read_skills_config(project_root)
    if config.problem:
        problems_first = [Problem(os.path.join(project_root, "harn.toml"), 0, CODE_TOO_DEEP if "deeply" in config.problem
                                  else CODE_MANIFEST, config.problem, Severity.ERROR)]
    else:
        problems_first = []
    order_labels = tuple(lookup_order) if lookup_order is not None else config.lookup_order
    disabled = tuple(disabled_layers) if disabled_layers is not None else config.disable
    registry_is_project = registry_url is None  # from the project's own harn.toml
    registry_dir = _registry_dir(registry_url if registry_url is not None else config.signer_registry_url,
                                 project_root)
    signers_dir = trusted_signers_dir if trusted_signers_dir is not None else (paths.trusted_signers_dir or None)

    problems: list[Problem] = problems_first
    if registry_is_project and registry_dir is not None and not resolves_inside(registry_dir, project_root):
        # Project configuration cannot make harn-ls read outside the project.
        problems.append(Problem(os.path.join(project_root, "harn.toml"), 0, CODE_ROOT_OUTSIDE,
                                f"[skills] signer_registry_url {config.signer_registry_url!r} is outside the project; "
                                "ignored (keys are read only from the project or ~/.harn/trusted-signers)",
                                Severity.WARNING))
        registry_dir = None
    for _refused, why in paths.refused_roots:
        problems.append(Problem(os.path.join(project_root, "harn.toml"), 0, CODE_ROOT_OUTSIDE, why, Severity.WARNING))
    parsed_by_layer: dict[str, list[Skill]] = {}
    pattern_skills: list[Skill] = []
    real_project = os.path.realpath(project_root)
    for layer_root in paths.skill_roots:
        layer, root = layer_root.layer, layer_root.path
        if layer in disabled:
            if os.path.isdir(root):
                problems.append(Problem(root, 0, CODE_LAYER_DISABLED,
                                        f"layer `{layer}` is disabled by harn.toml [skills] disable; "
                                        "Harn does not load skills from here", Severity.INFO))
            continue
        if is_under(os.path.abspath(root), os.path.abspath(project_root)):  # a project-local root
            if os.path.lexists(root) and not paths.is_inside_project(root):
                problems.append(Problem(root, 0, CODE_SYMLINK_OUTSIDE,
                                        f"{layer} skill root is a symlink leading outside the project; "
                                        "harn-ls does not follow it (Harn itself would)", Severity.WARNING))
                continue
            base = real_project
        else:
            base = os.path.realpath(root)
        for name in _linked_entries(root):  # linked folders in a root: reported when they leave or loop
            found = link_problem(os.path.join(root, name), base)
            if found is not None:
                problems.append(Problem(os.path.join(root, name), 0,
                                        CODE_SYMLINK_OUTSIDE if found[0] == CODE_LINK_OUT else found[0],
                                        found[1] + " (Harn itself would follow it)", Severity.WARNING))
        for candidate in _candidates(root):
            if link_problem(os.path.dirname(candidate), base) is not None:
                continue  # reported above, by the link's own name
            if not resolves_inside(os.path.dirname(candidate), base) or not resolves_inside(candidate, base):
                problems.append(Problem(candidate, 0, CODE_SYMLINK_OUTSIDE,
                                        f"{candidate} resolves outside {base} through a symlink; "
                                        "harn-ls does not follow it (Harn itself would)", Severity.WARNING))
                continue
            # SkillLayerRoot has no namespace yet; honour one if a caller's root carries it.
            namespace = getattr(layer_root, "namespace", None)
            # start-up: the SKILL.md reader (signatures, ~5 ms) loads once a project has a skill file
            from .skill_file import parse_skill_file

            skill = parse_skill_file(candidate, layer, root, namespace, trusted_signers_dir=signers_dir,
                                     registry_dir=registry_dir, confine_to=base,
                                     registry_is_project=registry_is_project)
            if layer in PATTERN_LAYERS:
                pattern_skills.append(skill)
            else:
                parsed_by_layer.setdefault(layer, []).append(skill)

    shown, shadowed = _resolve_shadowing(parsed_by_layer, pattern_skills, order_labels, disabled)
    for skill in shown + shadowed:
        problems.extend(skill.problems)
    return SkillInventory(shown, shadowed, problems)


def _resolve_shadowing(
    parsed_by_layer: dict[str, list[Skill]], pattern_skills: list[Skill], order_labels: Sequence[str],
    disabled: Sequence[str],
) -> tuple[list[Skill], list[Skill]]:
    """(shown, shadowed): the first loadable skill per id in layer order wins, the rest get `shadowed_by`."""
    winners: dict[str, Skill] = {}
    shadowed: list[Skill] = []
    others: list[Skill] = []
    for layer in _layer_order(order_labels, disabled):
        for skill in parsed_by_layer.get(layer, []):
            if not skill.loadable:
                others.append(skill)  # Harn skipped it, so it shadows nothing
                continue
            incumbent = winners.get(skill.id)
            if incumbent is None:
                winners[skill.id] = skill
            else:
                skill.shadowed_by = incumbent.layer
                shadowed.append(skill)
    shown = sorted(list(winners.values()) + others + pattern_skills,
                   key=lambda s: (s.id, _display_rank(s.layer)))
    return shown, shadowed


def _display_rank(layer: str) -> int:
    order = HARN_LAYERS + PATTERN_LAYERS
    return order.index(layer) if layer in order else len(order)
