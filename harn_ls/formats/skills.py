"""SKILL.md files: frontmatter, discovery across layers, signatures (harn-formats §F, §E.3).

Reading never raises on bad data: every defect becomes a `Problem` on the
`Skill` (or on the `SkillInventory` for things found while walking roots).
The only writer here is `render_learned_skill`, which returns text for the
accept action to write.

Decisions where the spec is silent (see also the docstrings):

* YAML is parsed with PyYAML but with YAML 1.2 core-schema scalars, because
  Harn uses serde_yaml: `yes`/`no`/`on`/`off` and dates stay strings, `0777`
  is decimal, `<<` is an ordinary key.
* Field shapes follow serde's strictness: a number where a string is
  expected is an error (Harn then skips the skill); `null` is accepted for
  optional strings and for list/map fields (serde_yaml reads it as empty)
  but not for `name`/`short`/`description` or booleans.
* Exact duplicate keys are errors (serde_yaml rejects them); a hyphenated
  and an underscored spelling of the same field is a warning, last one wins.
* Skills in the pattern-learning roots (`claude`, `burin`) never take part in
  Harn's shadowing and are judged leniently: Harn's own loader never reads
  them, so what it would reject there is INFO.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from .pattern_learning import slugify  # Harn's one slug rule (skill and tool names)
from .pattern_learning import yaml_scalar as pl_yaml_scalar  # Harn's SKILL.md field quoting
from .problems import Problem, Severity

# --------------------------------------------------------------------------
# Constants

MAX_SKILL_BYTES = 1024 * 1024  # refuse to parse bigger SKILL.md files
MAX_SIG_BYTES = 64 * 1024  # a real .sig is ~375 bytes
MAX_KEY_BYTES = 16 * 1024  # a PEM SPKI Ed25519 key is 113 bytes
MAX_YAML_DEPTH = 100  # serde_yaml's own recursion limit is 128
MAX_YAML_NODES = 20_000  # nodes, also after alias expansion (billion-laughs guard); real frontmatter has ~50

SIG_SCHEMA = "harn-skill-sig/v1"

#: Harn loader layers in default priority order (§F.1). `cli` and `host` have
#: no on-disk roots we can see but are valid labels in harn.toml.
HARN_LAYERS = ("cli", "env", "project", "manifest", "user", "package", "system", "host")
#: Roots pattern learning writes/reads (§E.3) — not Harn loader layers.
PATTERN_LAYERS = ("claude", "burin")

STATUS_VERIFIED = "verified"
STATUS_MISSING_SIGNATURE = "missing_signature"
STATUS_INVALID_SIGNATURE = "invalid_signature"
STATUS_MISSING_SIGNER = "missing_signer"
STATUS_UNTRUSTED_SIGNER = "untrusted_signer"

CODE_UNREADABLE = "HL-SKILL-001"
CODE_INVALID_UTF8 = "HL-SKILL-002"
CODE_TOO_LARGE = "HL-SKILL-003"
CODE_YAML = "HL-SKILL-004"
CODE_NOT_MAPPING = "HL-SKILL-005"
CODE_FIELD_TYPE = "HL-SKILL-006"
CODE_MISSING_SHORT = "HL-SKILL-007"
CODE_UNKNOWN_FIELD = "HL-SKILL-008"
CODE_SIGNATURE_INVALID = "HL-SKILL-009"
CODE_SIGNER = "HL-SKILL-010"
CODE_SIGNATURE_REQUIRED = "HL-SKILL-011"
CODE_SYMLINK_OUTSIDE = "HL-SKILL-012"
CODE_YAML_LIMIT = "HL-SKILL-013"
CODE_DUPLICATE_KEY = "HL-SKILL-014"
CODE_NO_FRONTMATTER = "HL-SKILL-015"
CODE_LAYER_DISABLED = "HL-SKILL-016"
CODE_FIELD_VALUE = "HL-SKILL-017"
CODE_ROOT_OUTSIDE = "HL-SKILL-018"  # a root or registry the project config puts outside the project: ignored

MISSING_SHORT_MESSAGE = "SKILL.md frontmatter requires a non-empty `short` field"

# Rust's `str::trim` strips Unicode White_Space; Python's strip() also strips
# \x1c-\x1f, so spell the set out to trim exactly like Harn.
_RUST_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _rust_trim(text: str) -> str:
    return text.strip(_RUST_WS)


# --------------------------------------------------------------------------
# Splitting (§F.2, later Harn version)


@dataclass(frozen=True)
class _Split:
    frontmatter: str | None
    body: str
    yaml_line: int  # 1-based file line of the first YAML line (0 = no frontmatter)
    body_line: int  # 1-based file line where the body starts


def _lines_with_ends(text: str) -> list[str]:
    # Split on "\n" only, like Rust's str::lines(); str.splitlines() would also
    # break on \x0b, \x1c, U+2028 ... and disagree with Harn.
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _split(text: str) -> _Split:
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _lines_with_ends(text)
    offset = 0
    opener = -1
    for index, line in enumerate(lines):
        stripped = _rust_trim(line)
        if opener < 0:
            if not stripped:
                offset += len(line)
                continue
            if stripped != "---":
                return _Split(None, text, 0, 1)
            opener = index
            offset += len(line)
            fm_start = offset
            continue
        if stripped == "---":
            return _Split(text[fm_start:offset], text[offset + len(line):], opener + 2, index + 2)
        offset += len(line)
    # No opener at all (blank file) or unterminated: the whole file is body.
    return _Split(None, text, 0, 1)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter YAML or None, body) exactly as Harn's later splitter.

    An optional BOM and leading blank lines are skipped; the first non-blank
    line must be `---` after trimming, the next such line closes. CRLF files
    keep their `\\r\\n` inside both parts. No opener, or no closer: `None` and
    the whole (BOM-less) text as body. `---\\n---\\n` gives `""`, not None.
    """
    split = _split(text)
    return split.frontmatter, split.body


