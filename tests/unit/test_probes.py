"""Typecheck probe runner (harn_ls.actions.probes) against the `harn` test double.

Expected ids, envelopes and event lines are computed here from the formulas of
harn-formats §D.3/§D.4/§D.6 with hashlib/json only -- never with harn_ls code.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed, probes
from harn_ls.model.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
DOUBLE = str(REPO / "tests" / "harn_test_double.py")
NOW = "2026-05-02T09:31:07.118Z"
REL = "pipelines/probe_target.harn"


# -- independent reference implementation of the §D formulas ---------------------------------


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stringify(value) -> str:
    """Harn json_stringify for the values used here (strings, dicts, lists, no floats)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def expected_trace(snippet: str, observed: str) -> str:
    return "probe_" + sha(f"typecheck\n{snippet}\n{observed}")[:16]


def expected_claim(snippet: str, outcome: str) -> str:
    short = snippet.strip()[:120].replace("\n", " ")
    return f"probe typecheck `{short}` \u2192 {outcome}"


def expected_fact(snippet: str, outcome: str, observed: str, file_range: str, harn: str = DOUBLE) -> dict:
    trace = expected_trace(snippet, observed)
    evidence = [{"kind": "tool_output", "ref": trace, "snippet": observed}, {"kind": "file_range", "ref": file_range}]
    provenance = {"command": f"{harn} check <snippet> --json", "probe_kind": "typecheck", "source": "probe"}
    claim = expected_claim(snippet, outcome)
    seed = "observation\n" + claim + "\n" + stringify(evidence) + "\n" + stringify(provenance)
    fid = "fact_" + sha(seed)[:32]
    confidence = 0.4 if outcome == "unknown" else 0.9
    value = {"asserted_at": NOW, "claim": claim, "confidence": confidence, "evidence": evidence, "id": fid,
             "kind": "observation", "provenance": provenance, "schema": "harn.fact.v1"}
    tags = {"fact", "fact:observation", "schema:harn.fact.v1"}
    for ev in evidence:
        k, r = ev["kind"], ev["ref"]
        tags |= {f"fact:evidence:{k}", f"fact:evidence_ref:{r}", f"fact:evidence:{k}:{r}",
                 f"fact:observation:evidence:{k}", f"fact:observation:evidence_ref:{r}",
                 f"fact:observation:evidence:{k}:{r}"}
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))  # keys already sorted
    # §C.2 field order of a store event
    return {"type": "store", "id": fid, "namespace": "project/facts", "key": f"fact:observation:{fid}",
            "value": value, "text": compact, "tags": sorted(tags), "stored_at": NOW, "provenance": provenance}


def utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def pos_of(doc: str, needle: str, start: int = 0) -> tuple[int, int]:
    """LSP position (line, UTF-16 col) of `needle` in doc, by plain string search."""
    i = doc.index(needle, start)
    before = doc[:i]
    line = before.count("\n")
    return line, utf16(before[before.rfind("\n") + 1:])


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, target, symlinks=True)
    return target


def events_path(project: Path) -> Path:
    return project / ".harn/memory/project/facts/events.jsonl"


def run(project: Path, text: str, rng=None, *, harn: str = DOUBLE, timeout: float = 10.0, store: bool = True,
        rel: str = REL) -> probes.ProbeOutcome:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return asyncio.run(probes.run_typecheck_probe(str(project), str(path), text, rng, harn, timeout,
                                                  store=store, now=NOW))


def last_line(project: Path) -> str:
    return events_path(project).read_text(encoding="utf-8").splitlines()[-1]


def leftover_temp_dirs() -> set[str]:
    import tempfile

    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("harn-ls-probe-")}


def dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie nobody reaped (PID 1 in a container may not) is dead too
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    # only zombies left?
    members = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid:
                    members.append(fields[0])
            except (OSError, IndexError, ValueError):
                pass
    return all(state == "Z" for state in members)


# -- outcomes ------------------------------------------------------------------------------------


