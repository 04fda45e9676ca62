"""Typed settings (`harnState.*`) from initializationOptions and workspace/configuration.

The schema is the VS Code extension's `contributes.configuration` (vscode-extension/package.json):
every field here carries the scope and the restriction package.json gives it, and
tests/unit/test_settings_schema.py fails when a name, type, default, scope or restriction differs
(or when the README or an editor's docs say otherwise).

Scopes decide where a value may come from (VS Code's meaning, which the server keeps for every
client): a setting of `resource` or `machine-overridable` scope may differ per workspace folder, so
the server asks for it once per folder (a ConfigurationItem with that folder's scopeUri) and each
project uses its folder's value; an `application` or `machine` setting is the user's, taken from the
unscoped answer only, never from a folder's. A restricted setting (it names a path or a program) is
taken from the unscoped answer only in an untrusted workspace: a cloned repository's folder settings
must not choose what runs or where Accept writes.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs

from harn_ls.formats.paths import LOCATION_VARS
from harn_ls.util.message_text import quote, quote_json

# Scopes a workspace folder may set (VS Code: "resource", "language-overridable", "machine-overridable").
FOLDER_SCOPES = frozenset({"resource", "language-overridable", "machine-overridable"})


def setting(default: Any = attrs.NOTHING, *, scope: str, restricted: bool = False, factory: Any = None) -> Any:
    """A settings field with its package.json scope and restriction (read by `scopes` and the schema test)."""
    return attrs.field(default=attrs.Factory(factory) if factory is not None else default,
                       metadata={"scope": scope, "restricted": restricted})


@attrs.define
class ProbeSettings:
    timeoutSeconds: float = setting(30.0, scope="resource")
    storeFacts: bool = setting(True, scope="resource")


@attrs.define
class FactSettings:
    minConfidence: float = setting(0.0, scope="resource")


@attrs.define
class CodeLensSettings:
    facts: bool = setting(True, scope="resource")
    checkpoints: bool = setting(True, scope="resource")


@attrs.define
class TranscriptSettings:
    showPrivate: bool = setting(False, scope="resource")


@attrs.define
class HitlSettings:
    # the reviewer Harn records for answers and `harn orchestrator resume` (empty: the OS user name);
    # the user's own name, so never a folder's (a cloned repository could name someone else)
    reviewer: str = setting("", scope="application")


@attrs.define
class Settings:
    harnPath: str = setting("harn", scope="machine-overridable", restricted=True)
    skillRoot: str = setting(".claude/skills", scope="resource", restricted=True)
    probes: ProbeSettings = attrs.Factory(ProbeSettings)
    facts: FactSettings = attrs.Factory(FactSettings)
    codeLens: CodeLensSettings = attrs.Factory(CodeLensSettings)
    transcripts: TranscriptSettings = attrs.Factory(TranscriptSettings)
    hitl: HitlSettings = attrs.Factory(HitlSettings)
    # Harn's location variables as Harn sees them when they are not in harn-ls's own environment
    # (`{"HARN_EVENT_LOG_SQLITE_PATH": "state/events.sqlite"}`): only the names in paths.LOCATION_VARS.
    # VS Code applies a workspace's value only when the workspace is trusted; the server confines the
    # values of an untrusted workspace to the project.
    harnEnv: dict[str, str] = setting(scope="resource", restricted=True, factory=dict)
    # for clients that say nothing about workspace trust; the server's own (no client schema carries it)
    trustedByDefault: bool = setting(True, scope="application")
    # Harn project folders to serve, relative to the workspace folder (or absolute): replaces the search
    # below it (model/project_discovery.py). Names paths, so an untrusted workspace keeps them inside the folder.
    projectRoots: list[str] = setting(scope="resource", restricted=True, factory=list)


def leaves(cls: type = Settings, prefix: str = "") -> dict[str, attrs.Attribute]:
    """Every setting by its dotted name (`probes.timeoutSeconds`) -> its field (metadata: scope, restricted)."""
    out: dict[str, attrs.Attribute] = {}
    defaults = cls()
    for field in attrs.fields(cls):
        group = type(getattr(defaults, field.name))
        if attrs.has(group):
            out.update(leaves(group, f"{prefix}{field.name}."))
        else:
            out[f"{prefix}{field.name}"] = field
    return out


LEAVES = leaves()


_converter = cattrs.Converter(forbid_extra_keys=False)


def _string_list(value: Any, _type: Any) -> list[str]:
    # cattrs would turn a string into a list of its characters, and a number into a string
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return list(value)


_converter.register_structure_hook_func(lambda t: t == list[str], _string_list)


def _expand_dotted(raw: dict) -> dict:
    """Accept both nested objects and VS Code style dotted keys (`probes.timeoutSeconds`)."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        target = out
        parts = str(key).split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                break
        else:
            if isinstance(value, dict) and isinstance(target.get(parts[-1]), dict):
                target[parts[-1]].update(value)
            else:
                target[parts[-1]] = value
    return out


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Merge `raw` over `base`; returns the settings and a list of ignored bad values."""
    base_dict = _converter.unstructure(base or Settings())
    errors: list[str] = []
    if not isinstance(raw, dict):
        return _converter.structure(base_dict, Settings), errors
    raw = _expand_dotted(raw)
    for key, value in raw.items():
        if key not in base_dict:
            continue
        if key == "harnEnv":  # replaced as a whole: a variable left out of the new object is unset
            base_dict = {**base_dict, key: _harn_env(value, errors)}
        elif isinstance(base_dict[key], dict) and isinstance(value, dict):
            for sub, v in value.items():
                if sub in base_dict[key]:
                    candidate = {**base_dict, key: {**base_dict[key], sub: v}}
                    try:
                        _converter.structure(candidate, Settings)
                        base_dict = candidate
                    except Exception:
                        errors.append(f"harnState.{key}.{sub}: ignored invalid value {quote_json(v)}")
        elif not isinstance(base_dict[key], dict):
            candidate = {**base_dict, key: value}
            try:
                _converter.structure(candidate, Settings)
                base_dict = candidate
            except Exception:
                errors.append(f"harnState.{key}: ignored invalid value {quote_json(value)}")
    return _converter.structure(base_dict, Settings), errors


def _harn_env(value: Any, errors: list[str]) -> dict[str, str]:
    """Only Harn's location variables, with string values; anything else is named and ignored."""
    if not isinstance(value, dict):
        errors.append(f"harnState.harnEnv: ignored invalid value {quote_json(value)} (an object of variables)")
        return {}
    out = {}
    for k, v in value.items():
        if k not in LOCATION_VARS:
            errors.append(f"harnState.harnEnv.{quote(k)}: ignored (only {', '.join(LOCATION_VARS)})")
        elif not isinstance(v, str) or "\x00" in v:
            errors.append(f"harnState.harnEnv.{k}: ignored invalid value {quote_json(v)}")
        else:
            out[k] = v
    return out


