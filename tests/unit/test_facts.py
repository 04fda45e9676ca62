"""Typed facts (harn.fact.v1), harn-formats §D.1–D.5."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.formats import facts as F
from harn_ls.formats.harn_json import serde_compact, sha256_hex, stringify
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import MemoryRecord, memory_record
from harn_ls.formats.problems import Severity
from tests.helpers.samples import SAMPLES  # noqa: E402

ID_VECTORS = SAMPLES / "id-vectors.json"
ROOT = "/proj"
EVENTS = "/proj/.harn/memory/project/facts/events.jsonl"

# §D.4 example line, byte for byte
D4_LINE = (
    '{"type":"store","id":"fact_dba19bab13cea567792bee7e039809a7","namespace":"project/facts",'
    '"key":"fact:claim:fact_dba19bab13cea567792bee7e039809a7","value":{"asserted_at":"2026-05-02T09:20:11.204Z",'
    '"claim":"Alice prefers Rust examples","confidence":0.82,"evidence":[{"kind":"file_range","ref":"README.md:1-3"}],'
    '"id":"fact_dba19bab13cea567792bee7e039809a7","kind":"claim","provenance":{"agent":"codex","run_id":"run-1"},'
    '"schema":"harn.fact.v1"},"text":"{\\"asserted_at\\":\\"2026-05-02T09:20:11.204Z\\",\\"claim\\":\\"Alice prefers '
    'Rust examples\\",\\"confidence\\":0.82,\\"evidence\\":[{\\"kind\\":\\"file_range\\",\\"ref\\":\\"README.md:1-3\\"}],'
    '\\"id\\":\\"fact_dba19bab13cea567792bee7e039809a7\\",\\"kind\\":\\"claim\\",\\"provenance\\":{\\"agent\\":\\"codex\\",'
    '\\"run_id\\":\\"run-1\\"},\\"schema\\":\\"harn.fact.v1\\"}","tags":["fact","fact:claim",'
    '"fact:claim:evidence:file_range","fact:claim:evidence:file_range:README.md:1-3",'
    '"fact:claim:evidence_ref:README.md:1-3","fact:evidence:file_range","fact:evidence:file_range:README.md:1-3",'
    '"fact:evidence_ref:README.md:1-3","schema:harn.fact.v1"],"stored_at":"2026-05-02T09:20:11.205633412+00:00",'
    '"provenance":{"agent":"codex","run_id":"run-1"}}'
)

GOOD = {
    "kind": "claim",
    "claim": "Alice prefers Rust examples",
    "confidence": 0.82,
    "evidence": [{"kind": "file_range", "ref": "README.md:1-3"}],
    "provenance": {"agent": "codex", "run_id": "run-1"},
    "asserted_at": "2026-05-02T09:20:11.204Z",
}


def _vectors() -> dict:
    if not ID_VECTORS.exists():
        pytest.skip(f"{ID_VECTORS} is missing (shared Harn test vectors)")
    return {v["id"]: v for v in json.loads(ID_VECTORS.read_text())["vectors"]}


def _code(fn, *args, **kwargs) -> str:
    with pytest.raises(F.FactError) as info:
        fn(*args, **kwargs)
    return info.value.code


# -- vectors -------------------------------------------------------------------------------


@pytest.mark.parametrize("vid", ["fact-id-format-doc-example", "fact-id-conformance-first", "fact-id-conformance-second"])
def test_fact_id_vectors(vid: str) -> None:
    v = _vectors()[vid]
    inp, comp = v["input"], v["computed"]
    evidence = F.normalize_evidence(inp["evidence"])
    assert stringify(evidence) == comp["normalized_evidence_json"]
    assert stringify(F.normalize_provenance(inp["provenance"])) == comp["provenance_json"]
    assert F.fact_id(inp["kind"], inp["claim"], inp["evidence"], inp["provenance"]) == comp["fact_id"]
    assert "fact_" + sha256_hex(comp["seed"])[:32] == comp["fact_id"]
    env = F.normalize_fact({**inp, "confidence": 0.82}, now="2026-05-02T09:20:11.204Z")
    assert env["id"] == comp["fact_id"]
    assert F.fact_key(env["kind"], env["id"]) == f"fact:{env['kind']}:{comp['fact_id']}"
    for key, expected in v.get("asserted", {}).items():
        if key == "first.value.kind":
            assert env["kind"] == expected
        elif key == "first.value.evidence[0].kind":
            assert env["evidence"][0]["kind"] == expected
        elif key == "first.value.schema":
            assert env["schema"] == expected


def test_fact_id_ignores_confidence_valid_until_and_asserted_at() -> None:
    a = F.normalize_fact(GOOD)
    b = F.normalize_fact({**GOOD, "confidence": 0.1, "asserted_at": "x",
                          "valid_until": {"event": "merge", "asserted_at": "y"}})
    assert a["id"] == b["id"] == "fact_dba19bab13cea567792bee7e039809a7"


def test_kind_normalization_vector() -> None:
    v = _vectors()["fact-kind-normalization"]
    for case in v["asserted"] + v["computed"]:
        if "stored_kind" in case:
            assert F.normalize_kind(case["input_kind"]) == case["stored_kind"]
        elif "stored_evidence_kind" in case:
            assert F.normalize_evidence_kind(case["input_evidence_kind"]) == case["stored_evidence_kind"]
        else:
            assert case["error_contains"] in str(pytest.raises(F.FactError, F.normalize_kind, case["input_kind"]).value)


@pytest.mark.parametrize("vid", ["fact-tags-conformance-first", "fact-tags-conformance-second"])
def test_fact_tags_vectors(vid: str) -> None:
    v = _vectors()[vid]
    tags = F.fact_tags(v["input"])
    assert tags == v["computed"]["fact_tags_in_generation_order"]
    stored = F.memory_sorted_tags(tags)
    assert stored == v["computed"]["tags_as_stored_by_memory_sorted_dedup"]
    for tag in v.get("asserted", {}).get("stored tags contain", []):
        assert tag in stored


def test_memory_parse_tags_vector() -> None:
    for case in _vectors()["memory-parse-tags"]["computed"]:
        assert F.memory_sorted_tags(case["tags_given"]) == case["stored"]


def test_fact_tags_extra_tags_are_trimmed_deduplicated_and_appended() -> None:
    tags = F.fact_tags(GOOD, [" probe ", "fact", "probe", "", 5])
    assert tags[-2:] == ["probe", "5"]
    assert tags.count("fact") == 1
    assert F.fact_tags(GOOD, "single")[-1] == "single"
    no_evidence = F.fact_tags({"kind": "Decision"})
    assert no_evidence == ["fact", "fact:decision", "schema:harn.fact.v1"]


def test_json_stringify_vector() -> None:
    asserted = _vectors()["json-stringify-asserted"]["asserted"]
    # Python equivalents of the Harn values, in the vector's order
    values = [
        {"a": 1, "c": 3},
        {"a": 1, "c": 3},
        {"name": "Ada", "age": 37},
        {"name": "Ada", "age": 37},
        {"name": "Ada", "age": 36},
        [True, 36, "ada@example.com", "Ada", 9],
        ["count", "next"],
        [3, None],
        {"x": "ok"},
        [1, 2, 3],
    ]
    assert len(values) == len(asserted)
    for value, case in zip(values, asserted, strict=True):
        assert stringify(value) == case["json_stringify"], case["value"]


def test_sha256_vector() -> None:
    for case in _vectors()["sha256-builtin"]["asserted"]:
        assert sha256_hex(case["input"]) == case["sha256"]


# -- the stored event ------------------------------------------------------------------------


def test_store_event_matches_spec_line_byte_for_byte() -> None:
    env = F.normalize_fact(GOOD)
    event = F.fact_store_event(env, F.fact_namespace(None), "2026-05-02T09:20:11.205633412+00:00")
    assert list(event) == ["type", "id", "namespace", "key", "value", "text", "tags", "stored_at", "provenance"]
    assert serde_compact(event) == D4_LINE


def test_store_event_text_uses_serde_floats_and_sorted_provenance() -> None:
    env = F.normalize_fact({**GOOD, "confidence": 1, "provenance": {"z": 1, "a": 2}}, now="t")
    event = F.fact_store_event(env, "workspace/facts", "s", ["extra"], key="custom")
    assert env["confidence"] == 1.0 and isinstance(env["confidence"], float)
    assert '"confidence":1.0' in event["text"]  # memory's value_to_search_text is serde_json
    assert list(event["provenance"]) == ["a", "z"]
    assert event["key"] == "custom" and event["namespace"] == "workspace/facts"
    assert "extra" in event["tags"] and event["tags"] == sorted(event["tags"])


def test_stored_event_reads_back_through_memory(tmp_path: Path) -> None:
    path = tmp_path / ".harn/memory/project/facts/events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(D4_LINE + "\n", encoding="utf-8")
    ns = MemoryNamespace("project/facts", str(path))
    ns.apply_lines(JsonlTail(str(path)).read_new().lines)
    (record,) = ns.records()
    fact, problems = F.fact_from_record(record, str(tmp_path), str(path))
    assert problems == []
    assert fact.id == record.id == "fact_dba19bab13cea567792bee7e039809a7"
    assert fact.kind == "claim" and fact.confidence == 0.82
    assert fact.evidence[0].range == F.FileRange("README.md", 1, 3)
    assert fact.memory_key == "fact:claim:fact_dba19bab13cea567792bee7e039809a7"
    assert fact.namespace == "project/facts" and fact.line_no == 1
    assert fact.stored_at == "2026-05-02T09:20:11.205633412+00:00"
    assert fact.asserted_at == "2026-05-02T09:20:11.204Z"


# -- normalization --------------------------------------------------------------------------


def test_normalize_fact_full() -> None:
    env = F.normalize_fact({
        "schema": "harn.fact.v1",
        "kind": "  Hypothesis ",
        "claim": "  Bob prefers TypeScript examples \n",
        "confidence": 1,
        "evidence": [
            {"kind": "ToolOutput", "ref": " tool:interview ", "snippet": " TypeScript "},
            {"kind": "trace-ref", "ref": "run-1", "snippet": "   "},
            {"kind": "USER_INPUT", "ref": "asked", "snippet": None},
        ],
        "provenance": None,
        "valid_until": {"event": {"merged": True}, "asserted_at": " 2026-06-01T00:00:00.000Z "},
        "asserted_at": "2026-05-02T09:20:11.204Z",
        "extra": "ignored",
    })
    assert env == {
        "asserted_at": "2026-05-02T09:20:11.204Z",
        "claim": "Bob prefers TypeScript examples",
        "confidence": 1.0,
        "evidence": [
            {"kind": "tool_output", "ref": "tool:interview", "snippet": "TypeScript"},
            {"kind": "trace_ref", "ref": "run-1"},
            {"kind": "user_input", "ref": "asked"},
        ],
        "id": F.fact_id("hypothesis", "Bob prefers TypeScript examples", env["evidence"], {}),
        "kind": "hypothesis",
        "provenance": {},
        "schema": "harn.fact.v1",
        "valid_until": {"asserted_at": "2026-06-01T00:00:00.000Z", "event": {"merged": True}},
    }
    assert list(env) == sorted(env)


def test_options_override_input_only_when_not_nil() -> None:
    env = F.normalize_fact(GOOD, {"kind": "Decision", "claim": None, "confidence": 0, "id": " my-id "})
    assert env["kind"] == "decision" and env["claim"] == GOOD["claim"]
    assert env["confidence"] == 0.0 and env["id"] == "my-id"
    env2 = F.normalize_fact(GOOD, {"evidence": [], "provenance": {"p": 1}})
    assert env2["evidence"] == [] and env2["provenance"] == {"p": 1}
    assert env2["id"] == F.fact_id("claim", GOOD["claim"], [], {"p": 1})


def test_asserted_at_precedence() -> None:
    base = {k: v for k, v in GOOD.items() if k != "asserted_at"}
    assert F.normalize_fact(base, {"asserted_at": "opt", "now": "now"}, now="p")["asserted_at"] == "opt"
    assert F.normalize_fact({**base, "asserted_at": "inp"}, {"now": "now"}, now="p")["asserted_at"] == "inp"
    assert F.normalize_fact(base, {"now": " now "}, now="p")["asserted_at"] == "now"
    assert F.normalize_fact(base, None, now="p")["asserted_at"] == "p"
    generated = F.normalize_fact(base)["asserted_at"]
    assert len(generated) == 24 and generated.endswith("Z") and generated[19] == "."


def test_filter_nil_drops_empty_and_null_strings() -> None:
    assert F.filter_nil({"a": None, "b": "", "c": "null", "d": 0, "e": [], "f": {}, "g": "NULL", "h": False}) == {
        "d": 0, "e": [], "f": {}, "g": "NULL", "h": False}
    # a claim spelled "null" passes validation, then filter_nil drops it (Harn does the same)
    env = F.normalize_fact({**GOOD, "claim": "null"})
    assert "claim" not in env
    assert _code(F.validate_fact, env) == "HARN-FACT-003"


def test_harn_display_coercion_of_text_fields() -> None:
    env = F.normalize_fact({**GOOD, "claim": 42, "evidence": [{"kind": "user_input", "ref": 7, "snippet": 1.0}]})
    assert env["claim"] == "42"
    assert env["evidence"] == [{"kind": "user_input", "ref": "7", "snippet": "1.0"}]
    assert F.normalize_fact({**GOOD, "claim": ["a", 1, {"b": None}]})["claim"] == "[a, 1, {b: nil}]"
    assert F.harn_display(0.5) == "0.5" and F.harn_display(1e15) == "1000000000000000"
    assert F.harn_display(True) == "true" and F.harn_display(None) == "nil"


def test_rust_trim_differs_from_python_strip() -> None:
    assert F.rust_trim("\x1fa\u3000") == "\x1fa"
    assert F.normalize_fact({**GOOD, "claim": "\u00a0 x \u2028"})["claim"] == "x"


# -- wrong types, field by field ---------------------------------------------------------------


@pytest.mark.parametrize(
    "patch, code",
    [
        ({"schema": "harn.fact.v2"}, "HARN-FACT-001"),
        ({"schema": ""}, "HARN-FACT-001"),
        ({"schema": 1}, "HARN-FACT-001"),
        ({"kind": None}, "HARN-FACT-002"),
        ({"kind": ""}, "HARN-FACT-002"),
        ({"kind": "  "}, "HARN-FACT-002"),
        ({"kind": "Guess"}, "HARN-FACT-002"),
        ({"kind": 5}, "HARN-FACT-002"),
        ({"kind": ["claim"]}, "HARN-FACT-002"),
        ({"kind": {"k": "claim"}}, "HARN-FACT-002"),
        ({"claim": None}, "HARN-FACT-003"),
        ({"claim": ""}, "HARN-FACT-003"),
        ({"claim": " \n\t"}, "HARN-FACT-003"),
        ({"confidence": None}, "HARN-FACT-004"),
        ({"confidence": "0.5"}, "HARN-FACT-004"),
        ({"confidence": True}, "HARN-FACT-004"),
        ({"confidence": [0.5]}, "HARN-FACT-004"),
        ({"confidence": {"v": 0.5}}, "HARN-FACT-004"),
        ({"confidence": 1.5}, "HARN-FACT-004"),
        ({"confidence": -0.01}, "HARN-FACT-004"),
        ({"confidence": 2}, "HARN-FACT-004"),
        ({"confidence": float("nan")}, "HARN-FACT-004"),
        ({"evidence": "README.md:1"}, "HARN-FACT-005"),
        ({"evidence": {"kind": "file_range", "ref": "a:1"}}, "HARN-FACT-005"),
        ({"evidence": 3}, "HARN-FACT-005"),
        ({"evidence": ["README.md:1"]}, "HARN-FACT-005"),
        ({"evidence": [None]}, "HARN-FACT-005"),
        ({"evidence": [{"kind": "file", "ref": "a"}]}, "HARN-FACT-005"),
        ({"evidence": [{"ref": "a"}]}, "HARN-FACT-005"),
        ({"evidence": [{"kind": 5, "ref": "a"}]}, "HARN-FACT-005"),
        ({"evidence": [{"kind": "file_range"}]}, "HARN-FACT-005"),
        ({"evidence": [{"kind": "file_range", "ref": "  "}]}, "HARN-FACT-005"),
        ({"evidence": [{"kind": "file_range", "ref": None}]}, "HARN-FACT-005"),
        ({"provenance": []}, "HARN-FACT-006"),
        ({"provenance": "codex"}, "HARN-FACT-006"),
        ({"provenance": 1}, "HARN-FACT-006"),
        ({"valid_until": "tomorrow"}, "HARN-FACT-007"),
        ({"valid_until": []}, "HARN-FACT-007"),
        ({"valid_until": {}}, "HARN-FACT-007"),
        ({"valid_until": {"asserted_at": "t"}}, "HARN-FACT-007"),
        ({"valid_until": {"event": None, "asserted_at": "t"}}, "HARN-FACT-007"),
        ({"valid_until": {"event": "merge"}}, "HARN-FACT-007"),
        ({"valid_until": {"event": "merge", "asserted_at": " "}}, "HARN-FACT-007"),
    ],
)
def test_bad_field_raises_harn_code(patch: dict, code: str) -> None:
    assert _code(F.normalize_fact, {**GOOD, **patch}) == code


@pytest.mark.parametrize("bad", [None, "fact", 1, ["claim"], True])
def test_input_and_options_must_be_dicts(bad) -> None:
    assert _code(F.normalize_fact, bad) == "HARN-FACT-001"
    if bad is not None:
        assert _code(F.normalize_fact, GOOD, bad) == "HARN-FACT-001"


def test_validation_order_and_message_format() -> None:
    # kind is checked before claim, claim before confidence (Harn's order)
    assert _code(F.normalize_fact, {"kind": "nope"}) == "HARN-FACT-002"
    assert _code(F.normalize_fact, {"kind": "claim"}) == "HARN-FACT-003"
    assert _code(F.normalize_fact, {"kind": "claim", "claim": "c"}) == "HARN-FACT-004"
    with pytest.raises(F.FactError) as info:
        F.normalize_fact({**GOOD, "kind": "Guess"})
    assert str(info.value) == "HARN-FACT-002: std/agent/fact: unknown kind `Guess`"
    assert info.value.message == "unknown kind `Guess`"


def test_validate_requires_asserted_at() -> None:
    base = {k: v for k, v in GOOD.items() if k != "asserted_at"}
    assert _code(F.validate_fact, base) == "HARN-FACT-009"
    assert _code(F.validate_fact, {**base, "asserted_at": "  "}) == "HARN-FACT-009"
    assert F.validate_fact(GOOD)["asserted_at"] == GOOD["asserted_at"]


def test_fact_id_errors_and_normalization() -> None:
    assert _code(F.fact_id, "guess", "c") == "HARN-FACT-002"
    assert _code(F.fact_id, "claim", "c", "not-a-list") == "HARN-FACT-005"
    assert _code(F.fact_id, "claim", "c", None, "not-a-dict") == "HARN-FACT-006"
    assert F.fact_id("Claim", "  c ", None, None) == F.fact_id("claim", "c", [], {})
    # dict key order of provenance does not matter (json_stringify sorts)
    assert F.fact_id("claim", "c", [], {"a": 1, "b": 2}) == F.fact_id("claim", "c", [], {"b": 2, "a": 1})


@pytest.mark.parametrize(
    "scope, ns",
    [(None, "project/facts"), ("", "project/facts"), ("project", "project/facts"), (" PROJECT ", "project/facts"),
     ("workspace", "workspace/facts"), ("User", "user/facts"), (" team/Notes ", "team/Notes")],
)
def test_fact_namespace(scope, ns: str) -> None:
    assert F.fact_namespace(scope) == ns


# -- file_range refs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("README.md:1-3", F.FileRange("README.md", 1, 3)),
        ("src/memory.rs:441", F.FileRange("src/memory.rs", 441, 441)),
        ("./src/a.py:2-2", F.FileRange("src/a.py", 2, 2)),
        ("src/../README.md:4", F.FileRange("README.md", 4, 4)),
        ("/proj/src/a.py:10-20", F.FileRange("src/a.py", 10, 20)),
        ("dir with space/a b.py:7", F.FileRange("dir with space/a b.py", 7, 7)),
        ("C:/x.py:3", F.FileRange("C:/x.py", 3, 3)),
        ("a.py:1:5", F.FileRange("a.py:1", 5, 5)),  # the §D.2 regex: the last number is the line
        ("ünï/ß.md:9", F.FileRange("ünï/ß.md", 9, 9)),
    ],
)
def test_parse_file_range(ref: str, expected: F.FileRange) -> None:
    assert F.parse_file_range(ref, ROOT) == expected
    assert F.parse_file_range(ref, ROOT + "/") == expected


@pytest.mark.parametrize(
    "ref",
    [
        "../secret.txt:1",
        "src/../../secret.txt:1-2",
        "/etc/passwd:1",
        "/project2/a.py:1",  # shares the root's prefix but is outside
        "/proj:1",
        ".:1",
        "src/..:3",
        "README.md",
        "README.md:",
        "README.md:x",
        ":3",
        "README.md:0",
        "README.md:0-2",
        "README.md:5-3",
        "README.md:1-",
        "README.md:-1",
        "a\x00b:1",
        "",
    ],
)
def test_parse_file_range_rejects(ref: str) -> None:
    assert F.parse_file_range(ref, ROOT) is None


def _normpath_file_range(ref: str, project_root: str):
    """parse_file_range as it was written before its fast path: every path through normpath."""
    import posixpath
    import re

    m = re.match(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$", ref, re.DOTALL)
    if m is None:
        return None
    start = int(m.group("start"))
    end = int(m.group("end")) if m.group("end") is not None else start
    raw = m.group("path")
    if start < 1 or end < start or "\x00" in raw:
        return None
    root = posixpath.normpath(project_root.replace("\\", "/")) if project_root else "/"
    full = posixpath.normpath(raw if posixpath.isabs(raw) else posixpath.join(root, raw))
    if root == "/":
        rel = full.lstrip("/")
    elif full.startswith(root + "/"):
        rel = full[len(root) + 1:]
    else:
        return None
    return None if rel in ("", ".") else F.FileRange(rel, start, end)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["src", "a.py", "", ".", "..", "...", ".a", "a.", "proj", "proj-evil", "x y", "\\"]),
                min_size=1, max_size=6),
       st.sampled_from(["", "/"]), st.sampled_from([ROOT, ROOT + "/", "/", "/work/proj"]), st.integers(1, 3))
def test_parse_file_range_fast_path_agrees_with_normpath(segments, lead, root, start):
    """A path already in normal form skips normpath: every path gives what normpath gives."""
    ref = f"{lead}{'/'.join(segments)}:{start}-{start + 1}"
    assert F.parse_file_range(ref, root) == _normpath_file_range(ref, root), ref


def test_parse_file_range_non_string() -> None:
    assert F.parse_file_range(None, ROOT) is None  # type: ignore[arg-type]


# -- facts from memory records ------------------------------------------------------------------


def _record(value, *, rid="fact_x", key="fact:claim:fact_x", line_no=7) -> MemoryRecord:
    return memory_record(id=rid, namespace="project/facts", key=key, value=value, text="", tags=(),
                        stored_at="2026-05-02T09:20:11Z", seq=0, line_no=line_no)


@pytest.mark.parametrize("value", ["text", 5, None, [1], {"kind": "claim"}, {"schema": "harn.fact.v2", "kind": "claim"},
                                   {"schema": "HARN.FACT.V1"}])
def test_non_fact_records_are_ignored(value) -> None:
    assert F.fact_from_record(_record(value), ROOT, EVENTS) == (None, [])


def test_fact_from_record_normalizes_like_fact_validate() -> None:
    value = {**GOOD, "schema": "harn.fact.v1", "kind": "Claim", "id": "fact_given",
             "evidence": [{"kind": "FileRange", "ref": "/proj/src/a.py:3-4", "snippet": "x"},
                          {"kind": "tool_output", "ref": "probe_0123456789abcdef"},
                          {"kind": "file_range", "ref": "../outside.py:1"}]}
    fact, problems = F.fact_from_record(_record(value), ROOT, EVENTS)
    assert problems == []
    assert fact.id == "fact_given" and fact.kind == "claim" and fact.claim == GOOD["claim"]
    assert fact.evidence[0] == F.Evidence("file_range", "/proj/src/a.py:3-4", "x", F.FileRange("src/a.py", 3, 4))
    assert fact.evidence[1] == F.Evidence("tool_output", "probe_0123456789abcdef", None, None)
    assert fact.evidence[2].range is None  # escapes the project: shown as an opaque label
    assert fact.provenance == GOOD["provenance"] and fact.valid_until is None
    assert (fact.record_id, fact.memory_key, fact.line_no) == ("fact_x", "fact:claim:fact_x", 7)


@pytest.mark.parametrize(
    "patch, code",
    [
        ({"confidence": "high"}, "HARN-FACT-004"),
        ({"confidence": 7}, "HARN-FACT-004"),
        ({"kind": "rumour"}, "HARN-FACT-002"),
        ({"claim": ""}, "HARN-FACT-003"),
        ({"evidence": "README.md"}, "HARN-FACT-005"),
        ({"provenance": "codex"}, "HARN-FACT-006"),
        ({"valid_until": {"event": "x"}}, "HARN-FACT-007"),
        ({"asserted_at": None}, "HARN-FACT-009"),
    ],
)
def test_invalid_stored_fact_becomes_problem(patch: dict, code: str) -> None:
    value = {**GOOD, "schema": "harn.fact.v1", **patch}
    fact, problems = F.fact_from_record(_record(value, line_no=12), ROOT, EVENTS)
    assert fact is None
    (problem,) = problems
    assert problem.code == code
    assert problem.line == 12 and problem.path == EVENTS
    assert problem.severity == Severity.WARNING
    assert "recall_facts skips" in problem.message


def _facts_from_records(records, project_root: str, path: str):
    """Every record through fact_from_record, as Workspace does when it loads a facts namespace."""
    facts, problems = [], []
    for record in records:
        fact, probs = F.fact_from_record(record, project_root, path)
        if fact is not None:
            facts.append(fact)
        problems.extend(probs)
    return facts, problems


def test_facts_from_records_bulk_is_fast() -> None:
    records = []
    for i in range(10_000):
        env = F.normalize_fact({**GOOD, "claim": f"claim {i}", "evidence": [
            {"kind": "file_range", "ref": f"src/m{i % 50}.py:{i % 300 + 1}-{i % 300 + 5}"}]})
        records.append(_record(env, rid=env["id"], key=F.fact_key("claim", env["id"]), line_no=i + 1))
    records.append(_record({**GOOD, "schema": "harn.fact.v1", "confidence": "x"}, line_no=10_001))
    started = time.thread_time()  # this thread's CPU time: the work itself, whatever else the machine runs
    facts, problems = _facts_from_records(records, ROOT, EVENTS)
    elapsed = time.thread_time() - started
    assert len(facts) == 10_000 and [p.line for p in problems] == [10_001]
    assert facts[123].evidence[0].range == F.FileRange("src/m23.py", 124, 128)
    assert elapsed < 2.0, f"10k facts took {elapsed:.2f}s"