def test_pass_whole_file_envelope_fact_and_workspace(project):
    text = 'pipeline main() {\n  let x: int = 1\n}\n'
    out = run(project, text)
    observed = "typecheck outcome=pass errors=0 warnings=0"
    assert out.outcome == "pass" and out.summary_line == "typecheck pass"
    assert out.diagnostics == []
    exp = expected_fact(text, "pass", observed, f"{REL}:1-3")
    env = out.envelope
    assert list(env) == ["asserted_at", "evidence", "fact_id", "kind", "observed", "outcome", "schema"]
    assert env["schema"] == "harn.probe.v1" and env["kind"] == "typecheck" and env["outcome"] == "pass"
    assert env["observed"] == observed and env["asserted_at"] == NOW
    assert env["fact_id"] == exp["id"] == out.fact_id
    ev = env["evidence"]
    assert set(ev) == {"trace_id", "snippet", "command", "stdout", "exit_code", "duration_ms"}  # stderr "" dropped
    assert ev["trace_id"] == expected_trace(text, observed)
    assert ev["snippet"] == text
    assert ev["command"] == f"{DOUBLE} check <snippet> --json"
    assert ev["exit_code"] == 0 and isinstance(ev["duration_ms"], int) and "timed_out" not in ev
    stdout = json.loads(ev["stdout"])
    assert list(stdout) == ["schemaVersion", "ok", "data", "error", "warnings"]
    assert stdout["data"]["summary"] == {"ok": 1, "warnings": 0, "errors": 0, "diagnostics": 0}

    # the stored line, byte for byte, against the independent computation
    line = last_line(project)
    assert json.loads(line) == exp
    assert line == json.dumps(exp, ensure_ascii=False, separators=(",", ":"))
    assert out.events_path == str(events_path(project))

    # a cold load re-validates it as harn.fact.v1 and puts it on the probed file
    ws = Workspace.load(str(project))
    fact = ws.facts_by_id[exp["id"]]
    assert fact.kind == "observation" and fact.confidence == 0.9
    assert exp["id"] in {f.id for f in ws.facts_for_file(REL)}
    assert not [p for p in ws.problems() if p.path == str(events_path(project))]


def test_fail_positions_in_selection(project):
    doc = ('pipeline main() {\n'
           '  let ok: int = 1\n'
           '  let x: int = "oops"\n'
           '  let y: int = "again"\n'
           '}\n')
    # select from the middle of line 1 to the end of line 3
    start = pos_of(doc, "ok: int")
    rng = (start, (3, utf16('  let y: int = "again"')))
    out = run(project, doc, rng)
    a, b = doc.index("ok: int"), doc.index('"again"') + len('"again"')
    snippet = doc[a:b]
    assert out.snippet == snippet
    assert out.outcome == "fail" and out.summary_line == "typecheck fail: 2 errors"
    # summary.errors counts files, so observed says errors=1 for two error diagnostics
    observed = "typecheck outcome=fail errors=1 warnings=0"
    assert out.envelope["observed"] == observed
    got = [(d.range, d.severity, d.code, d.source) for d in out.diagnostics]
    oops, again = pos_of(doc, '"oops"'), pos_of(doc, '"again"')
    assert got == [
        ((oops, (oops[0], oops[1] + 6)), "error", "HARN-TYP-001", "harn-probe"),
        ((again, (again[0], again[1] + 7)), "error", "HARN-TYP-001", "harn-probe"),
    ]
    exp = expected_fact(snippet, "fail", observed, f"{REL}:2-4")
    assert out.fact_id == exp["id"] and json.loads(last_line(project)) == exp
    assert out.envelope["evidence"]["exit_code"] == 1


def test_warning_only(project):
    doc = "pipeline main() {\n  let unused_var = 2\n}\n"
    out = run(project, doc)
    assert out.outcome == "pass" and out.summary_line == "typecheck pass: 1 warning"
    (d,) = out.diagnostics
    col = pos_of(doc, "unused_var")
    assert d.severity == "warning" and d.code == "HARN-LNT-001" and d.range == (col, (col[0], col[1] + 10))
    assert out.envelope["observed"] == "typecheck outcome=pass errors=0 warnings=1"


def test_multibyte_before_span_selection_mid_line(project):
    # emoji (2 UTF-16 units, 4 bytes) and CJK (1 unit, 3 bytes) before the selection AND inside it
    doc = ('// 注释 😀\n'
           'pipeline 主() { /* 😀😀 */ let 名: int = 1; let x: int = "é😀字" }\n')
    sel_start = pos_of(doc, "/* 😀😀 */")
    line1 = doc.split("\n")[1]
    rng = (sel_start, (1, utf16(line1)))
    out = run(project, doc, rng)
    span_pos = pos_of(doc, '"é😀字"')
    (d,) = out.diagnostics
    assert d.range == (span_pos, (span_pos[0], span_pos[1] + utf16('"é😀字"')))
    assert out.snippet == line1[line1.index("/*"):]
    assert out.file_range == f"{REL}:2-2"


