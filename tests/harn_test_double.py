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

It also implements `harn orchestrator resume <REQUEST_ID> [--reviewer NAME] [--reason TEXT]
[--json] [--state-dir DIR] [--manifest|--config PATH]` (harn-formats §N.2): it needs the
manifest (default harn.toml in cwd) to exist, then appends to `<state-dir>/events.sqlite`
(default .harn/orchestrator) exactly what `append_hitl_response` would for an escalation --
`hitl.escalation_accepted` {request_id, accepted: true, reviewer, reason?, responded_at},
then, if the waitpoint `waitpoint.state.<id>` is open, a `completed` waitpoint record and a
`waitpoint.resume` on `waitpoint.resumes` -- with Harn's pragmas, one BEGIN IMMEDIATE per
append and the provenance headers. Other request kinds: the response is written and the
double stops (no quorum fold). Unknown waitpoint: exit 1 after the response (orphan, §P.3).

Environment knobs (tests only):
  HARN_DOUBLE_PIDFILE  when set, the hang case writes "<own pid> <child pid>" there.
  HARN_DOUBLE_LOG      when set, every invocation appends its argv (JSON) there.
  HARN_DOUBLE_CALLS    when set, every invocation appends {"argv": [...], "cwd": "..."} (JSON) there.
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


def _now_rfc3339() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1e9):09d}".rstrip("0") + "Z"


def _append(conn, topic: str, kind: str, payload, headers: dict) -> int:
    import hashlib

    dumps = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    occurred = int(time.time() * 1000)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT OR IGNORE INTO topic_heads(topic, last_id) VALUES (?, 0)", (topic,))
        conn.execute("UPDATE topic_heads SET last_id = last_id + 1 WHERE topic = ?", (topic,))
        (eid,) = conn.execute("SELECT last_id FROM topic_heads WHERE topic = ?", (topic,)).fetchone()
        prev = conn.execute("SELECT headers FROM events WHERE topic = ? AND event_id < ? ORDER BY event_id DESC LIMIT 1",
                            (topic, eid)).fetchone()
        hdrs = dict(headers)
        hdrs["harn.provenance.schema"] = "harn-eventlog-provenance-v1"
        if prev is not None:
            hdrs["harn.provenance.prev_hash"] = json.loads(prev[0]).get("harn.provenance.record_hash", "")
        wrapper = {"topic": topic, "event_id": eid, "kind": kind, "payload": payload,
                   "headers": dict(sorted(hdrs.items())), "occurred_at_ms": occurred}
        hdrs["harn.provenance.record_hash"] = "sha256:" + hashlib.sha256(dumps(wrapper).encode()).hexdigest()
        conn.execute("INSERT INTO events(topic, event_id, kind, payload, headers, occurred_at_ms) VALUES (?,?,?,?,?,?)",
                     (topic, eid, kind, dumps(payload).encode(), dumps(dict(sorted(hdrs.items()))), occurred))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return eid


