"""A one-shot `inspect --json` loads the SQLite, HITL, session-store and document helpers only when
the project has what they read: a project without an event log or a session store never pays for
them, and one with them still gets them read (the lazy imports skip no reader). Likewise argparse
(cli_args reads the usual command lines) and the fact and transcript classes, which a warm inspect prints from the
state cache without building."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.unit.test_cache import cache_env, project  # noqa: F401  (fixtures)

WATCHED = ["sqlite3", "tempfile", "threading", "harn_ls.formats.events_sqlite", "harn_ls.formats.hitl.requests",
           "harn_ls.formats.session_store", "harn_ls.render.uri", "harn_ls.render.markdown", "argparse",
           "harn_ls.formats.fact_types"]

# runs the CLI in a fresh interpreter, its answer to a file, then says which watched modules it loaded
CHILD = r"""
import json, os, sys
out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.dup2(out, 1)
from harn_ls.cli.main import main
code = main(["inspect", sys.argv[1], "--json"])
sys.stdout.flush()
sys.stderr.write(json.dumps({"code": code, "loaded": [m for m in json.loads(sys.argv[3]) if m in sys.modules]}))
"""


def run_inspect(project, tmp_path, watched: list[str] = WATCHED) -> tuple[dict, list[str]]:
    answer = tmp_path / "answer.json"
    done = subprocess.run([sys.executable, "-c", CHILD, str(project), str(answer), json.dumps(watched)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0
    return json.loads(answer.read_bytes()), report["loaded"]


def test_a_project_with_event_log_and_session_store_still_has_them_read(project, cache_env, tmp_path):
    data, loaded = run_inspect(project, tmp_path)
    assert {"sqlite3", "harn_ls.formats.events_sqlite", "harn_ls.formats.hitl.requests",
            "harn_ls.formats.session_store"} <= set(loaded)
    assert any(log["backend"] == "sqlite" and log["topics"] for log in data["event_logs"])
    assert data["sessions"] is not None and data["sessions"]["sessions"]


def test_warm_inspect_without_them_loads_none_of_their_readers(project, cache_env, tmp_path):
    for name in ("events.sqlite", "session-store.sqlite"):
        for suffix in ("", "-wal", "-shm"):
            (project / ".harn" / (name + suffix)).unlink(missing_ok=True)
    cold, _ = run_inspect(project, tmp_path)  # fills the state cache
    warm, loaded = run_inspect(project, tmp_path)
    assert warm == cold
    assert warm["event_logs"] == [] and warm["sessions"] is None and warm["hitl"] == {"waiting": [], "resolved": []}
    assert loaded == []


def test_warm_inspect_restores_run_transcripts_without_the_transcript_reader(project, cache_env, tmp_path):
    """Run records come back from the state cache with their transcript summaries: a warm inspect of a
    project without worker snapshots (which are read each time) loads no transcript view, and lists
    the same runs and transcripts as the inspect that filled the cache."""
    for worker in (project / ".harn" / "workers").glob("*.json"):
        worker.unlink()
    watched = WATCHED + ["harn_ls.formats.transcripts"]
    cold, cold_loaded = run_inspect(project, tmp_path, watched)
    warm, loaded = run_inspect(project, tmp_path, watched)
    assert "harn_ls.formats.transcripts" in cold_loaded  # the cold load read the run records' transcripts
    assert "harn_ls.formats.fact_types" in cold_loaded  # and built the facts it then cached
    assert "harn_ls.formats.transcripts" not in loaded
    assert warm == cold and warm["transcripts"] and any(r["transcripts"] for r in warm["runs"])


def test_state_file_records_load_only_for_a_project_that_has_state_files(project, cache_env, tmp_path):
    """The embedding cache of the sample project is still read and listed (its record class loads);
    without it, neither the state-file records nor the fact classes load on a warm inspect."""
    watched = ["harn_ls.formats.state_file_types", "harn_ls.formats.fact_types"]
    cold, _ = run_inspect(project, tmp_path, watched)
    warm, loaded = run_inspect(project, tmp_path, watched)
    assert warm == cold and warm["embed_cache"] and loaded == ["harn_ls.formats.state_file_types"]
    for vectors in sorted((project / ".harn" / "memory").rglob("vectors"), reverse=True):
        shutil.rmtree(vectors)
    cold, _ = run_inspect(project, tmp_path, watched)
    warm, loaded = run_inspect(project, tmp_path, watched)
    assert warm == cold and warm["embed_cache"] == [] and loaded == []