def test_bad_input_exit_2(project):
    out = run(project, "// HARN_DOUBLE_BAD_INPUT\n")
    assert out.outcome == "fail"
    assert out.envelope["observed"] == "typecheck outcome=fail errors=-1 warnings=-1"
    assert out.envelope["evidence"]["exit_code"] == 2
    assert "refused the input" in out.summary_line and "no_harn_files" in out.summary_line
    assert out.diagnostics == []


def test_non_json_output(project):
    doc = "// HARN_DOUBLE_GARBAGE\n"
    out = run(project, doc)
    observed = "typecheck outcome=fail (no JSON envelope)"
    assert out.outcome == "fail" and out.envelope["observed"] == observed
    assert "no JSON envelope" in out.summary_line
    ev = out.envelope["evidence"]
    assert ev["exit_code"] == 101 and "panicked" in ev["stdout"] and "RUST_BACKTRACE" in ev["stderr"]
    assert ev["trace_id"] == expected_trace(doc, observed)
    assert json.loads(last_line(project)) == expected_fact(doc, "fail", observed, f"{REL}:1-1")


def test_no_store(project):
    before = events_path(project).read_bytes()
    out = run(project, "pipeline main() {}\n", store=False)
    assert out.outcome == "pass" and out.fact_id is None and "fact_id" not in out.envelope
    assert events_path(project).read_bytes() == before


