"""Issue 12 item 4: bounded, confined reads of files that project data names.

Attacks, as a cloned repository (`proj`, with the attacker's other files in a sibling `proj-evil`) would
ship them. Before -> after on this machine:
* a fact whose source file is a symlink to /dev/zero: MemoryError at 2.9 GB after 15.6 s (3 GB ulimit;
  unbounded without one) -> refused in < 1 ms;
* a 44 MB checkpoint: 46 s and 1.46 GB RSS -> "too large: 42 MB, cap 16 MB; not loaded" in 0.5 s, 17 MB;
* a 47 MB run record: 25 s and 1.5 GB -> "too large: 45 MB, cap 32 MB; not loaded";
* a 9 MB memory line made of `{}` objects: 32x its size in memory -> refused at ~2x;
* symlinks out of the project (memory log, checkpoint, run record): silently dropped -> a problem
  naming the link; a FIFO never blocks a read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harn_ls.formats import checkpoints as ckpt_fmt  # noqa: E402
from harn_ls.formats import jsonl as jsonl_fmt  # noqa: E402
from harn_ls.formats import paths as paths_mod  # noqa: E402
from harn_ls.formats import runs as runs_fmt  # noqa: E402
from harn_ls.formats.fact_anchors import anchor, refusal, source_lines  # noqa: E402
from harn_ls.model.workspace import CODE_LINK_OUT, Workspace  # noqa: E402
from harn_ls.util import safe_read  # noqa: E402

SAMPLE = REPO / "fixtures" / "sample-project"


def _measure(code: str, *args: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON line. Adds peak RSS (KB) before/after, and
    `seconds`: the CPU time it took (its imports included), which a busy machine does not stretch."""
    prog = textwrap.dedent("""
        import json, resource, sys, time
        sys.path.insert(0, {repo!r})
        RSS0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        T0 = time.process_time()
        def done(**kw):
            kw["rss0"] = RSS0
            kw["rss1"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            kw["seconds"] = time.process_time() - T0
            print(json.dumps(kw))
    """).format(repo=str(REPO)) + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", prog, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _proj(tmp_path: Path) -> tuple[Path, Path]:
    proj, evil = tmp_path / "proj", tmp_path / "proj-evil"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    evil.mkdir()
    return proj, evil


# -- fact targets -------------------------------------------------------------------------------------------

def test_fact_source_symlinked_to_dev_zero_is_refused(tmp_path):
    proj, _ = _proj(tmp_path)
    link = proj / "src" / "zero.py"
    link.parent.mkdir(exist_ok=True)
    os.symlink("/dev/zero", link)
    r = _measure("""
        from harn_ls.formats.fact_anchors import source_lines, refusal
        lines = source_lines(sys.argv[1], sys.argv[2])
        done(lines=lines, why=refusal(sys.argv[1]))
    """, str(link), str(proj))
    assert r["lines"] is None and "zero.py -> /dev/zero leaves the project" in r["why"]
    assert r["seconds"] < 1.0 and r["rss1"] - r["rss0"] < 20_000  # KB


def test_fact_source_device_inside_root_is_not_read(tmp_path):
    # Even with the confinement check off (root=None), a device is never read.
    assert source_lines("/dev/zero") is None
    assert "not a regular file" in refusal("/dev/zero")


def test_fact_source_fifo_does_not_block(tmp_path):
    proj, _ = _proj(tmp_path)
    fifo = proj / "src" / "pipe.py"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    result: list = []
    t = threading.Thread(target=lambda: result.append(source_lines(str(fifo), str(proj))), daemon=True)
    t.start()
    t.join(2.0)
    assert result == [None], "reading a FIFO fact target blocked"
    assert "not a regular file" in refusal(str(fifo))


