"""Pipeline checkpoints: `.harn/checkpoints/<pipeline>.json` (harn-formats §B).

The file is one JSON object, key -> value, rewritten whole and non-atomically
by every `checkpoint()` / `checkpoint_delete()` (truncate + write). A reader
can therefore see an empty or half-written file; those come back with
`retry=True` so the watcher re-reads after a debounce. Harn itself treats any
file it cannot parse as empty and replaces it on its next write, which is what
the problems say.

`render_checkpoint_json` reproduces Harn's writer (`serde_json::to_string_pretty`)
byte for byte, so the "forget stage" action can rewrite the file as Harn would.
"""

from __future__ import annotations

import os
import re
from dataclasses import field

import orjson

from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.safe_read import CHECKPOINT_CAP, ReadRefused, json_density_problem, read_confined

KEYED_SCHEMA = "harn.checkpoint_stage.keyed.v1"

CODE_UNPARSEABLE = "HL-CKPT-001"
CODE_NOT_OBJECT = "HL-CKPT-002"
CODE_INVALID_UTF8 = "HL-CKPT-003"
CODE_BAD_KEYED = "HL-CKPT-004"
CODE_DUPLICATE_KEY = "HL-CKPT-005"
CODE_UNREADABLE = "HL-CKPT-006"
CODE_TOO_DEEP = "HL-CKPT-007"
CODE_TOO_LARGE = "HL-CKPT-008"  # over CHECKPOINT_CAP, or JSON that would take > 20x its size in memory
CODE_REFUSED = "HL-CKPT-009"  # a symlink out of the project

_FINGERPRINT_RE = re.compile(r"sha256:[0-9a-f]{64}")
# serde_json's default recursion limit: 128 nested containers fail to parse.
SERDE_MAX_DEPTH = 127
_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1

_IGNORED_BY_HARN = "Harn silently treats an unparseable checkpoint file as empty, and its next write replaces it"


@lean_dataclass(slots=True)
class CheckpointEntry:
    """One stage of a checkpoint file as Harn stored it."""

    key: str
    value: JsonValue  # the stage result for keyed records (record["value"]), else the raw value
    keyed: bool  # a well-formed keyed-stage record
    fingerprint: str | None  # only for keyed records
    line: int  # 1-based line of the key in the file (0 when unknown)


@lean_dataclass(slots=True)
class CheckpointFile:
    """One pipeline's checkpoint file: its stages, and whether it read whole."""

    pipeline: str
    path: str
    entries: dict[str, CheckpointEntry]
    problems: list[Problem] = field(default_factory=list)
    retry: bool = False  # probably caught mid-write: read again after a debounce
    mtime: float = 0.0
    size: int = 0
    exists: bool = True  # False when the file is gone (checkpoint_clear deletes it)


# -- naming ---------------------------------------------------------------------


def pipeline_of_checkpoint_path(path: str) -> str:
    name = os.path.basename(path)
    return name[:-5] if name.endswith(".json") else name


# -- keyed records ----------------------------------------------------------------


def _keyed_status(value: JsonValue) -> tuple[bool, str | None]:
    """(is a well-formed keyed record, why it looks keyed but is not)."""
    if not isinstance(value, dict):
        return False, None
    schema = value.get("schema")
    fingerprint = value.get("fingerprint")
    looks_keyed = schema == KEYED_SCHEMA or (
        isinstance(schema, str) and schema.startswith("harn.checkpoint_stage")
    ) or ("schema" in value and isinstance(fingerprint, str) and fingerprint.startswith("sha256:"))
    if not looks_keyed:
        return False, None
    reasons = []
    if schema != KEYED_SCHEMA:
        reasons.append(f"schema is {schema!r}, not {KEYED_SCHEMA!r}")
    if not (isinstance(fingerprint, str) and _FINGERPRINT_RE.fullmatch(fingerprint)):
        reasons.append(f"fingerprint {fingerprint!r} is not 'sha256:' + 64 lowercase hex digits")
    if "value" not in value:
        reasons.append("there is no 'value' key")
    if reasons:
        return False, "; ".join(reasons)
    return True, None