# --------------------------------------------------------------------------
# Hardened YAML loading


class _YamlLimitError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line  # 0-based within the YAML text


class _CoreResolver(BaseResolver):
    """YAML 1.2 core schema, which is what serde_yaml (Harn) resolves."""


_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


class _LimitedComposer(Composer):
    """Composer that bounds nesting depth and node count while building."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent, index):  # type: ignore[override]
        event = self.peek_event()
        if not isinstance(event, AliasEvent):
            self._nodes += 1
            if self._nodes > MAX_YAML_NODES:
                raise _YamlLimitError("YAML frontmatter has too many nodes", event.start_mark.line)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _YamlLimitError(
                    f"YAML frontmatter nests deeper than {MAX_YAML_DEPTH} levels", event.start_mark.line
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _LimitedScanner(Scanner):
    """Scanner that refuses deep `[`/`{` nesting before the composer sees it.

    PyYAML's scanner keeps one pending simple key per flow level and rescans
    them for every token, so megabytes of `[[[[` cost quadratic time long
    before the composer's depth check would run.
    """

    def fetch_flow_collection_start(self, TokenClass):  # type: ignore[override]
        if self.flow_level >= MAX_YAML_DEPTH:
            raise _YamlLimitError(
                f"YAML frontmatter nests deeper than {MAX_YAML_DEPTH} levels", self.get_mark().line
            )
        super().fetch_flow_collection_start(TokenClass)


class _HardenedLoader(Reader, _LimitedScanner, Parser, _LimitedComposer, SafeConstructor, _CoreResolver):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        _LimitedScanner.__init__(self)
        Parser.__init__(self)
        _LimitedComposer.__init__(self)
        SafeConstructor.__init__(self)
        _CoreResolver.__init__(self)


def _construct_core_int(loader: SafeConstructor, node: ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    try:
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)
    except ValueError:  # explicit `!!int` with a YAML 1.1 spelling
        return SafeConstructor.construct_yaml_int(loader, node)


def _construct_core_float(loader: SafeConstructor, node: ScalarNode) -> float:
    text = str(loader.construct_scalar(node))
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return float("-inf") if lowered.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    try:
        return float(text)
    except ValueError:
        return SafeConstructor.construct_yaml_float(loader, node)


_HardenedLoader.add_constructor("tag:yaml.org,2002:int", _construct_core_int)
_HardenedLoader.add_constructor("tag:yaml.org,2002:float", _construct_core_float)


def _check_expansion(root: Node) -> None:
    """Reject alias graphs that expand past MAX_YAML_NODES or loop.

    PyYAML shares aliased nodes, so loading a billion-laughs file is cheap,
    but anything that walks the result (type checks, rendering, JSON) would
    expand it. Count the expanded size without expanding: memoised DFS.
    """
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            total = 1
            for child in _children(node):
                total += sizes[id(child)]
                if total > MAX_YAML_NODES:
                    raise _YamlLimitError(
                        "YAML aliases expand to more than "
                        f"{MAX_YAML_NODES} nodes (alias bomb?)",
                        node.start_mark.line,
                    )
            sizes[key] = total
            in_progress.discard(key)
            continue
        if key in sizes:
            continue
        if key in in_progress:
            raise _YamlLimitError("YAML alias refers to itself (recursive structure)", node.start_mark.line)
        in_progress.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in in_progress:
                raise _YamlLimitError("YAML alias refers to itself (recursive structure)", child.start_mark.line)
            if child_key not in sizes:
                stack.append((child, False))


def _children(node: Node) -> Iterable[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return ()


def _compose(yaml_text: str) -> tuple[Node | None, _HardenedLoader]:
    loader = _HardenedLoader(yaml_text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is not None:
        _check_expansion(node)
    return node, loader


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
    code: str
    message: str
    line: int | None  # 0-based within the YAML text
    severity: Severity = Severity.ERROR


@dataclass
class _Parsed:
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
    if kind == "str":
        if isinstance(value, str):
            return value, None
        return None, f"{shown} must be a string, got {_kind_name(value)}"
    if kind == "ostr":
        if value is None or isinstance(value, str):
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


def _parse_detailed(yaml_text: str) -> _Parsed:
    result = _Parsed()
    # Harn: an empty (whitespace-only) frontmatter is a default manifest.
    if not _rust_trim(yaml_text):
        return result
    try:
        root, loader = _compose(yaml_text)
    except _YamlLimitError as exc:
        result.errors.append(_Issue(CODE_YAML_LIMIT, f"invalid SKILL.md YAML: {exc}", exc.line))
        return result
    except RecursionError:
        result.errors.append(_Issue(CODE_YAML_LIMIT, "invalid SKILL.md YAML: nesting too deep", None))
        return result
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        result.errors.append(_Issue(CODE_YAML, f"invalid SKILL.md YAML: {problem}", mark.line if mark else None))
        return result
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        result.errors.append(_Issue(CODE_YAML, f"invalid SKILL.md YAML: {exc}", None))
        return result

    # Comment-only YAML is `null`: Harn returns a default manifest, and (in
    # that early return) does not demand `short`.
    if root is None or (isinstance(root, ScalarNode) and root.tag == "tag:yaml.org,2002:null"):
        return result
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
        return result

    _check_duplicates(root, result.errors)

    seen_canonical: dict[str, str] = {}
    for key_node, value_node in root.value:
        line = key_node.start_mark.line
        if not (isinstance(key_node, ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"):
            # Later Harn reports non-string keys as unknown instead of failing.
            result.unknown.append((_key_text(key_node), line))
            continue
        raw_key = str(key_node.value)
        canonical = _rust_trim(raw_key).replace("-", "_")
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
    if not short_had_type_error and not (isinstance(short, str) and _rust_trim(short)):
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


# --------------------------------------------------------------------------
# Signatures (§F.3)


@dataclass(frozen=True)
class SignatureStatus:
    status: str  # verified | missing_signature | invalid_signature | missing_signer | untrusted_signer
    signer_fingerprint: str | None = None
    error: str | None = None
    signed_at: str | None = None
    signed: bool = False  # Harn's provenance `signed` flag (hash matched, signer named)
    signature_path: str = ""
    # Where the signer's key came from: "user" (~/.harn/trusted-signers), "project" (a signer registry the
    # project's own harn.toml names: the repository vouches for itself), "registry" (a registry the user chose).
    key_source: str = ""

    @property
    def trusted(self) -> bool:
        """Verified against a key the user trusts (a key the project ships proves nothing)."""
        return self.status == STATUS_VERIFIED and self.key_source != "project"

    @property
    def label(self) -> str:
        """What to show: never "verified" for a key that came with the repository itself."""
        if self.status == STATUS_VERIFIED and self.key_source == "project":
            return "signed by a key this project ships"
        return self.status.replace("_", " ")


_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_ENVELOPE_FIELDS = ("schema", "signed_at", "signer_fingerprint", "ed25519_sig_base64", "skill_sha256")


def fingerprint_for_public_key(raw_key: bytes) -> str:
    """Harn's signer fingerprint: hex SHA-256 of the raw 32-byte Ed25519 key."""
    return hashlib.sha256(raw_key).hexdigest()