def from_initialization_options(options: Any) -> tuple[Settings, bool | None, list[str]]:
    """`{settings: {harnState: {...}}, workspaceTrusted}` or `{harnState: {...}}` or the bare object."""
    if not isinstance(options, dict):
        return Settings(), None, []
    trusted = options.get("workspaceTrusted")
    raw = options.get("settings", options)
    if isinstance(raw, dict) and "harnState" in raw:
        raw = raw["harnState"]
    settings, errors = parse_settings(raw)
    return settings, (trusted if isinstance(trusted, bool) else None), errors


def folder_part(raw: Any, trusted: bool) -> dict[str, Any]:
    """What a workspace folder's answer (a ConfigurationItem with its scopeUri) may set: settings of a
    folder scope only (an `application` / `machine` one is the user's: `hitl.reviewer` from a cloned
    repository would sign answers with someone else's name), and in an untrusted workspace none that
    is restricted. The rest of the answer is dropped without a word: VS Code answers every setting for
    every scope, the user's value included."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in _expand_dotted(raw).items():
        if key in LEAVES:
            if _folder_may_set(key, trusted):
                out[key] = value
        elif isinstance(value, dict):
            kept = {sub: v for sub, v in value.items() if f"{key}.{sub}" in LEAVES and _folder_may_set(f"{key}.{sub}", trusted)}
            if kept:
                out[key] = kept
    return out


def _folder_may_set(name: str, trusted: bool) -> bool:
    meta = LEAVES[name].metadata
    return meta["scope"] in FOLDER_SCOPES and (trusted or not meta["restricted"])


def folder_settings(raw: Any, workspace: Settings, trusted: bool) -> tuple[Settings, list[str]]:
    """A workspace folder's settings: its answer's folder-scoped part over the workspace's (unscoped) settings."""
    return parse_settings(folder_part(raw, trusted), workspace)
