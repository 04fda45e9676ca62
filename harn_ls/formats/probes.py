"""Probes (`harn.probe.v1`, harn-formats §D.6) and `harn check --json` (§I).

A probe is never persisted by itself; what reaches disk is the observation
fact it auto-stores. These helpers rebuild, exactly as std/agent/probe does,
the strings that feed ids (observed text, trace id, claim) so a typecheck
probe run from the editor stores the same fact Harn would.

Harn's `len`/`substring` count Unicode scalar values (Rust `chars()`), so the
"byte" budgets in probe.harn (120 for claims, 240, 1024, 4096) are really
character counts; the truncation marker nevertheless says "bytes". Python
`str` indexing counts the same units, so slicing never splits a character.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from harn_ls.formats.facts import fact_namespace, fact_store_event, filter_nil, harn_display, normalize_fact
from harn_ls.formats.harn_json import sha256_hex
from harn_ls.util.rust_text import rust_trim

PROBE_SCHEMA = "harn.probe.v1"
PROBE_CAPTURE_LIMIT = 4096
CLAIM_LIMIT = 120
OBSERVED_SNIPPET_LIMIT = 1024
TYPECHECK = "typecheck"  # the probe kind harn-ls runs
PROBE_FACT_NAMESPACE = fact_namespace()  # where a probe stores its fact: Harn's default (project) scope


def _probe_text(value: Any) -> str:
    """`__probe_text`: nil -> "", strings as is (not trimmed), else display."""
    if value is None:
        return ""
    return value if isinstance(value, str) else harn_display(value)


def probe_truncate(value: Any, limit: int) -> str:
    """`__probe_truncate`: first `limit` chars plus `\\n…[truncated N bytes]` (N in chars)."""
    text = _probe_text(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n…[truncated {len(text) - limit} bytes]"


# -- ids and strings -------------------------------------------------------------------


def probe_trace_id(kind: str, body: str, observed: str) -> str:
    return "probe_" + sha256_hex(f"{kind}\n{body}\n{observed}")[:16]


def typecheck_command(harn_binary: str = "harn") -> str:
    """The `command` Harn records for a typecheck probe (the temp path is literally `<snippet>`)."""
    return f"{harn_binary} check <snippet> --json"


def probe_claim(kind: str, body: str, outcome: str) -> str:
    """'probe <kind> `<first 120 chars of the trimmed snippet, \\n -> space>` → <outcome>'.

    The snippet is the body truncated to 4096 chars; a longer snippet keeps
    Harn's truncation marker (newline turned into a space) inside the backticks.
    """
    snippet = probe_truncate(body, PROBE_CAPTURE_LIMIT)
    short = probe_truncate(rust_trim(snippet), CLAIM_LIMIT)
    return f"probe {kind} `{short.replace(chr(10), ' ')}` → {outcome}"


def probe_provenance(kind: str, lang: Any = None, command: Any = None, extra: Any = None) -> dict[str, Any]:
    prov: dict[str, Any] = {"probe_kind": kind, "source": "probe"}
    if lang is not None:
        prov["lang"] = lang
    if command is not None and command != "":
        prov["command"] = command
    if isinstance(extra, dict):
        prov.update(extra)
    return dict(sorted(prov.items()))


def probe_fact_input(kind: str, body: str, outcome: str, observed: str, *, lang: Any = None,
                     command: Any = None, provenance: Any = None) -> dict[str, Any]:
    """The fact input `__probe_store_fact` hands to `store_fact` (before normalization).

    `lang` is what Harn puts there: the resolved lang for eval probes, the
    caller's raw `options.lang` (usually nil) for the others.
    """
    return {
        "claim": probe_claim(kind, body, outcome),
        "confidence": 0.4 if outcome == "unknown" else 0.9,
        "evidence": [{
            "kind": "tool_output",
            "ref": probe_trace_id(kind, body, observed),
            "snippet": probe_truncate(observed, OBSERVED_SNIPPET_LIMIT),
        }],
        "kind": "observation",
        "provenance": probe_provenance(kind, lang, command, provenance),
    }


def probe_evidence(kind: str, body: str, observed: str, *, command: str | None = None, ran: bool = True,
                   stdout: str | None = None, stderr: str | None = None, exit_code: int | None = None,
                   duration_ms: int | None = None, timed_out: bool = False) -> dict[str, Any]:
    """The envelope's `evidence` dict (empty entries dropped). `ran=False` for unsupported kinds."""
    return filter_nil({
        "command": command,
        "duration_ms": duration_ms,
        "exit_code": exit_code,
        "snippet": probe_truncate(body, PROBE_CAPTURE_LIMIT),
        "stderr": probe_truncate(stderr or "", PROBE_CAPTURE_LIMIT) if ran else None,
        "stdout": probe_truncate(stdout or "", PROBE_CAPTURE_LIMIT) if ran else None,
        "timed_out": True if timed_out else None,
        "trace_id": probe_trace_id(kind, body, observed),
    })


