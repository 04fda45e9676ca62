"""Frontmatter fields: shapes checked with serde's strictness (§F.2).

A number where a string is expected is an error (Harn then skips the skill);
`null` is accepted for optional strings and for list/map fields (serde_yaml
reads it as empty) but not for `name`/`short`/`description` or booleans.
Exact duplicate keys are errors (serde_yaml rejects them); a hyphenated and an
underscored spelling of the same field is a warning, last one wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harn_ls.util.rust_text import rust_trim

from ..problems import Severity
from .common import (
    CODE_DUPLICATE_KEY,
    CODE_FIELD_TYPE,
    CODE_FIELD_VALUE,
    CODE_MISSING_SHORT,
    CODE_NOT_MAPPING,
    CODE_YAML,
    CODE_YAML_LIMIT,
    MISSING_SHORT_MESSAGE,
)
from .yaml_core import _compose, _HardenedLoader, _YamlLimitError

# --------------------------------------------------------------------------
# Frontmatter parsing (§F.2)


# Canonical field -> kind. Kinds: str (required string, no null), ostr
# (optional string), bool, strlist, hooks, mcp.
_FIELD_KINDS: dict[str, str] = {
    "name": "str",
    "short": "str",
    "description": "str",
    "when_to_use": "ostr",
    "disable_model_invocation": "bool",
    "allowed_tools": "strlist",
    "user_invocable": "bool",
    "paths": "strlist",
    "context": "ostr",
    "agent": "ostr",
    "hooks": "hooks",
    "model": "ostr",
    "effort": "ostr",
    "require_signature": "bool",
    "trusted_signers": "strlist",
    "shell": "ostr",
    "argument_hint": "ostr",
    "trusted_endorsers": "strlist",  # later Harn only
    "targets": "ostr",  # later Harn only
    "mcp": "mcp",  # later Harn only; `mcp_servers` is an alias
}
_ALIASES = {"mcp_servers": "mcp"}
_EFFORT_VALUES = ("low", "medium", "high")
_SHAPE_PREFIX = "SKILL.md frontmatter is well-formed YAML but doesn't match the expected field shapes: "


def _kind_name(value: Any) -> str:
    """Harn's discriminant names for a YAML value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "sequence"
    if isinstance(value, dict):
        return "mapping"
    return "tagged"


def _node_kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "mapping"
    if isinstance(node, SequenceNode):
        return "sequence"
    tag = node.tag.rsplit(":", 1)[-1]
    return {"null": "null", "bool": "bool", "int": "number", "float": "number", "str": "string"}.get(tag, "tagged")


@dataclass
class _Issue:
    """One problem found while validating SKILL.md frontmatter."""

    code: str
    message: str
    line: int | None  # 0-based within the YAML text
    severity: Severity = Severity.ERROR


@dataclass
class _Parsed:
    """SKILL.md frontmatter as validated: the fields, unknown keys and issues."""

    fields: dict[str, Any] = field(default_factory=dict)
    unknown: list[tuple[str, int]] = field(default_factory=list)  # (key as written, 0-based line)
    errors: list[_Issue] = field(default_factory=list)  # Harn would reject the file
    notes: list[_Issue] = field(default_factory=list)  # warnings/info; Harn still loads it
    key_lines: dict[str, int] = field(default_factory=dict)