# -- scanning the text for top-level keys ------------------------------------------

# Strings are matched whole (so brackets and commas inside them are skipped);
# valid JSON strings never contain a raw newline, so newlines are counted
# between tokens only.
_TOKEN_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],]')


def _scan_top_level_keys(text: str) -> tuple[list[tuple[str, int]], int]:
    """[(raw key token, 1-based line)] for keys of the top-level object, and max depth."""
    keys: list[tuple[str, int]] = []
    depth = 0
    max_depth = 0
    expect_key = False
    line = 1
    last = 0
    for match in _TOKEN_RE.finditer(text):
        tok = match.group()
        first = tok[0]
        if first == '"':
            if expect_key and depth == 1:
                start = match.start()
                line += text.count("\n", last, start)
                last = start
                keys.append((tok, line))
            expect_key = False
        elif first in "{[":
            depth += 1
            if depth > max_depth:
                max_depth = depth
            expect_key = first == "{" and depth == 1
        elif first in "}]":
            depth -= 1
            expect_key = False
        else:  # ","
            expect_key = depth == 1
    return keys, max_depth


def _decode_key(token: str) -> str | None:
    try:
        key = orjson.loads(token)
    except orjson.JSONDecodeError:
        return None
    return key if isinstance(key, str) else None


# -- reading -------------------------------------------------------------------------


def read_checkpoint_file(path: str, root: str | None = None) -> CheckpointFile:
    """Read one checkpoint file. Never raises; bad data comes back as problems.

    At most CHECKPOINT_CAP bytes, a regular file only (inside `root` when given), and not parsed
    when its JSON would take more than 20x its size in memory."""
    pipeline = pipeline_of_checkpoint_path(path)
    result = CheckpointFile(pipeline=pipeline, path=path, entries={})
    try:
        data = read_confined(path, root, CHECKPOINT_CAP)
        st = os.stat(path)
    except FileNotFoundError:
        result.exists = False
        return result
    except ReadRefused as exc:
        code = {"too-large": CODE_TOO_LARGE, "outside": CODE_REFUSED}.get(exc.kind, CODE_UNREADABLE)
        result.problems.append(Problem(path, 0, code, f"checkpoint file {exc}", Severity.ERROR))
        return result
    except OSError as exc:
        result.problems.append(Problem(path, 0, CODE_UNREADABLE, f"cannot read checkpoint file: {exc}", Severity.ERROR))
        result.retry = True
        return result
    result.mtime = st.st_mtime
    result.size = len(data)
    dense = json_density_problem(data)
    if dense is not None:
        result.problems.append(Problem(path, 0, CODE_TOO_LARGE, f"checkpoint file {dense}", Severity.ERROR))
        return result
    parse_checkpoint_bytes(data, result)
    return result