def probe_envelope(kind: str, outcome: str, observed: str, evidence: dict[str, Any], asserted_at: str, *,
                   fact_id: str | None = None, expected: Any = None) -> dict[str, Any]:
    return filter_nil({
        "asserted_at": asserted_at,
        "evidence": evidence,
        "expected": expected,
        "fact_id": fact_id,
        "kind": kind,
        "observed": observed,
        "outcome": outcome,
        "schema": PROBE_SCHEMA,
    })


# -- outcomes ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypecheckCounts:
    """The counts a typecheck envelope's summary gives, as printed."""

    parsed: bool
    errors: Any = -1  # summary.errors as printed (files with errors), -1 when absent
    warnings: Any = -1
    envelope_ok: Any = None


def typecheck_counts(stdout: str) -> TypecheckCounts:
    """`__probe_typecheck_diagnostics`: strict JSON parse, then data.summary ?? summary."""
    try:
        envelope = orjson.loads(stdout.encode("utf-8", "surrogatepass"))
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return TypecheckCounts(parsed=False)
    if not isinstance(envelope, dict):
        return TypecheckCounts(parsed=True)
    data = envelope.get("data")
    summary = data.get("summary") if isinstance(data, dict) else None
    if summary is None:
        summary = envelope.get("summary")
    if not isinstance(summary, dict):
        summary = {}
    errors = summary.get("errors")
    warnings = summary.get("warnings")
    return TypecheckCounts(
        parsed=True,
        errors=-1 if errors is None else errors,
        warnings=-1 if warnings is None else warnings,
        envelope_ok=envelope.get("ok"),
    )


def _compare_expected(observed: dict[str, Any], expected: Any, kind: str) -> str:
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if kind == "typecheck":
            errors = observed.get("errors")
            ok = isinstance(errors, (int, float)) and not isinstance(errors, bool) and errors == expected
            return "pass" if ok else "fail"
        return "fail"  # eval compares a number against a dict: never equal (§D.6)
    text = observed.get("stdout")
    return "pass" if rust_trim(text or "") == rust_trim(_probe_text(expected)) else "fail"


def typecheck_outcome(counts: TypecheckCounts, *, success: bool, timed_out: bool = False, expected: Any = None) -> str:
    if timed_out:
        return "fail"
    if not counts.parsed and not success:
        return "fail"
    if expected is not None:
        return _compare_expected({"errors": counts.errors}, expected, "typecheck")
    errors = counts.errors
    if not isinstance(errors, (int, float)) or isinstance(errors, bool) or errors < 0:
        return "pass" if success else "fail"
    return "pass" if errors == 0 else "fail"


def typecheck_observed_for(counts: TypecheckCounts, outcome: str) -> str:
    """The observed text: the counts `harn check --json` printed (-1 = count unknown), or that
    stdout was not JSON at all."""
    if not counts.parsed:
        return f"typecheck outcome={outcome} (no JSON envelope)"
    return f"typecheck outcome={outcome} errors={harn_display(counts.errors)} warnings={harn_display(counts.warnings)}"


# -- harn check --json --------------------------------------------------------------------

SEVERITIES = ("error", "warning", "info")


@dataclass(slots=True)
class CheckDiagnostic:
    """One diagnostic of `harn check --json`."""

    source: str
    severity: str  # error | warning | info (anything else is kept and reported in issues)
    message: str
    code: str | None = None
    span: tuple[int, int] | None = None  # UTF-8 byte offsets, half-open
    help: str | None = None


