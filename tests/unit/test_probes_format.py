"""Probe strings/ids (harn.probe.v1, §D.6) and `harn check --json` reading (§I, §K.4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harn_ls.formats import facts as F
from harn_ls.formats import probes as P
from harn_ls.util.text_positions import ByteIndex
from tests.helpers.samples import SAMPLES  # noqa: E402
from tests.oracles import probes as PO

ID_VECTORS = SAMPLES / "id-vectors.json"
CHECK_VECTORS = SAMPLES / "check-json-vectors.json"
LINT_FIXTURES = SAMPLES / "lint-json/crates/harn-cli/src/commands/check/lint_json_fixtures"

# §I.4 example envelope
I4_SOURCE = 'pipeline main() {\n  let x: int = "oops"\n}\n'
I4_STDOUT = """{
  "schemaVersion": 1,
  "ok": false,
  "data": {
    "files": [
      {
        "path": "src/main.harn",
        "status": "error",
        "diagnostics": [
          {
            "source": "type",
            "severity": "error",
            "code": "HARN-TYP-001",
            "message": "type mismatch: expected int, found string",
            "span": {
              "start": 33,
              "end": 39
            },
            "help": "change the annotation or convert the value"
          }
        ]
      }
    ],
    "summary": {
      "ok": 0,
      "warnings": 0,
      "errors": 1,
      "diagnostics": 1
    }
  },
  "error": {
    "code": "check_failed",
    "message": "one or more files failed `harn check`",
    "details": null
  },
  "warnings": []
}
"""


def byte_span_to_lsp(text: str, start: int, end: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """((line, utf16 col), (line, utf16 col)) for a `harn check --json` byte span."""
    index = ByteIndex(text)
    return index.position(start), index.position(end)


def _load(path: Path) -> dict:
    if not path.exists():
        pytest.skip(f"{path} is missing (shared Harn test vectors)")
    return json.loads(path.read_text())


def _vectors() -> dict:
    return {v["id"]: v for v in _load(ID_VECTORS)["vectors"]}


def _probe_vectors() -> list[dict]:
    return [v for v in _vectors().values() if v["category"] == "probe_trace_id"]


# -- trace ids, observed strings, auto-stored facts ------------------------------------------


def test_probe_vectors_present() -> None:
    ids = {v["id"] for v in _probe_vectors()}
    assert {"probe-eval-pass", "probe-eval-exit-fail", "probe-unsupported-test", "probe-no-fact"} <= ids


def _observed_for(vector: dict) -> tuple[str, str]:
    """Rebuild (observed, outcome) from the vector's inputs and assumed process result."""
    kind, body = vector["input"]["kind"], vector["input"]["body"]
    if kind != "eval":
        return PO.unsupported_observed(kind), "unknown"
    proc = vector["computed"].get("assumed_process_result")
    if proc is None:  # probe-no-fact states no process result: `echo skipped` prints "skipped"
        proc = {"stdout": body.removeprefix("echo ") + "\n", "exit_code": 0}
    expected = "expected" if vector["id"] == "probe-eval-expected-mismatch" else None
    outcome = PO.eval_outcome(success=proc["exit_code"] == 0, stdout=proc.get("stdout", ""), expected=expected)
    return PO.eval_observed(proc["exit_code"], outcome, proc.get("stdout"), proc.get("stderr")), outcome


@pytest.mark.parametrize("vid", ["probe-eval-pass", "probe-eval-expected-mismatch", "probe-eval-exit-fail",
                                 "probe-unsupported-test", "probe-unsupported-inspect", "probe-format-doc-echo-hi",
                                 "probe-no-fact"])