class _TooLarge(ValueError):
    pass


def _read_bounded(path: str, limit: int) -> bytes:
    """Read a regular file up to `limit` bytes; raise OSError/ValueError otherwise.

    Through safe_read: the open itself never blocks (a FIFO swapped in after a stat) and the type is
    checked on the open file. Confinement is the caller's (`confine_to`)."""
    from harn_ls.safe_read import ReadRefused, read_confined

    try:
        return read_confined(path, None, limit)
    except ReadRefused as exc:
        if exc.kind == "too-large":
            raise _TooLarge(f"larger than {limit} bytes") from None
        raise ValueError("not a regular file") from None


def _load_envelope(raw: bytes) -> dict[str, str]:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out and key in _ENVELOPE_FIELDS:
                raise ValueError(f"duplicate field `{key}`")  # serde rejects these
            out[key] = value
        return out

    value = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicates)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    for name in _ENVELOPE_FIELDS:
        if name not in value:
            raise ValueError(f"missing field `{name}`")
        if not isinstance(value[name], str):
            raise ValueError(f"field `{name}` must be a string")
    return value


def _load_public_key(fingerprint: str, dirs: Sequence[str]):
    """(key or None, error or None). A key file that does not parse is an error."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    for directory in dirs:
        candidate = os.path.join(directory, fingerprint + ".pub")
        if not os.path.isfile(candidate):
            continue
        try:
            key = load_pem_public_key(_read_bounded(candidate, MAX_KEY_BYTES))
        except (OSError, ValueError, TypeError) as exc:
            return None, f"failed to parse {candidate}: {exc}"
        if not isinstance(key, Ed25519PublicKey):
            return None, f"failed to parse {candidate}: not an Ed25519 public key"
        return (key, directory), None
    return None, None


def verify_signature(
    skill_bytes: bytes,
    sig_path: str,
    trusted_signers_dir: str | None,
    trusted_signers: Sequence[str] = (),
    *,
    registry_dir: str | None = None,
    registry_is_project: bool = True,
) -> SignatureStatus:
    """Harn's `verify_skill`, same check order and statuses (§F.3).

    `registry_is_project`: the registry was named by the project's own harn.toml, so a signature that
    verifies only against one of its keys gets `key_source="project"` (not trusted, labelled so).

    `trusted_signers` is the skill's own allowlist (empty = any trusted key).
    `registry_dir` is a local-path signer registry (`signer_registry_url`
    that is a path or file:// URL); HTTP registries are never fetched.
    """
    from cryptography.exceptions import InvalidSignature

    try:
        raw = _read_bounded(sig_path, MAX_SIG_BYTES)
    except FileNotFoundError:
        return SignatureStatus(STATUS_MISSING_SIGNATURE, signature_path=sig_path)
    except (OSError, ValueError) as exc:
        return SignatureStatus(
            STATUS_INVALID_SIGNATURE, error=f"failed to read signature {sig_path}: {exc}", signature_path=sig_path
        )
    try:
        envelope = _load_envelope(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return SignatureStatus(
            STATUS_INVALID_SIGNATURE,
            error=f"{sig_path} is not valid {SIG_SCHEMA} JSON: {exc}",
            signature_path=sig_path,
        )
    fingerprint = envelope["signer_fingerprint"]
    signed_at = envelope["signed_at"]

    key_source = ""

    def status(code: str, error: str | None = None, signed: bool = False) -> SignatureStatus:
        return SignatureStatus(code, fingerprint, error, signed_at, signed, sig_path, key_source)

    if envelope["schema"] != SIG_SCHEMA:
        return status(STATUS_INVALID_SIGNATURE, f"{sig_path} declares unsupported schema {envelope['schema']}")
    if envelope["skill_sha256"] != hashlib.sha256(skill_bytes).hexdigest():
        return status(
            STATUS_INVALID_SIGNATURE,
            f"{sig_path} does not match the current contents of the skill (modified after signing)",
        )
    # The fingerprint becomes a file name: refuse anything but 64 hex digits
    # so a hostile .sig cannot point us at ../../somewhere.pub.
    dirs = [d for d in (trusted_signers_dir, registry_dir) if d]
    key = None
    if _HEX64.match(fingerprint):
        found, key_error = _load_public_key(fingerprint, dirs)
        if found is not None:
            key, key_dir = found
            key_source = "user" if key_dir == trusted_signers_dir else ("project" if registry_is_project else "registry")
    else:
        key_error = None
    if key_error:
        return status(STATUS_INVALID_SIGNATURE, key_error, signed=True)
    if key is None:
        where = trusted_signers_dir or "the trusted-signers directory"
        return status(
            STATUS_MISSING_SIGNER,
            f"signed by {fingerprint}, but {fingerprint}.pub is not present in {where}",
            signed=True,
        )
    try:
        signature = base64.b64decode(envelope["ed25519_sig_base64"].encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        return status(STATUS_INVALID_SIGNATURE, f"signature is not valid base64: {exc}", signed=True)
    if len(signature) != 64:
        return status(
            STATUS_INVALID_SIGNATURE,
            f"signature is not valid Ed25519 bytes: expected 64 bytes, got {len(signature)}",
            signed=True,
        )
    try:
        key.verify(signature, skill_bytes)
    except InvalidSignature:
        return status(STATUS_INVALID_SIGNATURE, f"{sig_path} failed Ed25519 verification", signed=True)
    allowed = set(trusted_signers)
    if allowed and fingerprint not in allowed:
        return status(
            STATUS_UNTRUSTED_SIGNER,
            f"signed by {fingerprint}, which is not in the skill's trusted_signers allowlist",
            signed=True,
        )
    return status(STATUS_VERIFIED, signed=True)


# --------------------------------------------------------------------------
# Skill files


@dataclass
class Skill:
    id: str  # `<namespace>/<name>` or `<name>`
    name: str  # frontmatter `name`, else the directory basename
    layer: str
    root: str
    path: str  # the SKILL.md file
    directory: str
    namespace: str | None
    fields: dict[str, Any]
    body: str
    short: str
    description: str
    when_to_use: str | None
    unknown_fields: list[str]
    sha256: str  # "" when the bytes could not be read
    signature: SignatureStatus | None  # None: not checked (pattern-learning root, unreadable, ...)
    problems: list[Problem]
    shadowed_by: str | None = None  # layer label of the winner with the same id
    loadable: bool = True  # False when Harn's loader (or, for claude/burin, pattern learning) skips it
    body_line: int = 1  # 1-based file line where the body starts


def _is_pattern_layer(layer: str) -> bool:
    return layer in PATTERN_LAYERS


def _within(path: str, base: str) -> bool:
    real = os.path.realpath(path)
    real_base = os.path.realpath(base)
    return real == real_base or real.startswith(real_base.rstrip(os.sep) + os.sep)


def _utf8_error_line(data: bytes, exc: UnicodeDecodeError) -> int:
    return data.count(b"\n", 0, exc.start) + 1


def parse_skill_file(
    path: str,
    layer: str,
    root: str | None = None,
    namespace: str | None = None,
    *,
    trusted_signers_dir: str | None = None,
    registry_dir: str | None = None,
    confine_to: str | None = None,
    registry_is_project: bool = True,
) -> Skill:
    """Read one SKILL.md. Never raises.

    `root` defaults to the skill directory's parent. `confine_to`, when
    given, is a directory the SKILL.md and its .sig must resolve inside
    (symlinks leaving it are not followed). Signatures are checked for Harn
    layers only; pattern-learning roots get `signature=None`.
    """
    directory = os.path.dirname(path)
    root = root if root is not None else os.path.dirname(directory)
    dir_name = os.path.basename(os.path.normpath(directory))
    pattern = _is_pattern_layer(layer)
    problems: list[Problem] = []
    skill = Skill(
        id=f"{namespace}/{dir_name}" if namespace else dir_name,
        name=dir_name,
        layer=layer,
        root=root,
        path=path,
        directory=directory,
        namespace=namespace,
        fields={},
        body="",
        short="",
        description="",
        when_to_use=None,
        unknown_fields=[],
        sha256="",
        signature=None,
        problems=problems,
        loadable=False,
    )
    skip_word = "pattern learning cannot read it" if pattern else "Harn skips this skill"

    if confine_to is not None and not _within(path, confine_to):
        problems.append(
            Problem(
                path, 0, CODE_SYMLINK_OUTSIDE,
                f"SKILL.md resolves outside {confine_to} through a symlink; harn-ls does not follow it "
                "(Harn itself would)",
                Severity.WARNING,
            )
        )
        return skill
    try:
        data = _read_bounded(path, MAX_SKILL_BYTES)
    except _TooLarge:
        # We cannot tell what Harn does with it, so it is not counted as loadable.
        problems.append(
            Problem(path, 0, CODE_TOO_LARGE,
                    "harn-ls does not parse SKILL.md files over 1 MB; whether Harn loads it is not checked",
                    Severity.WARNING)
        )
        return skill
    except ValueError as exc:  # not a regular file (directory, FIFO, device)
        problems.append(Problem(path, 0, CODE_UNREADABLE, f"SKILL.md is {exc}; {skip_word}", Severity.ERROR))
        return skill
    except OSError as exc:
        problems.append(
            Problem(path, 0, CODE_UNREADABLE, f"cannot read SKILL.md ({exc.strerror or exc}); {skip_word}",
                    Severity.ERROR)
        )
        return skill

    skill.sha256 = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(path, _utf8_error_line(data, exc), CODE_INVALID_UTF8,
                    f"SKILL.md is not valid UTF-8 (byte {exc.start}); {skip_word}", Severity.ERROR)
        )
        return skill

    split = _split(text)
    skill.body = split.body
    skill.body_line = split.body_line
    loadable = True
    if split.frontmatter is None:
        problems.append(
            Problem(path, 1, CODE_NO_FRONTMATTER,
                    "SKILL.md has no `---` frontmatter; Harn loads it with the directory name and an empty "
                    "`short` card", Severity.INFO)
        )
        parsed = _Parsed()
    else:
        parsed = _parse_detailed(split.frontmatter)

    def file_line(issue_line: int | None) -> int:
        if issue_line is None:
            return max(split.yaml_line - 1, 1) if split.yaml_line else 1
        return split.yaml_line + issue_line

    for issue in parsed.errors:
        if pattern:
            # Pattern learning reads description/when-to-use by line prefix;
            # only a broken YAML block is worth a warning there.
            if issue.code == CODE_MISSING_SHORT:
                message = ("no `short` field: Harn's own skill loader would reject this file if it were in a "
                           "Harn skill layer")
            else:
                message = f"{issue.message} (Harn's own skill loader would reject this file if it were in a " \
                          "Harn skill layer)"
            severity = Severity.WARNING if issue.code in (CODE_YAML, CODE_YAML_LIMIT, CODE_NOT_MAPPING) \
                else Severity.INFO
        else:
            loadable = False
            message = f"{issue.message}; {skip_word}"
            severity = Severity.ERROR
        problems.append(Problem(path, file_line(issue.line), issue.code, message, severity))
    for issue in parsed.notes:
        problems.append(Problem(path, file_line(issue.line), issue.code, issue.message, issue.severity))
    if parsed.unknown and not pattern:
        # Pattern-learning files always carry `category`/`tags`; flagging them is noise.
        for key, line in parsed.unknown:
            problems.append(
                Problem(path, file_line(line), CODE_UNKNOWN_FIELD,
                        f"unknown frontmatter field `{key}`; Harn ignores it and warns "
                        "(skills: <id> has unknown frontmatter fields)", Severity.WARNING)
            )

    fields = parsed.fields
    skill.fields = fields
    skill.unknown_fields = [key for key, _ in parsed.unknown]
    name = fields.get("name")
    skill.name = name if isinstance(name, str) and name else dir_name
    skill.id = f"{namespace}/{skill.name}" if namespace else skill.name
    skill.short = fields.get("short") or ""
    skill.description = fields.get("description") or ""
    skill.when_to_use = fields.get("when_to_use")
    skill.loadable = loadable

    if not pattern:
        sig_path = path + ".sig"
        if confine_to is not None and os.path.lexists(sig_path) and not _within(sig_path, confine_to):
            problems.append(
                Problem(sig_path, 0, CODE_SYMLINK_OUTSIDE,
                        f"SKILL.md.sig resolves outside {confine_to} through a symlink; harn-ls does not follow it",
                        Severity.WARNING)
            )
        else:
            allow = fields.get("trusted_signers") or []
            skill.signature = verify_signature(data, sig_path, trusted_signers_dir, allow, registry_dir=registry_dir,
                                               registry_is_project=registry_is_project)
            require_line = parsed.key_lines.get("require_signature")
            problems.extend(_signature_problems(skill, file_line(require_line)))
    return skill


def _signature_problems(skill: Skill, require_line: int) -> list[Problem]:
    sig = skill.signature
    if sig is None:
        return []
    out: list[Problem] = []
    status = sig.status
    if status == STATUS_INVALID_SIGNATURE:
        out.append(Problem(skill.path, 0, CODE_SIGNATURE_INVALID,
                           f"signature mismatch: {sig.error}; Harn warns and marks the skill untrusted",
                           Severity.ERROR))
    elif status in (STATUS_MISSING_SIGNER, STATUS_UNTRUSTED_SIGNER):
        out.append(Problem(skill.path, 0, CODE_SIGNER,
                           f"{status.replace('_', ' ')}: {sig.error}; Harn warns and marks the skill untrusted",
                           Severity.WARNING))
    if skill.fields.get("require_signature") is True and status != STATUS_VERIFIED:
        out.append(Problem(skill.path, require_line, CODE_SIGNATURE_REQUIRED,
                           f"require_signature is true but the signature status is {status}; Harn refuses to load "
                           "this skill (UnsignedSkillError)", Severity.ERROR))
    return out


# --------------------------------------------------------------------------
# Discovery (§F.1)


@dataclass
class SkillInventory:
    skills: list[Skill]  # winners (sorted by id) plus entries that do not compete: unloadable, claude/burin
    shadowed: list[Skill]  # losers, each with shadowed_by set
    # Every problem: those found while walking roots (symlinks, disabled
    # layers) followed by each skill's own (also kept on `Skill.problems`).
    problems: list[Problem]

    def all_problems(self) -> list[Problem]:
        return list(self.problems)

    def get(self, skill_id: str) -> Skill | None:
        for skill in self.skills:
            if skill.id == skill_id and skill.loadable and not _is_pattern_layer(skill.layer):
                return skill
        return None


@dataclass(frozen=True)
class _SkillsConfig:
    lookup_order: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    signer_registry_url: str | None = None


def _read_skills_config(project_root: str) -> _SkillsConfig:
    import tomllib

    try:
        raw = _read_bounded(os.path.join(project_root, "harn.toml"), MAX_SKILL_BYTES)
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return _SkillsConfig()
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
    paths,
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
    order_labels = tuple(lookup_order) if lookup_order is not None else config.lookup_order
    disabled = tuple(disabled_layers) if disabled_layers is not None else config.disable
    registry_is_project = registry_url is None  # from the project's own harn.toml
    registry_dir = _registry_dir(registry_url if registry_url is not None else config.signer_registry_url,
                                 project_root)
    signers_dir = trusted_signers_dir if trusted_signers_dir is not None else (paths.trusted_signers_dir or None)

    problems: list[Problem] = []
    if registry_is_project and registry_dir is not None and not _within(registry_dir, project_root):
        # Project configuration cannot make harn-ls read outside the project.
        problems.append(Problem(os.path.join(project_root, "harn.toml"), 0, CODE_ROOT_OUTSIDE,
                                f"[skills] signer_registry_url {config.signer_registry_url!r} is outside the project; "
                                "ignored (keys are read only from the project or ~/.harn/trusted-signers)",
                                Severity.WARNING))
        registry_dir = None
    for refused, why in getattr(paths, "refused_roots", ()):
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
        abs_root = os.path.abspath(root)
        project_local = abs_root == os.path.abspath(project_root) or abs_root.startswith(
            os.path.abspath(project_root).rstrip(os.sep) + os.sep
        )
        if project_local:
            if os.path.lexists(root) and not paths.is_inside_project(root):
                problems.append(Problem(root, 0, CODE_SYMLINK_OUTSIDE,
                                        f"{layer} skill root is a symlink leading outside the project; "
                                        "harn-ls does not follow it (Harn itself would)", Severity.WARNING))
                continue
            base = real_project
        else:
            base = os.path.realpath(root)
        for candidate in _candidates(root):
            if not _within(os.path.dirname(candidate), base) or not _within(candidate, base):
                problems.append(Problem(candidate, 0, CODE_SYMLINK_OUTSIDE,
                                        f"{candidate} resolves outside {base} through a symlink; "
                                        "harn-ls does not follow it (Harn itself would)", Severity.WARNING))
                continue
            # SkillLayerRoot has no namespace yet; honour one if a caller's root carries it.
            namespace = getattr(layer_root, "namespace", None)
            skill = parse_skill_file(candidate, layer, root, namespace, trusted_signers_dir=signers_dir,
                                     registry_dir=registry_dir, confine_to=base,
                                     registry_is_project=registry_is_project)
            if _is_pattern_layer(layer):
                pattern_skills.append(skill)
            else:
                parsed_by_layer.setdefault(layer, []).append(skill)

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
    for skill in shown + shadowed:
        problems.extend(skill.problems)
    return SkillInventory(shown, shadowed, problems)


def _display_rank(layer: str) -> int:
    order = HARN_LAYERS + PATTERN_LAYERS
    return order.index(layer) if layer in order else len(order)


# --------------------------------------------------------------------------
# Names and the learned-skill writer (§E.3)

def is_valid_skill_name(name: str) -> bool:
    """Harn accepts a name only when it is non-empty and already its own slug."""
    return bool(name) and slugify(name) == name


def _yaml_printable(ch: str) -> bool:
    code = ord(ch)
    return (
        code in (0x09,)
        or 0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    ) and code != 0xFEFF


_DQ_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0",
               "\x85": "\\N", "\u2028": "\\L", "\u2029": "\\P"}


def yaml_double_quoted(text: str) -> str:
    """A YAML double-quoted scalar that loads back to exactly `text`.

    Escapes `\\` and `"`, every line break (also NEL/LS/PS, which YAML would
    fold) and every non-printable character.
    """
    out = ['"']
    for ch in text:
        if ch in _DQ_ESCAPES:
            out.append(_DQ_ESCAPES[ch])
        elif _yaml_printable(ch):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_PLAIN_TAG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _plain_or_quoted(text: str) -> str:
    """Plain when YAML 1.2 would read it back as this same string, else quoted."""
    if _PLAIN_TAG.match(text) and _CoreResolver().resolve(ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str":
        return text
    return yaml_double_quoted(text)


def render_learned_skill(
    name: str,
    description: str,
    when_to_use: str,
    source: str,
    body: str,
    short: str | None = None,
) -> str:
    """SKILL.md text exactly as Harn's `pl_write_skill` writes it (§E.3).

    Byte for byte Harn's writer (pattern_knowledge.harn @0526ba57): frontmatter
    `name` (raw), `description` and `when-to-use` through `pl_yaml_scalar`
    (double quotes, only `\\` and `"` escaped: tabs, ESC and non-ASCII are
    written as they are, which Harn's line-prefix reader reads back exactly),
    `user-invocable: true`, `disable-model-invocation: false`,
    `allowed-tools: []`, `category: Command`, `tags: [learned, <source, _ -> ->]`
    (raw); then a blank line, the trimmed body and a final newline.

    Refused (ValueError naming the field) where Harn's own writer would make a
    file Harn cannot read back: a line break in `description`, `when-to-use`
    or the source tag would split the field over two lines.
    Raises ValueError for a name Harn would refuse (HARN-PATTERN-002).

    `short`, when given, is for a Harn loader layer (`.harn/skills`), which
    Harn's pattern learning never writes: there the file must also load with
    Harn's YAML loader, so `short` goes right after `name` and every text field
    is a fully escaped YAML double-quoted scalar (not Harn's bytes: Harn has no
    writer for that place).
    """
    if not is_valid_skill_name(name):
        raise ValueError(f"HARN-PATTERN-002: invalid skill name {name!r} (must equal its own slug)")
    description = "" if description is None else str(description)
    when_to_use = "" if when_to_use is None else str(when_to_use)
    tag = str(source or "").replace("_", "-")
    for field_name, value in (("description", description), ("when-to-use", when_to_use), ("tags (source)", tag)):
        if "\n" in value:
            raise ValueError(f"refused: the proposal's `{field_name}` contains a line break; Harn's SKILL.md writer "
                             "would split it over two lines and Harn's reader (one line per field) could not read it "
                             "back. Edit the proposal's text first")
    if short is None:
        lines = ["---", f"name: {name}",
                 f"description: {pl_yaml_scalar(description)}",
                 f"when-to-use: {pl_yaml_scalar(when_to_use)}"]
        tags = f"tags: [learned, {tag}]"
    else:
        lines = ["---", f"name: {_plain_or_quoted(name)}", f"short: {yaml_double_quoted(short)}",
                 f"description: {yaml_double_quoted(description)}",
                 f"when-to-use: {yaml_double_quoted(when_to_use)}"]
        tags = f"tags: [learned, {_plain_or_quoted(tag)}]"
    lines += [
        "user-invocable: true",
        "disable-model-invocation: false",
        "allowed-tools: []",
        "category: Command",
        tags,
        "---",
        "",
        _rust_trim(str(body or "")),
    ]
    return "\n".join(lines) + "\n"