@dataclass(slots=True)
class CheckFile:
    """One file of `harn check --json`, with its diagnostics."""

    path: str
    status: str  # ok | warning | error
    diagnostics: list[CheckDiagnostic] = field(default_factory=list)


@dataclass(slots=True)
class CheckSummary:
    """The summary counts of `harn check --json`."""

    ok: int
    warnings: int
    errors: int  # files whose status is error, not a diagnostic count
    diagnostics: int


@dataclass(slots=True)
class CheckEnvelope:
    """`harn check --json` as read, with every deviation from its contract noted."""

    schema_version: int | None
    ok: bool | None
    files: list[CheckFile] = field(default_factory=list)
    summary: CheckSummary | None = None
    error: dict[str, Any] | None = None  # {code, message, details}
    warnings: list[dict[str, Any]] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)  # contract deviations found while reading


def _loads_tolerant(stdout: str) -> Any:
    try:
        return orjson.loads(stdout.encode("utf-8", "surrogatepass"))
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        pass
    # stray text around the envelope (a wrapper's log line): take the outermost object
    start, end = stdout.find("{"), stdout.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return orjson.loads(stdout[start:end + 1].encode("utf-8", "surrogatepass"))
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _diagnostic(raw: Any, where: str, issues: list[str]) -> CheckDiagnostic | None:
    if not isinstance(raw, dict):
        issues.append(f"{where}: diagnostic is not an object")
        return None
    severity = raw.get("severity")
    if severity not in SEVERITIES:
        issues.append(f"{where}: invalid severity {severity!r}")
        severity = harn_display(severity) if severity is not None else "error"
    message = raw.get("message")
    if not isinstance(message, str):
        issues.append(f"{where}: message missing or not a string")
        message = "" if message is None else harn_display(message)
    span = None
    raw_span = raw.get("span")
    if raw_span is not None:
        start = _int(raw_span.get("start")) if isinstance(raw_span, dict) else None
        end = _int(raw_span.get("end")) if isinstance(raw_span, dict) else None
        if start is None or end is None or start < 0 or end < start:
            issues.append(f"{where}: invalid span {raw_span!r}")
        else:
            span = (start, end)
    return CheckDiagnostic(
        source=_opt_str(raw.get("source")) or "",
        severity=severity,
        message=message,
        code=_opt_str(raw.get("code")),
        span=span,
        help=_opt_str(raw.get("help")),
    )


def _expected_status(diags: list[CheckDiagnostic]) -> str:
    severities = {d.severity for d in diags}
    if "error" in severities:
        return "error"
    if "warning" in severities:
        return "warning"
    return "ok"


def parse_check_envelope(stdout: str) -> CheckEnvelope | None:
    """Read `harn check --json` (or `harn lint --json`) output; None if there is no JSON object.

    Tolerant: malformed parts are skipped or defaulted and described in `issues`.
    """
    doc = _loads_tolerant(stdout)
    if not isinstance(doc, dict):
        return None
    issues: list[str] = []
    version = _int(doc.get("schemaVersion"))
    if version != 1:
        issues.append(f"unsupported schemaVersion {doc.get('schemaVersion')!r} (expected 1)")
    ok = doc.get("ok") if isinstance(doc.get("ok"), bool) else None
    if ok is None:
        issues.append("envelope missing a boolean `ok`")
    error = doc.get("error") if isinstance(doc.get("error"), dict) else None
    if ok is False and (error is None or not error.get("code") or not error.get("message")):
        issues.append("ok=false requires an error with code and message")
    if ok is True and error is not None:
        issues.append("ok=true but error present")
    warnings = [w for w in doc.get("warnings") or [] if isinstance(w, dict)] if isinstance(doc.get("warnings"), list) else []
    env = CheckEnvelope(schema_version=version, ok=ok, error=error, warnings=warnings, issues=issues)

    data = doc.get("data")
    if not isinstance(data, dict):
        if data is not None:
            issues.append("data is not an object")
        return env
    raw_files = data.get("files")
    if not isinstance(raw_files, list):
        issues.append("data.files missing or not a list")
        raw_files = []
    counts = {"ok": 0, "warning": 0, "error": 0}
    total = 0
    for index, raw in enumerate(raw_files):
        where = f"files[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            issues.append(f"{where}: not an object with a string path")
            continue
        diags: list[CheckDiagnostic] = []
        raw_diags = raw.get("diagnostics")
        if not isinstance(raw_diags, list):
            if raw_diags is not None:
                issues.append(f"{where}: diagnostics is not a list")
            raw_diags = []
        for dindex, rd in enumerate(raw_diags):
            diag = _diagnostic(rd, f"{where}.diagnostics[{dindex}]", issues)
            if diag is not None:
                diags.append(diag)
        expected = _expected_status(diags)
        status = raw.get("status")
        if status not in counts:
            issues.append(f"{where}: invalid status {status!r}")
            status = expected
        elif status != expected:
            issues.append(f"{where}: status {status!r} but diagnostics imply {expected!r}")
        counts[status] += 1
        total += len(diags)
        env.files.append(CheckFile(path=raw["path"], status=status, diagnostics=diags))

    raw_summary = data.get("summary")
    if isinstance(raw_summary, dict):
        values = [_int(raw_summary.get(k)) for k in ("ok", "warnings", "errors", "diagnostics")]
        if any(v is None for v in values):
            issues.append("summary has missing or non-integer counts")
        env.summary = CheckSummary(*(v if v is not None else -1 for v in values))
        if (env.summary.ok, env.summary.warnings, env.summary.errors, env.summary.diagnostics) != (
                counts["ok"], counts["warning"], counts["error"], total):
            issues.append("summary does not match the files (it counts files per status, plus all diagnostics)")
    else:
        issues.append("data.summary missing")
    return env