def test_probe_vector(vid: str) -> None:
    v = _vectors()[vid]
    kind, body, comp = v["input"]["kind"], v["input"]["body"], v["computed"]
    observed, outcome = _observed_for(v)
    assert observed == comp["observed"]
    if "trace_seed" in comp:
        assert f"{kind}\n{body}\n{observed}" == comp["trace_seed"]
    assert P.probe_trace_id(kind, body, observed) == comp["trace_id"]
    for key in ("outcome",):
        if key in v.get("asserted", {}):
            assert outcome == v["asserted"][key]
    auto = comp.get("auto_fact")
    if auto is None:
        return
    lang = "shell" if kind == "eval" else None  # eval probes record the resolved lang
    command = P.probe_truncate(body, PO.COMMAND_LIMIT) if kind == "eval" else None
    fact_input = P.probe_fact_input(kind, body, outcome, observed, lang=lang, command=command)
    assert fact_input["kind"] == auto["kind"]
    assert fact_input["claim"] == auto["claim"]
    assert fact_input["confidence"] == auto["confidence"]
    assert fact_input["evidence"] == auto["evidence"]
    assert fact_input["provenance"] == auto["provenance"]
    envelope = F.normalize_fact(fact_input, now="2026-05-02T09:31:07.118Z")
    assert envelope["id"] == auto["fact_id"]
    assert F.fact_id(auto["kind"], auto["claim"], auto["evidence"], auto["provenance"]) == auto["fact_id"]


def test_probe_recalled_claims_use_the_arrow() -> None:
    note = _vectors()["probe-recalled-observation-facts"]["note"]
    assert "→" in note
    assert P.probe_claim("eval", "echo hi", "pass") == "probe eval `echo hi` → pass"


def test_probe_envelope_example_from_spec() -> None:
    observed = PO.eval_observed(0, "pass", "hi\n", "")
    evidence = P.probe_evidence("eval", "echo hi", observed, command="echo hi", stdout="hi\n", stderr="",
                                exit_code=0, duration_ms=12)
    assert evidence == {"command": "echo hi", "duration_ms": 12, "exit_code": 0, "snippet": "echo hi",
                        "stdout": "hi\n", "trace_id": "probe_376355e9696278dc"}
    env = P.probe_envelope("eval", "pass", observed, evidence, "2026-05-02T09:31:07.118Z",
                           fact_id="fact_11bbbaa7d8cafe99c2d8e9d307ca844d")
    assert env["schema"] == "harn.probe.v1" and "expected" not in env
    assert env["fact_id"] == "fact_11bbbaa7d8cafe99c2d8e9d307ca844d"
    unsupported = P.probe_evidence("test", "anything", PO.unsupported_observed("test"), ran=False)
    assert unsupported == {"snippet": "anything", "trace_id": "probe_498080ee9a49aa47"}
    assert P.probe_evidence("eval", "x", "o", timed_out=True)["timed_out"] is True


# -- truncation and claims ------------------------------------------------------------------


def test_truncate_counts_characters_and_appends_marker() -> None:
    assert P.probe_truncate("abc", 3) == "abc"
    assert P.probe_truncate("abcd", 3) == "abc\n…[truncated 1 bytes]"
    assert P.probe_truncate("é" * 5, 2) == "éé\n…[truncated 3 bytes]"
    assert P.probe_truncate(None, 3) == ""


def test_claim_keeps_at_most_120_characters_and_never_splits_one() -> None:
    body = "🚀" * 130
    claim = P.probe_claim("typecheck", body, "fail")
    assert claim == "probe typecheck `" + "🚀" * 120 + " …[truncated 10 bytes]` → fail"
    claim.encode("utf-8")  # whole characters only


def test_claim_trims_and_flattens_newlines() -> None:
    assert P.probe_claim("eval", "  echo a\necho b\n", "pass") == "probe eval `echo a echo b` → pass"
    assert P.probe_claim("eval", "x" * 120, "pass") == "probe eval `" + "x" * 120 + "` → pass"


def test_claim_of_a_body_beyond_the_capture_limit() -> None:
    body = "y" * 5000
    claim = P.probe_claim("eval", body, "pass")
    # the 4096-char snippet plus its 23-char marker (4119 chars) is what gets cut to 120
    assert claim == "probe eval `" + "y" * 120 + " …[truncated 3999 bytes]` → pass"


