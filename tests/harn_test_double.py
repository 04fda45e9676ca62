#!/usr/bin/env python3
"""TEST DOUBLE for the `harn` CLI -- NOT Harn.

The real `harn` binary cannot be installed in this environment, so the probe
tests point `harnState.harnPath` / `--harn` at this script. It implements only
`harn check <target> --json` and prints the JSON envelope of harn-formats §I
(field names and order of §I.1-I.2, pretty printed on stdout, UTF-8 byte
spans, `summary` counting FILES per status, exit codes 0/1/2). What it reports
is decided by plain-text markers in the checked file -- it is a lookup, not a
checker, and it NEVER executes, evaluates or imports anything from the file.

Documented situations (checked in this order):

| file content                                  | result                                                 |
|-----------------------------------------------|--------------------------------------------------------|
| target missing                                | bad input: error envelope `missing_targets`, exit 2    |
| empty / whitespace-only file                  | bad input: error envelope `no_harn_files`, exit 2      |
| contains `HARN_DOUBLE_BAD_INPUT`              | same as above (lets a non-empty probe reach exit 2)    |
| contains `HARN_DOUBLE_HANG`                   | never answers: spawns a sleeping child in its own      |
|                                               | process group and sleeps (timeout / cancel tests)      |
| contains `HARN_DOUBLE_GARBAGE`                | prints non-JSON text, exit 101 (like a Rust panic)     |
| `let <name>: int = "<text>"` (any number)     | one HARN-TYP-001 type error per occurrence, span = the |
|                                               | string literal with its quotes; status error, exit 1   |
| a line containing `unused_var`                | one lint warning (HARN-LNT-001) on that identifier;    |
|                                               | status warning, exit 0 (non-strict)                    |
| anything else                                 | clean: status ok, exit 0                               |

Errors and warnings combine (a file with both is status `error`). Diagnostic
codes/messages are illustrative, as in §I.4; only the structure is Harn's.

Environment knobs (tests only):
  HARN_DOUBLE_PIDFILE  when set, the hang case writes "<own pid> <child pid>" there.
  HARN_DOUBLE_LOG      when set, every invocation appends its argv (JSON) there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

# `let x: int = "..."` -- a string literal assigned to an int annotation.
_TYPE_ERROR_RE = re.compile(rb'\blet\s+[A-Za-z_][A-Za-z0-9_]*\s*:\s*int\s*=\s*("(?:[^"\\\n]|\\.)*")')
_UNUSED_RE = re.compile(rb"\bunused_var\b")


def _envelope(ok: bool, data, error=None) -> dict:
    # JsonEnvelope field order: schemaVersion, ok, data, error, warnings (§I.1).
    return {"schemaVersion": 1, "ok": ok, "data": data, "error": error, "warnings": []}


def _print(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _bad_input(code: str, message: str) -> int:
    _print(_envelope(False, None, {"code": code, "message": message, "details": None}))
    sys.stderr.write(f"error: {message}\n\nUsage: harn check [OPTIONS] [TARGETS]...\n")
    return 2


def _hang() -> int:
    # A child in the same process group: killing only our pid would leave it behind,
    # so a runner that kills the whole group is what the tests check for.
    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(3600)"])
    pidfile = os.environ.get("HARN_DOUBLE_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as fh:
            fh.write(f"{os.getpid()} {child.pid}\n")
    while True:
        time.sleep(3600)


def _diagnostics(data: bytes) -> list[dict]:
    diags = []
    for m in _TYPE_ERROR_RE.finditer(data):
        start, end = m.span(1)
        diags.append({
            "source": "type",
            "severity": "error",
            "code": "HARN-TYP-001",
            "message": "type mismatch: expected int, found string",
            "span": {"start": start, "end": end},
            "help": "change the annotation or convert the value",
        })
    for m in _UNUSED_RE.finditer(data):
        diags.append({
            "source": "lint",
            "severity": "warning",
            "code": "HARN-LNT-001",
            "message": "unused variable `unused_var`",
            "span": {"start": m.start(), "end": m.end()},
        })
    diags.sort(key=lambda d: d["span"]["start"])
    return diags


def check(target: str) -> int:
    if not os.path.exists(target):
        return _bad_input("missing_targets", f"no such file or directory: {target}")
    with open(target, "rb") as fh:
        data = fh.read()
    if not data.strip() or b"HARN_DOUBLE_BAD_INPUT" in data:
        return _bad_input("no_harn_files", f"no .harn files to check in {target}")
    if b"HARN_DOUBLE_HANG" in data:
        return _hang()
    if b"HARN_DOUBLE_GARBAGE" in data:
        sys.stdout.write("thread 'main' panicked at crates/harn-cli/src/main.rs:1:1:\nnot json at all\n")
        sys.stderr.write("note: run with `RUST_BACKTRACE=1` for a backtrace\n")
        return 101
    diags = _diagnostics(data)
    severities = {d["severity"] for d in diags}
    status = "error" if "error" in severities else ("warning" if "warning" in severities else "ok")
    summary = {
        "ok": int(status == "ok"),
        "warnings": int(status == "warning"),
        "errors": int(status == "error"),  # files with errors, not diagnostics (§I.2)
        "diagnostics": len(diags),
    }
    data_obj = {"files": [{"path": target, "status": status, "diagnostics": diags}], "summary": summary}
    if status == "error":
        _print(_envelope(False, data_obj, {
            "code": "check_failed", "message": "one or more files failed `harn check`", "details": None}))
        return 1
    _print(_envelope(True, data_obj))
    return 0


def main(argv: list[str]) -> int:
    log = os.environ.get("HARN_DOUBLE_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps(argv) + "\n")
    if not argv or argv[0] != "check":
        sys.stderr.write("harn test double: only `harn check <target> --json` is implemented\n")
        return 2
    targets = [a for a in argv[1:] if not a.startswith("-")]
    if "--json" not in argv[1:]:
        sys.stderr.write("harn test double: only the --json output mode is implemented\n")
        return 2
    if not targets:
        return _bad_input("missing_targets", "no targets given")
    if len(targets) > 1:
        sys.stderr.write("harn test double: checks exactly one file\n")
        return 2
    return check(targets[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