def test_fact_source_symlink_out_of_project_names_the_link(tmp_path):
    proj, evil = _proj(tmp_path)
    (evil / "secret.py").write_text("API_KEY = 'hunter2'\n")
    link = proj / "src" / "config.py"
    link.parent.mkdir(exist_ok=True)
    os.symlink(evil / "secret.py", link)
    assert source_lines(str(link), str(proj)) is None
    a = anchor(None, 1, 1, "API_KEY", refusal(str(link)) or "")
    assert a.state == "refused"
    assert f"symlink {link} -> {evil / 'secret.py'} leaves the project; not followed" in a.label
    assert "hunter2" not in a.label


def _swap_for_link(path: Path, target: Path) -> None:
    """Replace `path` by a symlink to `target`, which is given `path`'s size and mtime first: a cache
    keyed on what the path resolves to (size, mtime) would not see the swap."""
    before = path.stat()
    assert target.stat().st_size == before.st_size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    path.unlink()
    os.symlink(target, path)


def test_fact_source_swapped_for_a_link_out_of_the_project_is_refused_not_served_from_cache(tmp_path):
    proj, evil = _proj(tmp_path)
    src = proj / "src" / "settings.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text("DEBUG = False\n")
    assert source_lines(str(src), str(proj)) == ["DEBUG = False"]  # now cached
    (evil / "settings.py").write_text("TOKEN = 'xox'\n")
    _swap_for_link(src, evil / "settings.py")
    assert source_lines(str(src), str(proj)) is None
    assert "leaves the project" in (refusal(str(src)) or "")


def test_fact_source_swapped_for_an_in_project_link_reads_the_new_target(tmp_path):
    proj, _ = _proj(tmp_path)
    src, other = proj / "src" / "a.py", proj / "src" / "b.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text("x = 1\n")
    other.write_text("y = 2\n")
    assert source_lines(str(src), str(proj)) == ["x = 1"]
    _swap_for_link(src, other)
    assert source_lines(str(src), str(proj)) == ["y = 2"]
    other.write_text("z = 3\n")  # the link's target changes; the link itself does not
    assert source_lines(str(src), str(proj)) == ["z = 3"]


def test_fact_source_over_cap_is_refused(tmp_path):
    proj, _ = _proj(tmp_path)
    big = proj / "src" / "huge.py"
    big.parent.mkdir(exist_ok=True)
    with open(big, "wb") as fh:
        fh.truncate(safe_read.SOURCE_FILE_CAP + 1)
    assert source_lines(str(big), str(proj)) is None
    assert refusal(str(big)) == "too large: 8.0 MB, cap 8 MB; not loaded"


# -- caps on checkpoints, run records, memory lines -------------------------------------------------------

def _dense_json(path: Path, n_bytes: int, head: str, tail: str) -> None:
    n = n_bytes // 8
    with open(path, "w") as fh:
        fh.write(head + ",".join(['{"a":1}'] * n) + tail)


def test_oversized_checkpoint_is_a_problem_not_a_blowup(tmp_path):
    proj, _ = _proj(tmp_path)
    path = proj / ".harn" / "checkpoints" / "evil.json"
    _dense_json(path, 44_000_000, '{"stage":[', "]}")
    size = path.stat().st_size
    r = _measure("""
        from harn_ls.formats.checkpoints import read_checkpoint_file
        cf = read_checkpoint_file(sys.argv[1])
        done(problems=[(p.code, p.message) for p in cf.problems], entries=len(cf.entries))
    """, str(path))
    assert r["entries"] == 0
    assert r["problems"] == [
        [ckpt_fmt.CODE_TOO_LARGE, f"checkpoint file too large: {safe_read.mb(size)} MB, cap 16 MB; not loaded"]]
    assert r["seconds"] < 2.0 and r["rss1"] - r["rss0"] < 50_000  # before: 46 s, 1.46 GB