def parse_checkpoint_bytes(data: bytes, result: CheckpointFile) -> CheckpointFile:
    """Fill `result` from the file's bytes (split out so tests need no files)."""
    path = result.path
    if not data.strip():
        result.retry = True
        result.problems.append(Problem(path, 0, CODE_UNPARSEABLE,
            f"checkpoint file is empty (possibly caught mid-write); {_IGNORED_BY_HARN}", Severity.WARNING))
        return result
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        truncated = exc.end == len(data) and "unexpected end" in exc.reason
        line = data.count(b"\n", 0, exc.start) + 1
        if truncated:
            # a multi-byte character cut at the end: a half-written file
            result.retry = True
            result.problems.append(Problem(path, line, CODE_UNPARSEABLE,
                f"checkpoint file ends in the middle of a character (probably caught mid-write); {_IGNORED_BY_HARN}",
                Severity.WARNING))
        else:
            result.problems.append(Problem(path, line, CODE_INVALID_UTF8,
                f"checkpoint file is not valid UTF-8 (byte {exc.start}); Harn cannot read it, treats it as empty "
                "and its next write replaces it", Severity.ERROR))
        return result
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        result.retry = True
        result.problems.append(Problem(path, getattr(exc, "lineno", 0) or 0, CODE_UNPARSEABLE,
            f"checkpoint file is not valid JSON ({exc.msg}; possibly caught mid-write); {_IGNORED_BY_HARN}",
            Severity.WARNING))
        return result
    if not isinstance(value, dict):
        result.problems.append(Problem(path, 1, CODE_NOT_OBJECT,
            f"checkpoint file holds a JSON {type(value).__name__}, not an object; Harn treats it as empty "
            "and its next write replaces it", Severity.ERROR))
        return result

    raw_keys, max_depth = _scan_top_level_keys(text)
    if max_depth > SERDE_MAX_DEPTH:
        result.problems.append(Problem(path, 1, CODE_TOO_DEEP,
            f"JSON is nested {max_depth} levels deep; Harn's reader (serde_json) stops at {SERDE_MAX_DEPTH}, "
            "so Harn treats the file as empty and its next write replaces it", Severity.ERROR))
    lines: dict[str, int] = {}
    seen_first: dict[str, int] = {}
    for token, line in raw_keys:
        key = _decode_key(token)
        if key is None:
            continue
        if key in lines:
            result.problems.append(Problem(path, line, CODE_DUPLICATE_KEY,
                f"key {key!r} appears again (first on line {seen_first[key]}); Harn keeps the last value",
                Severity.WARNING))
        else:
            seen_first[key] = line
        lines[key] = line  # the value Harn keeps is the last one

    for key, item in value.items():
        line = lines.get(key, 0)
        keyed, why = _keyed_status(item)
        if why is not None:
            result.problems.append(Problem(path, line, CODE_BAD_KEYED,
                f"stage {key!r} looks like a keyed checkpoint record but is malformed ({why}); "
                "Harn will rerun this stage and overwrite the record", Severity.WARNING))
        result.entries[key] = CheckpointEntry(
            key=key,
            value=item["value"] if keyed else item,
            keyed=keyed,
            fingerprint=item["fingerprint"] if keyed else None,
            line=line,
        )
    return result


# -- writing (text only; actions/ does the I/O) ------------------------------------------


def _render(value: JsonValue, indent: str, sort_keys: bool, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = indent + "  "
        items = sorted(value.items()) if sort_keys else value.items()
        out.append("{\n")
        for index, (key, item) in enumerate(items):
            if index:
                out.append(",\n")
            out.append(inner)
            out.append(serde_compact(str(key)))
            out.append(": ")
            _render(item, inner, sort_keys, out)
        out.append("\n" + indent + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = indent + "  "
        out.append("[\n")
        for index, item in enumerate(value):
            if index:
                out.append(",\n")
            out.append(inner)
            _render(item, inner, sort_keys, out)
        out.append("\n" + indent + "]")
    elif isinstance(value, int) and not isinstance(value, bool) and not (_I64_MIN <= value <= _U64_MAX):
        # serde_json reads integers beyond i64/u64 as f64 and writes them back as floats
        out.append(serde_compact(float(value)))
    elif value is None or isinstance(value, (str, int, float, bool)):
        out.append(serde_compact(value))
    else:
        # vm_to_json: anything that is not plain data becomes null
        out.append("null")


def render_checkpoint_json(mapping: JsonObject, *, sort_nested: bool = True) -> str:
    """Harn's checkpoint file text: serde_json pretty, top-level keys sorted, no trailing newline.

    Values that come from Harn scripts have sorted keys at every level (Harn
    dicts are BTreeMaps); values Harn re-saves after loading keep the file's
    nested order, which `sort_nested=False` reproduces.
    """
    top = {str(k): v for k, v in mapping.items()}
    out: list[str] = []
    _render(dict(sorted(top.items())), "", sort_nested, out)
    return "".join(out)


# -- running state (lock files, §O.6; read-only: formats/locks.py `checkpoint_running`) ------------------------

RUNNING_LABEL = "writing now"