def test_observed_eval_variants() -> None:
    assert PO.eval_observed(None, "fail") == "eval exit=? outcome=fail"
    assert PO.eval_observed(2, "fail", "  ", " boom \n") == "eval exit=2 outcome=fail stderr=boom"
    long = PO.eval_observed(0, "pass", "z" * 300)
    assert long == "eval exit=0 outcome=pass stdout=" + "z" * 240 + "\n…[truncated 60 bytes]"


# -- validation codes ---------------------------------------------------------------------------


def test_probe_validation_vector() -> None:
    cases = _vectors()["probe-validation-codes"]["asserted"]
    calls = {
        'probe(harness, "guess", "echo x")': lambda: PO.normalize_probe_kind("guess"),
        'probe(harness, "eval", "")': lambda: PO.check_probe_body(""),
        'probe_eval(harness, "echo x", {lang: "python"})': lambda: PO.normalize_probe_lang("python"),
    }
    for case in cases:
        with pytest.raises(PO.ProbeError) as info:
            calls[case["call"]]()
        assert case["error_contains"] in str(info.value)


def test_probe_kind_and_lang_normalization() -> None:
    assert PO.normalize_probe_kind(" Eval ") == "eval"
    assert PO.normalize_probe_kind("Inspect") == "inspect"
    assert PO.normalize_probe_kind("TYPECHECK") == "typecheck"
    for bad in (None, "", "  ", 5):
        with pytest.raises(PO.ProbeError):
            PO.normalize_probe_kind(bad)
    assert PO.normalize_probe_lang(None) == "shell" and PO.normalize_probe_lang(" HARN ") == "harn"
    assert PO.check_probe_body("  x ") == "  x "  # the body is not trimmed (it feeds the trace id)
    with pytest.raises(PO.ProbeError):
        PO.check_probe_body(" \n ")


# -- typecheck outcome ------------------------------------------------------------------------


def test_typecheck_counts_and_outcome_from_spec_envelope() -> None:
    counts = P.typecheck_counts(I4_STDOUT)
    assert counts == P.TypecheckCounts(parsed=True, errors=1, warnings=0, envelope_ok=False)
    outcome = P.typecheck_outcome(counts, success=False)
    assert outcome == "fail"
    assert P.typecheck_observed_for(counts, outcome) == "typecheck outcome=fail errors=1 warnings=0"
    # expected: 1 passes (probe-typecheck vector, third case)
    assert P.typecheck_outcome(counts, success=False, expected=1) == "pass"
    assert P.typecheck_outcome(counts, success=False, expected=1.0) == "pass"
    assert P.typecheck_outcome(counts, success=False, expected=0) == "fail"


def test_typecheck_vector_observed_shapes() -> None:
    for case in _vectors()["probe-typecheck"]["asserted"]:
        errors = 0 if case["outcome"] == "pass" and "options" not in case else 1
        counts = P.TypecheckCounts(parsed=True, errors=errors, warnings=0)
        expected = case.get("options", {}).get("expected")
        outcome = P.typecheck_outcome(counts, success=errors == 0, expected=expected)
        assert outcome == case["outcome"]
        if "observed contains" in case:
            assert case["observed contains"] in P.typecheck_observed_for(counts, outcome)


def test_typecheck_without_json() -> None:
    counts = P.typecheck_counts("error: harn not found\n")
    assert not counts.parsed
    assert P.typecheck_outcome(counts, success=False) == "fail"
    assert P.typecheck_outcome(counts, success=True) == "pass"  # falls back to the exit status
    assert P.typecheck_observed_for(counts, "fail") == "typecheck outcome=fail (no JSON envelope)"
    assert P.typecheck_observed_for(counts, "pass") == "typecheck outcome=pass (no JSON envelope)"