def test_dense_checkpoint_under_the_cap_stays_within_20x(tmp_path):
    proj, _ = _proj(tmp_path)
    path = proj / ".harn" / "checkpoints" / "dense.json"
    _dense_json(path, 10_000_000, '{"stage":[', "]}")
    size = path.stat().st_size
    r = _measure("""
        from harn_ls.formats.checkpoints import read_checkpoint_file
        cf = read_checkpoint_file(sys.argv[1])
        done(problems=[(p.code, p.message) for p in cf.problems])
    """, str(path))
    assert [c for c, _ in r["problems"]] == [ckpt_fmt.CODE_TOO_LARGE]
    assert "cap 20x); not loaded" in r["problems"][0][1]
    assert (r["rss1"] - r["rss0"]) * 1024 <= 20 * size


def test_oversized_run_record_is_a_problem(tmp_path):
    proj, _ = _proj(tmp_path)
    path = proj / ".harn-runs" / "evil.json"
    _dense_json(path, 47_000_000, '{"_type":"run_record","id":"r","stages":[', "]}")
    r = _measure("""
        from harn_ls.formats.runs import read_run_record
        run = read_run_record(sys.argv[1])
        done(problems=[(p.code, p.message) for p in run.problems])
    """, str(path))
    assert r["problems"][0][0] == runs_fmt.CODE_TOO_LARGE
    assert r["problems"][0][1].startswith("run record too large: ") and "cap 32 MB; not loaded" in r["problems"][0][1]
    assert r["seconds"] < 2.0 and r["rss1"] - r["rss0"] < 80_000  # before: 25 s, 1.5 GB (MemoryError at 6 GB for 53 MB)


def test_memory_line_of_empty_objects_is_refused_within_20x(tmp_path):
    proj, _ = _proj(tmp_path)
    ns = proj / ".harn" / "memory" / "project" / "evil"
    ns.mkdir(parents=True)
    path = ns / "events.jsonl"
    good = json.dumps({"type": "store", "id": "ok1", "key": "k", "stored_at": "2026-01-01T00:00:00Z", "value": 1})
    flood = ('{"type":"store","id":"r1","key":"k","stored_at":"2026-01-01T00:00:00Z","value":['
             + ",".join(["{}"] * 3_000_000) + "]}")
    path.write_text(flood + "\n" + good + "\n")
    size = path.stat().st_size
    r = _measure("""
        from harn_ls.formats.jsonl import JsonlTail
        lines = JsonlTail(sys.argv[1]).read_new().lines
        done(problems=[(l.line_no, l.problem.code) for l in lines if l.problem], ok=[l.value["id"] for l in lines if l.value])
    """, str(path))
    assert r["problems"] == [[1, jsonl_fmt.CODE_TOO_DENSE]] and r["ok"] == ["ok1"]  # the rest is served
    assert (r["rss1"] - r["rss0"]) * 1024 <= 20 * size  # before: 32.5x


def test_memory_log_that_is_a_fifo_does_not_block(tmp_path):
    path = tmp_path / "events.jsonl"
    os.mkfifo(path)
    result: list = []
    t = threading.Thread(target=lambda: result.append(jsonl_fmt.JsonlTail(str(path)).read_new().lines), daemon=True)
    t.start()
    t.join(2.0)
    assert result, "reading a FIFO memory log blocked"
    assert [ln.problem.code for ln in result[0]] == [jsonl_fmt.CODE_UNREADABLE]


def test_checkpoint_symlink_to_dev_zero_is_reported(tmp_path):
    proj, _ = _proj(tmp_path)
    os.symlink("/dev/zero", proj / ".harn" / "checkpoints" / "zero.json")
    ws = Workspace(paths_mod.resolve(str(proj), env={}, home=str(tmp_path / "home")))
    ws.rescan()
    probs = [p for p in ws.problems() if p.code == CODE_LINK_OUT]
    assert [p.path for p in probs] == [str(proj / ".harn" / "checkpoints" / "zero.json")]
    assert "-> /dev/zero leaves the project; not followed" in probs[0].message
    assert "ingest" in ws.checkpoints  # the rest is served


# -- symlinks out of the project are reported, never followed ------------------------------------------------