def test_timeout_kills_process_group_and_removes_temp(project, tmp_path, monkeypatch):
    pidfile, log = tmp_path / "pids", tmp_path / "argv.log"
    monkeypatch.setenv("HARN_DOUBLE_PIDFILE", str(pidfile))
    monkeypatch.setenv("HARN_DOUBLE_LOG", str(log))
    doc = "// HARN_DOUBLE_HANG\n"
    t0 = time.monotonic()
    out = run(project, doc, timeout=1.5)
    assert 1.4 < time.monotonic() - t0 < 6
    assert out.timed_out and out.outcome == "fail"
    assert out.summary_line == "typecheck timed out after 1.5 s"
    ev = out.envelope["evidence"]
    assert ev["timed_out"] is True and "exit_code" not in ev and ev["duration_ms"] >= 1400
    observed = "typecheck outcome=fail (no JSON envelope)"
    assert out.envelope["observed"] == observed
    assert json.loads(last_line(project)) == expected_fact(doc, "fail", observed, f"{REL}:1-1")
    own, child = map(int, pidfile.read_text().split())
    assert own == out.process.pid
    deadline = time.monotonic() + 30  # ends as soon as they are gone; a loaded machine reaps late
    while not (dead(own) and dead(child) and group_gone(own)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead(own) and dead(child) and group_gone(own)
    tmp = json.loads(log.read_text().splitlines()[-1])[1]
    assert os.path.basename(tmp).startswith("harn-probe-") and tmp.endswith(".harn")
    assert not os.path.exists(tmp) and not os.path.exists(os.path.dirname(tmp))
    assert ".harn" not in Path(tmp).parts[:-1]  # never under the state directory


def test_cancel_kills_and_cleans(project, tmp_path, monkeypatch):
    pidfile, log = tmp_path / "pids", tmp_path / "argv.log"
    monkeypatch.setenv("HARN_DOUBLE_PIDFILE", str(pidfile))
    monkeypatch.setenv("HARN_DOUBLE_LOG", str(log))
    before = events_path(project).read_bytes()
    path = project / REL
    path.write_text("// HARN_DOUBLE_HANG\n")

    async def scenario():
        task = asyncio.ensure_future(probes.run_typecheck_probe(
            str(project), str(path), path.read_text(), None, DOUBLE, 30, now=NOW))
        deadline = time.monotonic() + 60  # the double started (python on a loaded machine: seconds, not ms)
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    own, child = map(int, pidfile.read_text().split())
    deadline = time.monotonic() + 30  # ends as soon as they are gone; a loaded machine reaps late
    while not (dead(own) and dead(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead(own) and dead(child) and group_gone(own)
    tmp = json.loads(log.read_text().splitlines()[-1])[1]
    assert not os.path.exists(os.path.dirname(tmp))
    assert events_path(project).read_bytes() == before  # a cancelled probe stores nothing


def test_missing_binary(project):
    before_dirs = leftover_temp_dirs()
    before = events_path(project).read_bytes()
    for harn in (str(project / "no-such-harn"), "harn-ls-surely-not-on-path"):
        with pytest.raises(ActionFailed) as exc:
            run(project, "pipeline main() {}\n", harn=harn)
        msg = str(exc.value)
        assert "harnState.harnPath" in msg and "--harn" in msg and harn in msg
        assert "\n" not in msg
    assert leftover_temp_dirs() <= before_dirs
    assert events_path(project).read_bytes() == before


def test_snippet_is_never_executed(project, tmp_path, monkeypatch):
    log = tmp_path / "argv.log"
    monkeypatch.setenv("HARN_DOUBLE_LOG", str(log))
    m1, m2, m3 = (tmp_path / f"pwned{i}" for i in (1, 2, 3))
    doc = (f'let a = "$(touch {m1})"\n'
           f"let b = `touch {m2}`\n"
           f"$(rm -rf /) ; touch {m3} && echo `id`\n")
    out = run(project, doc)
    assert out.outcome == "pass"
    assert not m1.exists() and not m2.exists() and not m3.exists()
    argv = json.loads(log.read_text().splitlines()[-1])
    assert argv[0] == "check" and argv[2] == "--json" and len(argv) == 3
    assert os.path.basename(argv[1]).startswith("harn-probe-")  # the snippet travels in a file, not argv
    assert out.envelope["evidence"]["snippet"] == doc
    assert (project / "pipelines").is_dir() and SAMPLE.is_dir()


def test_empty_selection_refused(project):
    with pytest.raises(ActionFailed, match="HARN-PROBE-004"):
        run(project, "pipeline main() {}\n   \n", ((1, 0), (1, 3)))


def test_long_snippet_truncated_in_evidence(project):
    doc = "// " + "é" * 5000 + "\n"
    out = run(project, doc)
    ev = out.envelope["evidence"]
    assert ev["snippet"] == doc[:4096] + f"\n…[truncated {len(doc) - 4096} bytes]"
    assert ev["trace_id"] == expected_trace(doc, out.envelope["observed"])  # the id hashes the full body


# -- ranges and CLI --------------------------------------------------------------------------------


def test_parse_range_arg():
    text = "ab😀cd\nline2\nline3\n"
    assert probes.parse_range_arg("1:3-1:4").to_lsp(text) == ((0, 2), (0, 4))  # 😀 is 2 UTF-16 units
    assert probes.parse_range_arg("2-3").to_lsp(text) == ((1, 0), (3, 0))
    for bad in ("0:1-1:1", "1:1-2", "x", "3-2", ""):
        with pytest.raises(ValueError):
            probes.parse_range_arg(bad)


def test_file_range_lines():
    assert probes.file_range_lines(((1, 4), (3, 0))) == (2, 3)  # ends at column 0: previous line
    assert probes.file_range_lines(((1, 4), (1, 9))) == (2, 2)
    assert probes.file_range_lines(((0, 0), (2, 1))) == (1, 3)


def test_cli_probe(project):
    path = project / REL
    path.write_text('pipeline main() {\n  let x: int = "oops"\n}\n')
    cmd = [sys.executable, "-m", "harn_ls", "probe", "typecheck", str(path), "--range", "2:1-2:22",
           "--harn", DOUBLE]
    text = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=30)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "typecheck fail: 1 error"
    assert lines[1] == f"{path}:2:16: error HARN-TYP-001: type mismatch: expected int, found string"
    js = subprocess.run(cmd + ["--json", "--no-store"], capture_output=True, text=True, cwd=REPO, timeout=30)
    env = json.loads(js.stdout)
    assert env["outcome"] == "fail" and "fact_id" not in env
    missing = subprocess.run(cmd[:-1] + ["/nonexistent/harn"], capture_output=True, text=True, cwd=REPO, timeout=30)
    assert missing.returncode == 1 and "harnState.harnPath" in missing.stderr


def test_double_direct_bad_input(tmp_path):
    r = subprocess.run([DOUBLE, "check", str(tmp_path / "missing.harn"), "--json"], capture_output=True, text=True)
    assert r.returncode == 2 and json.loads(r.stdout)["error"]["code"] == "missing_targets"
    empty = tmp_path / "empty.harn"
    empty.write_text("")
    r = subprocess.run([DOUBLE, "check", str(empty), "--json"], capture_output=True, text=True)
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["ok"] is False and doc["data"] is None and doc["error"]["code"] == "no_harn_files"
