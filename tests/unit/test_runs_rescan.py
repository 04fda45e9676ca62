"""A rescan of the run folder (a directory event) forgets and re-reads run records through a per-file
index of their transcripts: after records are removed, renamed, added (one repeating another's
transcript ids) or a worker snapshot removed, the workspace equals a cold load of the same files."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"
RUNS = ".harn-runs"


def run_state(ws: Workspace) -> dict:
    """All a user can see of runs and transcripts, plus the workspace's own bookkeeping."""
    transcripts = {tid: [e.run_id, e.path, e.message_count, e.event_count, e.asset_count]
                   for tid, e in sorted(ws.transcripts.items())}
    indexed = {tid for tids in ws._transcripts_by_path.values() for tid in tids}
    return {"inspect": orjson.dumps(inspect_json(ws), default=str, option=orjson.OPT_NON_STR_KEYS),
            "runs": sorted((rid, r.path, r.status) for rid, r in ws.runs.items()),
            "run_paths": sorted(ws._run_paths.items()), "transcripts": transcripts,
            "workers": sorted(ws.workers), "every_transcript_indexed": set(transcripts) <= indexed}


def records(project: Path) -> list[Path]:
    return sorted(p for p in (project / RUNS).iterdir() if p.name.endswith(".json") and p.is_file())


def _project(tmp_path: Path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(SAMPLE, dest, symlinks=True)
    return dest


def test_a_rescan_after_runs_removed_renamed_and_added_equals_a_cold_load(tmp_path):
    project = _project(tmp_path)
    ws = Workspace.load(str(project))
    assert ws.transcripts  # the sample's records carry transcripts, so the index is exercised
    first, second = records(project)[:2]
    twin = orjson.loads(second.read_bytes())
    twin["id"] = "run_zz_twin"  # sorted after the others: its transcripts (same ids) win in a cold load
    (project / RUNS / "run_zz_twin.json").write_bytes(orjson.dumps(twin))
    first.rename(first.with_name("run_renamed.json"))
    second.unlink()
    for worker in (project / ".harn" / "workers").glob("*.json"):
        worker.unlink()
    ws.apply_changes([str(project / RUNS), str(project / ".harn" / "workers")])
    got, cold = run_state(ws), run_state(Workspace.load(str(project)))
    assert got == cold
    assert got["every_transcript_indexed"]
    assert "run_zz_twin" in {rid for rid, _path, _status in got["runs"]}


def test_removing_the_twin_gives_the_transcripts_back_to_the_original(tmp_path):
    project = _project(tmp_path)
    original = records(project)[0]
    twin = orjson.loads(original.read_bytes())
    twin["id"] = "run_zz_twin"
    twin_path = project / RUNS / "run_zz_twin.json"
    twin_path.write_bytes(orjson.dumps(twin))
    ws = Workspace.load(str(project))
    shared = {tid for tid, e in ws.transcripts.items() if e.path == str(twin_path)}
    assert shared
    twin_path.unlink()
    ws.apply_changes([str(project / RUNS)])
    assert run_state(ws) == run_state(Workspace.load(str(project)))
    assert shared == {tid for tid, e in ws.transcripts.items() if e.path == str(original)}
