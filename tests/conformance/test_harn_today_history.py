"""Issue 28 item 6: `harn-ls watch` keeps checkpoint history by the server's own code path
(`model/checkpoint_versions.keep_history`), and `harn-ls show …?version=N` reads what it kept.

Harn source (burin-labs/harn, mirror snapshot e45362cf): crates/harn-vm/src/orchestration/checkpoint.rs
writes `<state root>/checkpoints/<pipeline>.json` as serde_json pretty with sorted keys (harn-formats §B.2);
the files below are written that way, each save replacing the file (atomic rename), as Harn does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from harn_ls.lsp import project as lsp_project
from harn_ls.model.checkpoint_versions import keep_history
from harn_ls.model.workspace import Workspace

FP_A = "sha256:" + "a" * 64
FP_B = "sha256:" + "b" * 64


def _save(path, stages: dict) -> None:
    tmp = str(path) + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(json.dumps(dict(sorted(stages.items())), indent=2))
    os.replace(tmp, path)


def _keyed(fp, value):
    return {"fingerprint": fp, "schema": "harn.checkpoint_stage.keyed.v1", "value": value}


def test_watch_keeps_history_and_show_reads_a_version(tmp_path):
    proj = tmp_path / "proj"
    ck = proj / ".harn" / "checkpoints"
    ck.mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    _save(ck / "ingest.json", {"fetch": "rows", "plan": _keyed(FP_A, 1)})
    env = {**os.environ, "HARN_LS_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "watch", str(proj), "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["event"] == "watching"
        time.sleep(0.3)
        _save(ck / "ingest.json", {"fetch": "rows", "plan": _keyed(FP_B, 2), "clean": [1]})
        line = json.loads(proc.stdout.readline())
        assert "checkpoints" in line["changed"]["kinds"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    show = lambda uri: subprocess.run([sys.executable, "-m", "harn_ls", "show", str(proj), uri],  # noqa: E731
                                      env=env, capture_output=True, text=True, timeout=60)
    v1, v2 = show("harn-state:/checkpoints/ingest.md?version=1"), show("harn-state:/checkpoints/ingest.md?version=2")
    assert v1.returncode == 0 and v2.returncode == 0, (v1.stderr, v2.stderr)
    assert FP_A in v1.stdout and FP_B not in v1.stdout
    assert FP_B in v2.stdout and "clean" in v2.stdout
    missing = show("harn-state:/checkpoints/ingest.md?version=3")
    assert missing.returncode != 0 and "no kept version 3" in missing.stderr
    assert "history is off" not in v1.stderr + v2.stderr
    # nothing of the history lands in the project
    assert sorted(os.listdir(proj / ".harn")) == ["checkpoints"] and os.listdir(ck) == ["ingest.json"]


def test_server_and_watch_share_one_code_path(tmp_path, monkeypatch):
    """The server's project thread keeps history through `model/checkpoint_versions.keep_history` (no copy of its own)."""
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    proj = tmp_path / "proj"
    ck = proj / ".harn" / "checkpoints"
    ck.mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    _save(ck / "a.json", {"s": 1})
    assert lsp_project.keep_history is keep_history
    ws = Workspace.load(str(proj))
    assert keep_history(ws) == [("a", 1)]
    _save(ck / "a.json", {"s": 2})
    changes = ws.apply_changes([str(ck / "a.json")])
    assert keep_history(ws, changes) == [("a", 2)]
    other = Workspace.load(str(proj))  # a second keeper (serve beside watch): same store, no new version
    assert keep_history(other) == []
    assert [v.n for v in other.checkpoint_history.versions("a")] == [1, 2]
