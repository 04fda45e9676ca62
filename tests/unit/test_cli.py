"""The CLI as a user runs it: real subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"


def run(*args, cwd=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "harn_ls", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_inspect_json_counts_every_kind():
    proc = run("inspect", str(SAMPLE), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    c = data["counts"]
    assert c["checkpoints"] == 2 and c["checkpointKeys"] == 9
    assert c["namespaces"] == 4 and c["facts"] == 7
    assert c["proposals"] == 3 and len(data["pattern_learning"]["pending"]) == 4
    assert c["runs"] == 3 and c["transcripts"] == 5 and c["sessions"] == 2
    assert set(data["skills"]) >= {"project", "package", "claude", "burin"}
    assert data["problems"] and all({"path", "line", "code", "message"} <= set(p) for p in data["problems"])


def test_inspect_text_and_subdirectory_resolves_to_project_root():
    proc = run("inspect", str(SAMPLE / "src" / "billing"))
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"harn-ls: {SAMPLE}")
    assert "pending proposal" in proc.stdout


def test_show_renders_index_and_refuses_bad_uri():
    proc = run("show", str(SAMPLE), "harn-state:/index.md")
    assert proc.returncode == 0 and proc.stdout.startswith("# Harn state")
    bad = run("show", str(SAMPLE), "harn-state:/memory/../x.md")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "refused" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_unusable_path_exit_2():
    proc = run("inspect", "/nonexistent/project")
    assert proc.returncode == 2
    assert proc.stderr.startswith("harn-ls: ") and proc.stderr.count("\n") == 1


def test_recall_json_rank_order():
    proc = run("recall", str(SAMPLE), "invoice rounding", "-k", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert 1 <= len(hits) <= 3
    assert all({"id", "key", "namespace", "score", "stored_at", "tags"} <= set(h) for h in hits)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0]["id"] == "fact_a26c5c67468c8d3fe33f8c8c0f5489e6"
    unknown = run("recall", str(SAMPLE), "x", "--namespace", "nope")
    assert unknown.returncode == 2


def test_watch_prints_a_line_per_batch(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(SAMPLE, project)
    proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "watch", str(project), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())
        assert first["event"] == "watching" and first["counts"]["facts"] == 7
        time.sleep(0.3)
        with open(project / ".harn/memory/agent/notes/events.jsonl", "a") as fh:
            fh.write(json.dumps({"type": "store", "id": "w1", "namespace": "agent/notes", "key": "k", "value": "v",
                                 "text": "v", "tags": [], "stored_at": "2026-11-29T00:00:00+00:00"}) + "\n")
        line = json.loads(proc.stdout.readline())
        assert "memory" in line["changed"]["kinds"] and line["changed"]["namespaces"] == ["agent/notes"]
        assert line["counts"]["records"] == first["counts"]["records"] + 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_run_document_summarises_llm_calls():
    proc = run("show", str(SAMPLE), "harn-state:/runs/run_019dfd98-73c0-704c-9bb0-e3d1289d2568.md")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "## LLM calls" in text
    text = text[text.index("## LLM calls"):]  # the timeline table above has its own numbered rows
    rows = [line for line in text.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert len(rows) == 2 and "claude-sonnet-4-5" in rows[0] and "read_file" in rows[0]