def test_symlinks_out_of_the_project_are_reported_by_name(tmp_path):
    proj, evil = _proj(tmp_path)
    # The attacker's files, valid Harn state full of a secret.
    (evil / "ns").mkdir()
    (evil / "ns" / "events.jsonl").write_text(json.dumps(
        {"type": "store", "id": "s1", "key": "SECRET", "stored_at": "2026-01-01T00:00:00Z", "value": "SECRET"}) + "\n")
    (evil / "ckpt.json").write_text('{"stage": "SECRET"}')
    (evil / "run.json").write_text('{"_type": "run_record", "id": "SECRET-run", "status": "complete"}')
    links = {
        proj / ".harn" / "memory" / "leakdir": evil / "ns",
        proj / ".harn" / "checkpoints" / "leak.json": evil / "ckpt.json",
        proj / ".harn-runs" / "leak.json": evil / "run.json",
    }
    (proj / ".harn-runs").mkdir(exist_ok=True)
    for link, target in links.items():
        os.symlink(target, link)
    ws = Workspace(paths_mod.resolve(str(proj), env={}, home=str(tmp_path / "home")))
    ws.rescan()
    probs = {p.path: p.message for p in ws.problems() if p.code == CODE_LINK_OUT}
    assert set(probs) == {str(k) for k in links}
    for link, target in links.items():
        assert probs[str(link)] == f"symlink {link} -> {target} leaves the project; not followed"
    assert "leak" not in ws.checkpoints and "SECRET-run" not in ws.runs
    assert not any("SECRET" in str(r.value) for space in ws.memory.values() for r in space.records())
    assert ws.checkpoints and ws.facts  # the rest is served


def test_read_confined_refuses_a_symlink_swapped_in(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "proj-evil").mkdir()
    (tmp_path / "proj-evil" / "x").write_text("outside")
    target = root / "a.json"
    target.write_text("{}")
    assert safe_read.read_confined(str(target), str(root), 100) == b"{}"
    target.unlink()
    os.symlink(tmp_path / "proj-evil" / "x", target)
    with pytest.raises(safe_read.ReadRefused, match="leaves the project"):
        safe_read.read_confined(str(target), str(root), 100)
    with pytest.raises(safe_read.ReadRefused, match="too large"):
        (root / "b").write_bytes(b"x" * 101)
        safe_read.read_confined(str(root / "b"), str(root), 100)


def test_llm_turn_log_symlinked_out_is_reported_not_read(tmp_path):
    proj, evil = _proj(tmp_path)
    (evil / "llm_transcript.jsonl").write_text('{"SECRET": 1}\n')
    runs = proj / ".harn-runs"
    runs.mkdir(exist_ok=True)
    (runs / "r9.json").write_text('{"_type": "run_record", "id": "r9", "status": "complete"}')
    (runs / "r9-llm").mkdir()
    os.symlink(evil / "llm_transcript.jsonl", runs / "r9-llm" / "llm_transcript.jsonl")
    run = runs_fmt.read_run_record(str(runs / "r9.json"))
    assert run.llm_transcript_path is None
    assert any("LLM turn log: symlink" in p.message and "leaves the project" in p.message for p in run.problems)
    # A run id that walks out (`../../x`) never names a side file.
    (runs / "r8.json").write_text('{"_type": "run_record", "id": "../../proj-evil/x", "status": "complete"}')
    assert runs_fmt.read_run_record(str(runs / "r8.json")).llm_transcript_path is None


def test_cached_vector_symlinked_to_dev_zero_is_not_read(tmp_path):
    from harn_ls.recall import read_cached_vector

    vdir = tmp_path / "proj" / ".harn" / "memory" / "project" / "vectors" / "hint"
    vdir.mkdir(parents=True)
    os.symlink("/dev/zero", vdir / ("a" * 64 + ".json"))
    t0 = time.thread_time()  # this thread's CPU time: the work itself, whatever else the machine runs
    vec, why = read_cached_vector(str(vdir / ("a" * 64 + ".json")))
    assert vec is None and why.startswith("unreadable cache file") and time.thread_time() - t0 < 1.0
