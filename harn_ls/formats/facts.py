"""Typed facts (`harn.fact.v1`, harn-formats §D.1–D.5).

A fact lives in memory as the `value` of a `store` event under the key
`fact:<kind>:<id>`. This module re-implements std/agent/fact's normalizer
(`fact` / `fact_validate`), id, key, namespace and tag rules so that

* facts read from disk are re-validated exactly as Harn's `recall_facts` does
  (a record Harn would skip becomes a Problem carrying Harn's HARN-FACT code);
* facts harn-ls writes (probe observations) carry Harn's id, key, tags and text.

Harn-isms reproduced on purpose: every text field goes through `trim(display)`
(so a numeric claim is accepted as its string form), `filter_nil` drops keys
whose value is nil, `""` or the string `"null"`, and options override input
only when they are not nil.
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import TYPE_CHECKING

from harn_ls.formats.harn_json import _rust_display_float, serde_compact, sha256_hex, stringify
from harn_ls.formats.harn_time import date_now_iso
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.rust_text import RUST_WHITESPACE, rust_trim

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    # (`X as X`: given on to `from harn_ls.formats.facts import Fact`, as __getattr__ does at run time)
    from harn_ls.formats.fact_types import Evidence as Evidence
    from harn_ls.formats.fact_types import Fact as Fact
    from harn_ls.formats.fact_types import FileRange as FileRange
    from harn_ls.formats.memory_record import MemoryRecord

    # One memory record's seq, the fact it holds (None: it holds none that Harn's recall would take) and
    # the problems found in it: how a namespace's facts are kept, cached and restored.
    FactEntry: TypeAlias = tuple[int, Fact | None, list[Problem]]
    # The facts of a namespace restored from the state cache, decoded when called (ProjectCache.restore_namespace)
    FactsSource: TypeAlias = Callable[[], list[FactEntry]]

# Fact, Evidence and FileRange are defined in fact_types.py: creating the three dataclasses costs ~5 ms at
# import, which a warm `inspect --json` or `recall` (facts printed from, or left in, the state cache)
# never needs. `facts.Fact` and `from harn_ls.formats.facts import Fact` still work (__getattr__).
_FACT_TYPES = ("Fact", "Evidence", "FileRange")  # (the order `_fact_classes` gives them in)


def __getattr__(name: str) -> type:
    if name in _FACT_TYPES:
        return _fact_classes()[_FACT_TYPES.index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

FACT_SCHEMA = "harn.fact.v1"
FACT_KINDS = ("observation", "claim", "hypothesis", "decision", "constraint")
EVIDENCE_KINDS = ("trace_ref", "file_range", "tool_output", "user_input")
_EVIDENCE_COMPACT = {"traceref": "trace_ref", "filerange": "file_range", "tooloutput": "tool_output", "userinput": "user_input"}

class FactError(ValueError):
    """What std/agent/fact throws: `"<CODE>: std/agent/fact: <message>"`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: std/agent/fact: {message}")
        self.code = code
        self.message = message


# -- Harn value helpers -------------------------------------------------------------


def harn_display(value: JsonValue) -> str:
    """`VmValue::display` for JSON-shaped values (what `to_string` and `"" + v` give)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "nil"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        if value == int(value) and abs(value) < 1e15:
            return f"{value:.1f}"
        return _rust_display_float(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {harn_display(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(harn_display(v) for v in value) + "]"
    return str(value)


def _text(value: JsonValue) -> str:
    """`__fact_text`: nil -> "", else trim(display(value))."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip(RUST_WHITESPACE)
    return harn_display(value).strip(RUST_WHITESPACE)


def filter_nil(mapping: JsonObject) -> JsonObject:
    """std/collections `filter_nil`: drop nil, "" and the string "null" (top level only)."""
    return {k: v for k, v in mapping.items() if not (v is None or (isinstance(v, str) and (v == "" or v == "null")))}


def _coalesce(*values: JsonValue) -> JsonValue:
    """Harn's `a ?? b ?? c`: the first value that is not nil."""
    for v in values:
        if v is not None:
            return v
    return None