def _key_text(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return str(node.value)
    return f"<{_node_kind(node)} key>"


def _check_duplicates(node: Node, issues: list[_Issue]) -> None:
    """serde_yaml refuses duplicate keys at any depth; PyYAML keeps the last."""
    stack = [node]
    seen_nodes: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen_nodes:
            continue
        seen_nodes.add(id(current))
        if isinstance(current, MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, value_node in current.value:
                if isinstance(key_node, ScalarNode):
                    ident = (key_node.tag, key_node.value)
                    if ident in seen:
                        issues.append(
                            _Issue(
                                CODE_DUPLICATE_KEY,
                                f"invalid SKILL.md YAML: duplicate key `{key_node.value}`",
                                key_node.start_mark.line,
                            )
                        )
                    seen.add(ident)
                stack.append(key_node)
                stack.append(value_node)
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)


def _check_field(name: str, raw_key: str, value: Any) -> tuple[Any, str | None]:
    """(normalised value, error text or None) for one recognised field."""
    kind = _FIELD_KINDS[name]
    shown = f"`{raw_key.strip()}`"
    if kind in ("str", "ostr"):
        if isinstance(value, str) or (value is None and kind == "ostr"):
            return value, None
        return None, f"{shown} must be a string, got {_kind_name(value)}"
    if kind == "bool":
        if isinstance(value, bool):
            return value, None
        return None, f"{shown} must be true or false, got {_kind_name(value)}"
    if kind == "strlist":
        if value is None:
            return [], None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return list(value), None
        if isinstance(value, list):
            bad = next(item for item in value if not isinstance(item, str))
            return None, f"{shown} must be a list of strings, got an item of type {_kind_name(bad)}"
        return None, f"{shown} must be a list of strings, got {_kind_name(value)}"
    if kind == "hooks":
        if value is None:
            return {}, None
        if isinstance(value, list):
            # Harn flattens `[{event|name, command|run}]` and silently drops
            # entries without both strings; `event` shadows `name` even when
            # it is not a string.
            flat: dict[str, str] = {}
            for entry in value:
                if not isinstance(entry, dict):
                    continue
                event = entry["event"] if "event" in entry else entry.get("name")
                command = entry["command"] if "command" in entry else entry.get("run")
                if isinstance(event, str) and isinstance(command, str):
                    flat[event] = command
            return flat, None
        if isinstance(value, dict):
            for key, command in value.items():
                if not isinstance(key, str) or not isinstance(command, str):
                    return None, f"{shown} must map event names to command strings"
            return dict(value), None
        return None, f"{shown} must be a mapping or a list of hooks, got {_kind_name(value)}"
    if kind == "mcp":
        if value is None:
            return [], None
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return list(value), None
        return None, f"{shown} must be a list of server objects"
    raise AssertionError(kind)


def _mapping_root(yaml_text: str, result: _Parsed) -> tuple[MappingNode, _HardenedLoader] | None:
    """The frontmatter's top-level mapping and its loader, or None (an error in `result`, or no fields)."""
    try:
        root, loader = _compose(yaml_text)
    except _YamlLimitError as exc:
        result.errors.append(_Issue(CODE_YAML_LIMIT, f"invalid SKILL.md YAML: {exc}", exc.line))
        return None
    except RecursionError:
        result.errors.append(_Issue(CODE_YAML_LIMIT, "invalid SKILL.md YAML: nesting too deep", None))
        return None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        result.errors.append(_Issue(CODE_YAML, f"invalid SKILL.md YAML: {problem}", mark.line if mark else None))
        return None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        result.errors.append(_Issue(CODE_YAML, f"invalid SKILL.md YAML: {exc}", None))
        return None

    # Comment-only YAML is `null`: Harn returns a default manifest, and (in
    # that early return) does not demand `short`.
    if root is None or (isinstance(root, ScalarNode) and root.tag == "tag:yaml.org,2002:null"):
        return None
    if not isinstance(root, MappingNode) or root.tag != "tag:yaml.org,2002:map":
        # An explicitly tagged mapping (`!thing {...}`, `!!set`) is a Tagged value to serde_yaml.
        kind = _node_kind(root) if not isinstance(root, MappingNode) else "tagged"
        result.errors.append(
            _Issue(
                CODE_NOT_MAPPING,
                f'SKILL.md frontmatter must be a YAML mapping, got "{kind}"',
                root.start_mark.line,
            )
        )
        return None
    return root, loader


def _parse_detailed(yaml_text: str) -> _Parsed:
    result = _Parsed()
    # Harn: an empty (whitespace-only) frontmatter is a default manifest.
    if not rust_trim(yaml_text):
        return result
    composed = _mapping_root(yaml_text, result)
    if composed is None:
        return result
    root, loader = composed

    _check_duplicates(root, result.errors)

    seen_canonical: dict[str, str] = {}
    for key_node, value_node in root.value:
        line = key_node.start_mark.line
        if not (isinstance(key_node, ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"):
            # Later Harn reports non-string keys as unknown instead of failing.
            result.unknown.append((_key_text(key_node), line))
            continue
        raw_key = str(key_node.value)
        canonical = rust_trim(raw_key).replace("-", "_")
        canonical = _ALIASES.get(canonical, canonical)
        if canonical not in _FIELD_KINDS:
            result.unknown.append((raw_key, line))
            continue
        if canonical in seen_canonical and seen_canonical[canonical] != raw_key:
            result.notes.append(
                _Issue(
                    CODE_DUPLICATE_KEY,
                    f"`{seen_canonical[canonical]}` and `{raw_key}` are the same field; Harn keeps the last one",
                    line,
                    Severity.WARNING,
                )
            )
        seen_canonical[canonical] = raw_key
        try:
            value = loader.construct_object(value_node, deep=True)
        except RecursionError:
            result.errors.append(_Issue(CODE_YAML_LIMIT, "invalid SKILL.md YAML: nesting too deep", line))
            continue
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            result.errors.append(
                _Issue(CODE_YAML, f"invalid SKILL.md YAML: {exc.problem or exc}", mark.line if mark else line)
            )
            continue
        except Exception as exc:  # noqa: BLE001 — PyYAML's constructors raise ValueError/AttributeError
            # on hostile explicit tags (`!!int abc`, `!!timestamp x`, 5000-digit ints); never let it escape.
            result.errors.append(_Issue(CODE_YAML, f"invalid SKILL.md YAML: cannot build value: {exc}", line))
            continue
        normalised, error = _check_field(canonical, raw_key, value)
        result.key_lines[canonical] = line
        if error:
            result.fields.pop(canonical, None)
            result.errors.append(_Issue(CODE_FIELD_TYPE, _SHAPE_PREFIX + error, line))
            continue
        result.fields[canonical] = normalised
        if canonical == "effort" and isinstance(normalised, str) and normalised not in _EFFORT_VALUES:
            result.notes.append(
                _Issue(
                    CODE_FIELD_VALUE,
                    f"`effort` is usually low, medium or high; Harn passes {normalised!r} through unchanged",
                    line,
                    Severity.INFO,
                )
            )

    short = result.fields.get("short")
    short_had_type_error = "short" in result.key_lines and "short" not in result.fields
    if not short_had_type_error and not (isinstance(short, str) and rust_trim(short)):
        result.errors.append(_Issue(CODE_MISSING_SHORT, MISSING_SHORT_MESSAGE, result.key_lines.get("short")))
    return result


def parse_frontmatter(yaml_text: str) -> tuple[dict[str, Any], list[str], list[str]]:
    """(fields by canonical underscore name, unknown keys as written, errors).

    `fields` holds only the recognised keys present in the file, with
    `hooks` flattened to {event: command} and `mcp-servers` stored as `mcp`.
    Any entry in `errors` means Harn's loader would skip the file.
    Non-string keys are unknown fields (later Harn), not errors.
    """
    parsed = _parse_detailed(yaml_text)
    return parsed.fields, [key for key, _ in parsed.unknown], [issue.message for issue in parsed.errors]