def test_typecheck_json_without_summary_uses_exit_status() -> None:
    counts = P.typecheck_counts('{"ok": true}')
    assert counts.parsed and counts.errors == -1 and counts.warnings == -1
    assert P.typecheck_outcome(counts, success=True) == "pass"
    assert P.typecheck_observed_for(counts, "pass") == "typecheck outcome=pass errors=-1 warnings=-1"
    assert P.typecheck_counts('{"summary": {"errors": 0, "warnings": 2}}').errors == 0  # top-level summary
    assert P.typecheck_counts("[1, 2]") == P.TypecheckCounts(parsed=True)
    assert P.typecheck_outcome(counts, success=True, timed_out=True) == "fail"


def test_eval_outcome_rules() -> None:
    assert PO.eval_outcome(success=True) == "pass"
    assert PO.eval_outcome(success=False) == "fail"
    assert PO.eval_outcome(success=True, stdout=" hi \n", expected="hi") == "pass"
    assert PO.eval_outcome(success=True, stdout="1\n", expected=1) == "fail"  # §D.6: int expected never matches
    assert PO.eval_outcome(success=True, timed_out=True) == "fail"


def test_commands_and_provenance() -> None:
    assert P.typecheck_command() == "harn check <snippet> --json"
    assert P.typecheck_command("/opt/harn") == "/opt/harn check <snippet> --json"
    assert PO.harn_eval_command() == "harn run <snippet>"
    prov = P.probe_provenance("typecheck", None, P.typecheck_command(), {"editor": "vscode", "source": "x"})
    assert prov == {"command": "harn check <snippet> --json", "editor": "vscode", "probe_kind": "typecheck",
                    "source": "x"}
    assert P.probe_provenance("eval", "shell", "") == {"lang": "shell", "probe_kind": "eval", "source": "probe"}


def test_typecheck_probe_fact_is_a_valid_observation() -> None:
    observed = P.typecheck_observed_for(P.TypecheckCounts(True, 1, 0), "fail")
    fact_input = P.probe_fact_input("typecheck", 'let x: int = "oops"\n', "fail", observed,
                                    command=P.typecheck_command())
    env = F.normalize_fact(fact_input, {"now": "2026-05-02T09:31:07.118Z"})
    assert env["kind"] == "observation" and env["confidence"] == 0.9
    assert env["claim"] == 'probe typecheck `let x: int = "oops"` → fail'
    assert env["evidence"][0]["ref"] == P.probe_trace_id("typecheck", 'let x: int = "oops"\n', observed)
    assert env["asserted_at"] == "2026-05-02T09:31:07.118Z"
    event = F.fact_store_event(env, "project/facts", "2026-05-02T09:31:07.118Z")
    assert "fact:observation:evidence:tool_output" in event["tags"]


# -- harn check --json -------------------------------------------------------------------------


def test_parse_check_envelope_spec_example() -> None:
    env = P.parse_check_envelope(I4_STDOUT)
    assert env is not None and env.issues == []
    assert env.schema_version == 1 and env.ok is False
    assert env.error == {"code": "check_failed", "message": "one or more files failed `harn check`", "details": None}
    (file,) = env.files
    assert file.path == "src/main.harn" and file.status == "error"
    (diag,) = file.diagnostics
    assert diag == P.CheckDiagnostic(source="type", severity="error", code="HARN-TYP-001",
                                     message="type mismatch: expected int, found string", span=(33, 39),
                                     help="change the annotation or convert the value")
    assert env.summary == P.CheckSummary(ok=0, warnings=0, errors=1, diagnostics=1)
    assert byte_span_to_lsp(I4_SOURCE, *diag.span) == ((1, 15), (1, 21))


@pytest.mark.parametrize("name", ["warning_ok", "lint_failed_with_data", "multiline_utf8_span", "changed_scope"])
def test_lint_positive_fixtures_read_cleanly(name: str) -> None:
    path = LINT_FIXTURES / "positive" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    env = P.parse_check_envelope(path.read_text())
    assert env is not None and env.issues == [], env.issues
    assert env.files and env.summary is not None
    if name == "multiline_utf8_span":
        assert env.files[0].diagnostics[0].span == (11, 24)
        assert env.files[0].diagnostics[0].help == "prefix with `_` or remove"