def sorted_json(value: JsonValue) -> JsonValue:
    """Deep copy with dict keys sorted, as Harn's BTreeMap dicts serialize."""
    if isinstance(value, dict):
        return {k: sorted_json(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [sorted_json(v) for v in value]
    return value


# -- normalization ---------------------------------------------------------------------


def normalize_kind(value: JsonValue) -> str:
    raw = _text(value)
    kind = raw.replace("-", "_").lower()
    if kind == "":
        raise FactError("HARN-FACT-002", "kind is required")
    if kind not in FACT_KINDS:
        raise FactError("HARN-FACT-002", f"unknown kind `{raw}`")
    return kind


def normalize_evidence_kind(value: JsonValue) -> str:
    raw = _text(value)
    kind = raw.replace("-", "_").lower()
    kind = _EVIDENCE_COMPACT.get(kind, kind)
    if kind not in EVIDENCE_KINDS:
        raise FactError("HARN-FACT-005", f"unknown evidence.kind `{raw}`")
    return kind


def _evidence_entry(entry: JsonValue) -> JsonObject:
    if not isinstance(entry, dict):
        raise FactError("HARN-FACT-005", "evidence entries must be dicts")
    kind = normalize_evidence_kind(entry.get("kind"))
    ref = _text(entry.get("ref"))
    if ref == "":
        raise FactError("HARN-FACT-005", "evidence.ref is required")
    return filter_nil({"kind": kind, "ref": ref, "snippet": _text(entry.get("snippet"))})


def normalize_evidence(value: JsonValue) -> list[JsonObject]:
    """`__fact_evidence`: nil -> [], a list of {kind, ref, snippet?}, else HARN-FACT-005."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise FactError("HARN-FACT-005", "evidence must be a list")
    return [_evidence_entry(e) for e in value]


def normalize_confidence(value: JsonValue) -> float:
    if value is None:
        raise FactError("HARN-FACT-004", "confidence is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FactError("HARN-FACT-004", "confidence must be a number in [0, 1]")
    confidence = float(value)
    # NaN can't come from JSON; Harn's comparisons would let it through, we don't.
    if not (0.0 <= confidence <= 1.0):
        raise FactError("HARN-FACT-004", "confidence must be in [0, 1]")
    return confidence


def normalize_provenance(value: JsonValue) -> JsonObject:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FactError("HARN-FACT-006", "provenance must be a dict")
    return value


def normalize_valid_until(value: JsonValue) -> JsonObject | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FactError("HARN-FACT-007", "valid_until must be a dict")
    if value.get("event") is None:
        raise FactError("HARN-FACT-007", "valid_until.event is required")
    asserted_at = _text(value.get("asserted_at"))
    if asserted_at == "":
        raise FactError("HARN-FACT-007", "valid_until.asserted_at is required")
    return {"asserted_at": asserted_at, "event": value["event"]}


def normalize_fact(input: JsonValue, options: JsonObject | None = None, now: str | None = None) -> JsonObject:
    """std/agent/fact `fact(input, options)`: the normalized envelope (keys sorted).

    `now` stands in for `date_now_iso()` when no asserted_at/now is given
    (tests pass it to stay deterministic). `options.require_asserted_at`
    turns it into `fact_validate` (HARN-FACT-009 when asserted_at is missing).
    """
    if not isinstance(input, dict):
        raise FactError("HARN-FACT-001", "fact input must be a dict")
    schema = input.get("schema")
    if schema is not None and schema != FACT_SCHEMA:
        raise FactError("HARN-FACT-001", f"unsupported schema `{_text(schema)}`")
    if options is None:
        opts: JsonObject = {}
    elif isinstance(options, dict):
        opts = options
    else:
        raise FactError("HARN-FACT-001", "fact options must be a dict")
    get = opts.get
    kind = normalize_kind(_coalesce(get("kind"), input.get("kind")))
    claim = _text(_coalesce(get("claim"), input.get("claim")))
    if claim == "":
        raise FactError("HARN-FACT-003", "claim is required")
    confidence = normalize_confidence(_coalesce(get("confidence"), input.get("confidence")))
    evidence = normalize_evidence(_coalesce(get("evidence"), input.get("evidence")))
    provenance = normalize_provenance(_coalesce(get("provenance"), input.get("provenance")))
    valid_until = normalize_valid_until(_coalesce(get("valid_until"), input.get("valid_until")))
    asserted_at = _text(_coalesce(get("asserted_at"), input.get("asserted_at"), get("now")))
    if get("require_asserted_at") and asserted_at == "":
        raise FactError("HARN-FACT-009", "asserted_at is required")
    raw_id = _text(_coalesce(get("id"), input.get("id")))
    fid = raw_id if raw_id else fact_id(kind, claim, evidence, provenance)
    if asserted_at == "":
        asserted_at = now if now is not None else date_now_iso()
    return filter_nil({
        "asserted_at": asserted_at,
        "claim": claim,
        "confidence": confidence,
        "evidence": evidence,
        "id": fid,
        "kind": kind,
        "provenance": provenance,
        "schema": FACT_SCHEMA,
        "valid_until": valid_until,
    })


def validate_fact(value: JsonValue) -> JsonObject:
    """`fact_validate`: normalize with asserted_at required."""
    return normalize_fact(value, {"require_asserted_at": True})


# -- ids, keys, namespaces, tags ------------------------------------------------------


def fact_id(kind: JsonValue, claim: JsonValue, evidence: JsonValue = None, provenance: JsonValue = None) -> str:
    """`fact_<32 hex>` of sha256(kind \\n claim \\n json(evidence) \\n json(provenance)), all normalized."""
    seed = (
        normalize_kind(kind) + "\n" + _text(claim) + "\n"
        + stringify(normalize_evidence(evidence)) + "\n"
        + stringify(normalize_provenance(provenance))
    )
    return "fact_" + sha256_hex(seed)[:32]


def fact_key(kind: str, id: str) -> str:
    return f"fact:{kind}:{id}"


def fact_namespace(scope: JsonValue = None) -> str:
    """project/nil/"" -> project/facts; workspace, user -> <scope>/facts; else the trimmed scope."""
    raw = _text(scope).lower()
    if raw in ("", "project"):
        return "project/facts"
    if raw in ("workspace", "user"):
        return f"{raw}/facts"
    return _text(scope)


def _string_list(value: JsonValue) -> list[str]:
    """`__fact_string_list`: nil -> [], scalar -> [it]; trimmed, non-empty, first occurrence kept."""
    if value is None:
        return []
    raw = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    seen: set[str] = set()
    for entry in raw:
        text = _text(entry)
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out


def fact_tags(envelope: JsonObject, extra: JsonValue = ()) -> list[str]:
    """Harn's `fact_tags` in generation order (de-duplicated, not sorted).

    `envelope` may be raw input: kind and evidence are normalized here.
    """
    kind = normalize_kind(envelope.get("kind"))
    evidence = normalize_evidence(envelope.get("evidence"))
    out = ["fact", f"fact:{kind}", f"schema:{FACT_SCHEMA}"]
    seen = set(out)

    def push(tag: str) -> None:
        tag = rust_trim(tag)
        if tag and tag not in seen:
            seen.add(tag)
            out.append(tag)

    for item in evidence:
        ekind, ref = item["kind"], item.get("ref", "")
        push(f"fact:evidence:{ekind}")
        push(f"fact:evidence_ref:{ref}")
        push(f"fact:evidence:{ekind}:{ref}")
        push(f"fact:{kind}:evidence:{ekind}")
        push(f"fact:{kind}:evidence_ref:{ref}")
        push(f"fact:{kind}:evidence:{ekind}:{ref}")
    for tag in _string_list(extra):
        push(tag)
    return out


def memory_sorted_tags(tags: JsonValue) -> list[str]:
    """memory.rs `parse_tags`: a string -> [it] as is; a list -> display each, drop blank, sort, dedup."""
    if tags is None:
        return []
    if isinstance(tags, str):
        return [tags]
    texts = {harn_display(t) for t in tags}
    return sorted(t for t in texts if rust_trim(t))


def fact_store_event(envelope: JsonObject, namespace: str, stored_at: str, extra_tags: JsonValue = (), *,
                     key: str | None = None) -> JsonObject:
    """The memory `store` event `store_fact` appends (field order as serde writes it).

    `value` and `provenance` are key-sorted like every Harn dict; `text` is
    memory's `value_to_search_text`, i.e. serde_json's compact form of `value`.
    """
    value = sorted_json(envelope)
    event: JsonObject = {
        "type": "store",
        "id": envelope["id"],
        "namespace": namespace,
        "key": key if key is not None else fact_key(envelope["kind"], envelope["id"]),
        "value": value,
        "text": serde_compact(value),
        "tags": memory_sorted_tags(fact_tags(envelope, extra_tags)),
        "stored_at": stored_at,
    }
    if envelope.get("provenance") is not None:
        event["provenance"] = sorted_json(envelope["provenance"])
    return event


# -- file_range evidence ------------------------------------------------------------------

_FILE_RANGE_RE = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$", re.DOTALL)
# A relative path that normpath would give back unchanged: no empty, `.` or `..` segment (the
# usual evidence ref, `src/pkg/mod.py`), joined to the root without normalizing it again.
_NOT_NORMAL = re.compile(r"(?:^|/)\.{0,2}(?:/|$)").search


@functools.lru_cache(maxsize=8)
def _normalized_root(project_root: str) -> str:
    # One project root for thousands of ranges in a load: normalize it once.
    return posixpath.normpath(project_root.replace("\\", "/")) if project_root else "/"


def parse_file_range(ref: str, project_root: str) -> FileRange | None:
    """`<path>:<start>[-<end>]` inside the project, else None (an opaque label).

    Pure: no file-system access, so symlinks are not resolved. Paths that
    leave the project (`..`, absolute paths elsewhere) are rejected; an
    absolute path inside the root becomes relative.
    """
    if not isinstance(ref, str):
        return None
    match = _FILE_RANGE_RE.match(ref)
    if match is None:
        return None
    start = int(match.group("start"))
    end = int(match.group("end")) if match.group("end") is not None else start
    if start < 1 or end < start:
        return None
    raw = match.group("path")
    if "\x00" in raw:
        return None
    root = _normalized_root(project_root)
    if _NOT_NORMAL(raw) is None:  # (relative: a leading `/` is an empty first segment)
        return _fact_classes()[2](raw, start, end)
    if posixpath.isabs(raw):
        full = posixpath.normpath(raw)
    else:
        full = posixpath.normpath(posixpath.join(root, raw))
    if root == "/":
        rel = full.lstrip("/")
    elif full.startswith(root + "/"):
        rel = full[len(root) + 1:]
    else:
        return None
    if rel in ("", "."):
        return None
    return _fact_classes()[2](rel, start, end)


@functools.cache
def _fact_classes() -> tuple[type[Fact], type[Evidence], type[FileRange]]:
    """The fact classes, imported with the first fact built (see __getattr__), once."""
    # start-up: the fact classes load with the first fact built (see __getattr__)
    from harn_ls.formats.fact_types import Evidence, Fact, FileRange

    return Fact, Evidence, FileRange


# -- facts read back from memory ------------------------------------------------------------


def fact_from_record(record: MemoryRecord, project_root: str, path: str) -> tuple[Fact | None, list[Problem]]:
    """The fact a memory record holds, re-validated like Harn's `recall_facts`.

    Records whose value is not a `harn.fact.v1` dict give (None, []). A fact
    that fails `fact_validate` gives (None, [Problem with Harn's code]) —
    Harn's recall skips such records silently.
    """
    value = record.value
    if not isinstance(value, dict) or value.get("schema") != FACT_SCHEMA:
        return None, []
    try:
        env = validate_fact(value)
    except FactError as exc:
        return None, [Problem(path, record.line_no, exc.code,
            f"fact {record.id}: {exc.message}; Harn's recall_facts skips this record", Severity.WARNING)]
    Fact, Evidence, _ = _fact_classes()  # (the classes, local for the loop)
    evidence = tuple(
        Evidence(
            kind=e["kind"],
            ref=e.get("ref", ""),
            snippet=e.get("snippet"),
            range=parse_file_range(e.get("ref", ""), project_root) if e["kind"] == "file_range" else None,
        )
        for e in env["evidence"]
    )
    fact = Fact(
        id=env.get("id", record.id),
        kind=env["kind"],
        claim=env.get("claim", ""),
        confidence=env["confidence"],
        evidence=evidence,
        provenance=env["provenance"],
        asserted_at=env.get("asserted_at", ""),
        valid_until=env.get("valid_until"),
        namespace=record.namespace,
        record_id=record.id,
        memory_key=record.key,
        stored_at=record.stored_at,
        line_no=record.line_no,
    )
    return fact, []
