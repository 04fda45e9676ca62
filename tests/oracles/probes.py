"""Oracles for the parts of Harn's std/agent/probe (probe.harn, harn-formats §D.6) that harn-ls never runs.

harn-ls only runs *typecheck* probes (harn_ls/actions/probes.py, with the
helpers in harn_ls/formats/probes.py). Eval probes, the other kinds, and the
argument validation of `probe(...)` / `probe_eval(...)` happen inside Harn;
these copies rebuild Harn's strings and errors so the tests can check the
shared helpers against the conformance vectors.
"""

from __future__ import annotations

from typing import Any

from harn_ls.formats.facts import harn_display, rust_trim
from harn_ls.formats.probes import _compare_expected, _probe_text, probe_truncate

PROBE_KINDS = ("eval", "typecheck", "test", "inspect")
PROBE_LANGS = ("shell", "harn")
COMMAND_LIMIT = 240  # probe.harn truncates an eval probe's recorded command (and its stdout/stderr summary) to this


class ProbeError(ValueError):
    """What std/agent/probe throws: `"<CODE>: std/agent/probe: <message>"`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: std/agent/probe: {message}")
        self.code = code
        self.message = message


def normalize_probe_kind(value: Any) -> str:
    """Mirrors probe.harn's kind check (HARN-PROBE-002): trimmed, `-` -> `_`, lowercased, one of PROBE_KINDS."""
    raw = _probe_text(value)
    kind = rust_trim(raw).replace("-", "_").lower()
    if kind == "":
        raise ProbeError("HARN-PROBE-002", "kind is required")
    if kind not in PROBE_KINDS:
        raise ProbeError("HARN-PROBE-002", f"unknown kind `{raw}` (expected one of {', '.join(PROBE_KINDS)})")
    return kind


def normalize_probe_lang(value: Any) -> str:
    """Mirrors probe.harn's `lang` option check (HARN-PROBE-003): empty -> shell."""
    lang = rust_trim(_probe_text(value)).lower()
    if lang == "":
        return "shell"
    if lang not in PROBE_LANGS:
        raise ProbeError("HARN-PROBE-003", f"unknown lang `{_probe_text(value)}` (expected shell or harn)")
    return lang


def check_probe_body(body: Any) -> str:
    """Mirrors probe.harn's body check (HARN-PROBE-004); the body is returned untrimmed."""
    text = _probe_text(body)
    if rust_trim(text) == "":
        raise ProbeError("HARN-PROBE-004", "body must be a non-empty string")
    return text


def eval_observed(exit_code: Any, outcome: str, stdout: str | None = None, stderr: str | None = None) -> str:
    """Mirrors the observed text probe.harn builds for an eval probe."""
    summary = f"eval exit={'?' if exit_code is None else harn_display(exit_code)} outcome={outcome}"
    out = rust_trim(stdout or "")
    if out:
        return summary + " stdout=" + probe_truncate(out, COMMAND_LIMIT)
    err = rust_trim(stderr or "")
    if err:
        return summary + " stderr=" + probe_truncate(err, COMMAND_LIMIT)
    return summary


def unsupported_observed(kind: str) -> str:
    """Mirrors the observed text probe.harn records for a kind it cannot run (test, inspect)."""
    return f"probe kind `{kind}` is not supported (supported kinds: eval, typecheck)"


def harn_eval_command(harn_binary: str = "harn") -> str:
    """Mirrors the `command` probe.harn records for a `lang: harn` eval probe."""
    return f"{harn_binary} run <snippet>"


def eval_outcome(*, success: bool, stdout: str = "", timed_out: bool = False, expected: Any = None) -> str:
    """Mirrors probe.harn's eval outcome: timeout fails; `expected` compares trimmed stdout; else the exit status."""
    if timed_out:
        return "fail"
    if expected is not None:
        return _compare_expected({"stdout": stdout}, expected, "eval")
    return "pass" if success else "fail"