@pytest.mark.parametrize(
    "name, issue",
    [
        ("unsupported_schema_version", "schemaVersion"),
        ("invalid_severity", "invalid severity"),
        ("invalid_span", "invalid span"),
        ("inconsistent_aggregate", "summary does not match"),
        ("inconsistent_status", "status 'ok' but diagnostics imply 'error'"),
    ],
)
def test_lint_adversarial_fixtures_are_tolerated_and_flagged(name: str, issue: str) -> None:
    path = LINT_FIXTURES / "adversarial" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    env = P.parse_check_envelope(path.read_text())
    assert env is not None
    assert any(issue in i for i in env.issues), env.issues
    if name == "invalid_span":
        assert env.files[0].diagnostics[0].span is None
    if name == "invalid_severity":
        assert env.files[0].diagnostics[0].severity == "critical"


def test_decoder_contract_inline_examples() -> None:
    vectors = {v["id"]: v for v in _load(CHECK_VECTORS)["vectors"]}
    for doc in vectors["lint-json-schema-inline-examples"]["asserted_valid_envelopes"]:
        env = P.parse_check_envelope(json.dumps(doc))
        assert env is not None and env.issues == []
    for case in vectors["envelope-assert-helper"]["asserted_examples"]:
        env = P.parse_check_envelope(json.dumps(case["envelope"]))
        assert env is not None
        problems = [i for i in env.issues if "summary" not in i and "data" not in i]
        if case["valid"] and case["expected_version"] == 1:
            assert problems == [], case
        elif not case["valid"] and case["expected_version"] == 1:
            assert problems, case


@pytest.mark.parametrize("stdout", ["", "{not json", "[]", "null", "no braces here", "}{"])
def test_parse_check_envelope_rejects_non_objects(stdout: str) -> None:
    assert P.parse_check_envelope(stdout) is None


def test_parse_check_envelope_tolerates_noise_and_junk_entries() -> None:
    doc = json.loads(I4_STDOUT)
    doc["data"]["files"].insert(0, "junk")
    doc["data"]["files"][1]["diagnostics"].append({"severity": "warning"})
    doc["data"]["files"][1]["diagnostics"].append(7)
    env = P.parse_check_envelope("warning: cached\n" + json.dumps(doc) + "\ntrailing log")
    assert env is not None
    assert len(env.files) == 1 and len(env.files[0].diagnostics) == 2
    assert env.files[0].diagnostics[1].message == ""
    assert any("files[0]" in i for i in env.issues)
    assert any("message missing" in i for i in env.issues)


# -- byte offsets -> LSP ------------------------------------------------------------------------


def test_byte_span_utf16_columns() -> None:
    text = "a🚀é\nxyz"
    # a=1 byte, 🚀=4 bytes (2 UTF-16 units), é=2 bytes
    assert byte_span_to_lsp(text, 1, 5) == ((0, 1), (0, 3))
    assert byte_span_to_lsp(text, 5, 7) == ((0, 3), (0, 4))
    assert byte_span_to_lsp(text, 8, 11) == ((1, 0), (1, 3))


def test_byte_span_clamps_and_snaps() -> None:
    text = "é🚀\n"
    assert byte_span_to_lsp(text, 1, 3) == ((0, 0), (0, 1))  # inside é / inside 🚀 -> char starts
    assert byte_span_to_lsp(text, -5, 999) == ((0, 0), (1, 0))
    assert byte_span_to_lsp("", 0, 3) == ((0, 0), (0, 0))


def test_byte_span_line_breaks() -> None:
    text = "ab\r\ncd\ref\ngh"
    m = ByteIndex(text)
    assert m.position(4) == (1, 0)
    assert m.position(7) == (2, 0)  # a lone \r ends a line in LSP
    assert m.position(11) == (3, 1)
    assert m.position(2) == (0, 2)


def test_multiline_span() -> None:
    text = "let 🚀 = 1\nlet unused = 2\n"
    start = text.encode().index(b"unused")
    assert byte_span_to_lsp(text, 4, start + 6) == ((0, 4), (1, 10))
