"""Typed settings (`harnState.*`) from initializationOptions and workspace/configuration."""

from __future__ import annotations

from typing import Any

import attrs
import cattrs

from harn_ls.formats.paths import LOCATION_VARS


@attrs.define
class ProbeSettings:
    timeoutSeconds: float = 30.0
    storeFacts: bool = True


@attrs.define
class FactSettings:
    minConfidence: float = 0.0


@attrs.define
class CodeLensSettings:
    facts: bool = True
    checkpoints: bool = True


@attrs.define
class TranscriptSettings:
    showPrivate: bool = False


@attrs.define
class HitlSettings:
    reviewer: str = ""  # the reviewer Harn records for answers and `harn orchestrator resume` (empty: the OS user name)


@attrs.define
class Settings:
    harnPath: str = "harn"
    skillRoot: str = ".claude/skills"
    probes: ProbeSettings = attrs.Factory(ProbeSettings)
    facts: FactSettings = attrs.Factory(FactSettings)
    codeLens: CodeLensSettings = attrs.Factory(CodeLensSettings)
    transcripts: TranscriptSettings = attrs.Factory(TranscriptSettings)
    hitl: HitlSettings = attrs.Factory(HitlSettings)
    # Harn's location variables as Harn sees them when they are not in harn-ls's own environment
    # (`{"HARN_EVENT_LOG_SQLITE_PATH": "state/events.sqlite"}`): only the names in paths.LOCATION_VARS.
    # VS Code applies a workspace's value only when the workspace is trusted; the server confines the
    # values of an untrusted workspace to the project.
    harnEnv: dict[str, str] = attrs.Factory(dict)
    trustedByDefault: bool = True  # for clients that say nothing about workspace trust
    # Harn project folders to serve, relative to the workspace folder (or absolute): replaces the search
    # below it (model/project_discovery.py). Names paths, so an untrusted workspace keeps them inside the folder.
    projectRoots: list[str] = attrs.Factory(list)


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
                        errors.append(f"harnState.{key}.{sub}: ignored invalid value {v!r}")
        elif not isinstance(base_dict[key], dict):
            candidate = {**base_dict, key: value}
            try:
                _converter.structure(candidate, Settings)
                base_dict = candidate
            except Exception:
                errors.append(f"harnState.{key}: ignored invalid value {value!r}")
    return _converter.structure(base_dict, Settings), errors


def _harn_env(value: Any, errors: list[str]) -> dict[str, str]:
    """Only Harn's location variables, with string values; anything else is named and ignored."""
    if not isinstance(value, dict):
        errors.append(f"harnState.harnEnv: ignored invalid value {value!r} (an object of variables)")
        return {}
    out = {}
    for k, v in value.items():
        if k not in LOCATION_VARS:
            errors.append(f"harnState.harnEnv.{k}: ignored (only {', '.join(LOCATION_VARS)})")
        elif not isinstance(v, str) or "\x00" in v:
            errors.append(f"harnState.harnEnv.{k}: ignored invalid value {v!r}")
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