def orchestrator_resume(args: list[str]) -> int:
    import sqlite3

    opts = {"--reviewer": "manual", "--reason": None, "--state-dir": os.environ.get("HARN_ORCHESTRATOR_STATE_DIR")
            or ".harn/orchestrator", "--manifest": os.environ.get("HARN_ORCHESTRATOR_MANIFEST") or "harn.toml"}
    positional, as_json, i = [], False, 0
    while i < len(args):
        a = args[i]
        if a == "--json":
            as_json = True
        elif a in ("--reviewer", "--reason", "--state-dir", "--manifest", "--config"):
            if i + 1 >= len(args):
                sys.stderr.write(f"error: a value is required for '{a} <VALUE>'\n")
                return 2
            opts["--manifest" if a == "--config" else a] = args[i + 1]
            i += 1
        elif a.startswith("-"):
            sys.stderr.write(f"error: unexpected argument '{a}'\n")
            return 2
        else:
            positional.append(a)
        i += 1
    if len(positional) != 1:
        sys.stderr.write("error: exactly one <EVENT_ID> is required\n")
        return 2
    rid = positional[0]
    # common.rs load_local_runtime: absolutize_from_cwd, then load_manifest's "manifest not found: {path}"
    manifest = os.path.join(os.getcwd(), opts["--manifest"])
    if not os.path.isfile(manifest):
        sys.stderr.write(f"error: manifest not found: {manifest}\n")
        return 1
    try:
        import tomllib
        with open(manifest, "rb") as fh:
            tomllib.load(fh)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"error: failed to parse {manifest}: {exc}\n")
        return 1
    m = re.match(r"^hitl_(question|approval|dual_control|escalation)_", rid)
    if not m:
        sys.stderr.write(f"error: unknown HITL request id '{rid}'\n")
        return 1
    kind = m.group(1)
    state_dir = os.path.abspath(opts["--state-dir"])
    os.makedirs(state_dir, exist_ok=True)
    # event_log/mod.rs EventLogConfig::for_base_dir: HARN_EVENT_LOG_SQLITE_PATH (not blank) before the default
    sqlite_path = os.environ.get("HARN_EVENT_LOG_SQLITE_PATH", "")
    sqlite_path = os.path.join(state_dir, sqlite_path) if sqlite_path.strip() else os.path.join(state_dir, "events.sqlite")
    conn = sqlite3.connect(sqlite_path, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(
        "CREATE TABLE IF NOT EXISTS topic_heads (topic TEXT PRIMARY KEY, last_id INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS events (topic TEXT NOT NULL, event_id INTEGER NOT NULL, kind TEXT NOT NULL, "
        "payload BLOB NOT NULL, headers TEXT NOT NULL, occurred_at_ms INTEGER NOT NULL, PRIMARY KEY (topic, event_id));"
        "CREATE TABLE IF NOT EXISTS consumers (topic TEXT NOT NULL, consumer_id TEXT NOT NULL, cursor INTEGER NOT NULL, "
        "updated_at_ms INTEGER NOT NULL, PRIMARY KEY (topic, consumer_id));")
    responded_at = _now_rfc3339()
    payload = {"request_id": rid, "accepted": True, "reviewer": opts["--reviewer"]}
    if opts["--reason"] is not None:
        payload["reason"] = opts["--reason"]
    payload["responded_at"] = responded_at
    topic = {"question": "hitl.questions", "approval": "hitl.approvals", "dual_control": "hitl.dual_control",
             "escalation": "hitl.escalations"}[kind]
    _append(conn, topic, "hitl.escalation_accepted" if kind == "escalation" else "hitl.response_received", payload,
            {"request_id": rid})
    wp_topic = "waitpoint.state." + re.sub(r"[^A-Za-z0-9._-]", "_", rid)
    row = conn.execute("SELECT payload FROM events WHERE topic = ? ORDER BY event_id DESC LIMIT 1", (wp_topic,)).fetchone()
    if row is None:
        conn.close()
        sys.stderr.write(f"error: waitpoint.complete: unknown waitpoint '{rid}'\n")
        return 1
    if kind == "escalation":
        record = json.loads(row[0])
        if record.get("status") == "open":
            record.update({"status": "completed", "completed_at": _now_rfc3339(), "completed_by": opts["--reviewer"],
                           "value": {"accepted": True, "reviewer": opts["--reviewer"], "reason": opts["--reason"],
                                     "responded_at": responded_at}, "reason": opts["--reason"]})
            _append(conn, wp_topic, "waitpoint.state", record, {"waitpoint_id": rid})
            _append(conn, "waitpoint.resumes", "waitpoint.resume",
                    {"waitpoint_id": rid, "requested_at": _now_rfc3339(), "reason": "waitpoint_changed"}, {})
    conn.close()
    if as_json:
        _print({"request_id": rid, "reviewer": opts["--reviewer"], "reason": opts["--reason"], "accepted": True})
    else:
        sys.stdout.write(f"Resumed escalation:\n- request_id={rid}\n- reviewer={opts['--reviewer']}\n"
                         f"- reason={opts['--reason'] or '-'}\n")
    return 0


def main(argv: list[str]) -> int:
    log = os.environ.get("HARN_DOUBLE_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps(argv) + "\n")
    calls = os.environ.get("HARN_DOUBLE_CALLS")
    if calls:
        with open(calls, "a") as fh:
            fh.write(json.dumps({"argv": argv, "cwd": os.getcwd(),
                                 "env": {k: v for k, v in os.environ.items() if k.startswith("HARN_EVENT_LOG")}}) + "\n")
    if argv[:2] == ["orchestrator", "resume"]:
        return orchestrator_resume(argv[2:])
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