# -- one typecheck probe, read whole ---------------------------------------------------------
# The runner (harn_ls.actions.probes) calls these three: one reading of what `harn check` printed,
# the probe's fact event and its envelope, rather than a dozen helpers in turn (each a trip into
# this module).


@dataclass(frozen=True, slots=True)
class TypecheckRun:
    """What one `harn check <snippet> --json` said, read the way probe.harn reads it."""

    command: str  # probe.harn's literal command text (`<harn> check <snippet> --json`)
    outcome: str  # pass | fail
    observed: str  # the observed text (feeds the trace id and the fact)
    evidence: dict[str, Any]  # the envelope's `evidence`
    check: CheckEnvelope | None  # the diagnostics as read (None: no JSON object in stdout)


def read_typecheck_run(body: str, harn_binary: str, *, stdout: str, stderr: str, exit_code: int | None,
                       duration_ms: int, timed_out: bool) -> TypecheckRun:
    """`body` probed by `harn_binary check`: its outcome, observed text, evidence and diagnostics from
    the process's output (`harn_binary`: the path as configured, which the command text shows)."""
    command = typecheck_command(harn_binary)
    counts = typecheck_counts(stdout)
    outcome = typecheck_outcome(counts, success=exit_code == 0, timed_out=timed_out)
    observed = typecheck_observed_for(counts, outcome)
    evidence = probe_evidence(TYPECHECK, body, observed, command=command, stdout=stdout, stderr=stderr,
                              exit_code=exit_code, duration_ms=duration_ms, timed_out=timed_out)
    return TypecheckRun(command, outcome, observed, evidence, parse_check_envelope(stdout))


def typecheck_fact_event(body: str, outcome: str, observed: str, command: str, file_range: str | None,
                         asserted_at: str, stored_at: str, namespace: str = PROBE_FACT_NAMESPACE) -> dict[str, Any]:
    """The memory store event of the probe's observation fact: Harn's probe fact, plus (harn-ls's one
    deliberate difference) a `file_range` evidence item naming the probed lines."""
    fact_input = probe_fact_input(TYPECHECK, body, outcome, observed, command=command)
    if file_range:
        fact_input["evidence"].append({"kind": "file_range", "ref": file_range})
    envelope = normalize_fact(fact_input, {"asserted_at": asserted_at})
    return fact_store_event(envelope, namespace, stored_at)


def typecheck_envelope(run: TypecheckRun, asserted_at: str, fact_id: str | None) -> dict[str, Any]:
    """The `harn.probe.v1` envelope of the probe (with `fact_id` once its fact is stored)."""
    return probe_envelope(TYPECHECK, run.outcome, run.observed, run.evidence, asserted_at, fact_id=fact_id)
