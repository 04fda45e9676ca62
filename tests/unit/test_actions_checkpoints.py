"""forget_stage: atomic rewrite of a checkpoint file in Harn's pretty format (harn-formats §B)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed
from harn_ls.actions.checkpoints import LOCK_DEADLINE, forget_stage
from harn_ls.formats.locks import checkpoint_lock_path, checkpoint_running
from harn_ls.model.workspace import Workspace
from tests.helpers.lock_holder import lock_holder  # noqa: F401 (pytest fixture)
from tests.helpers.tree import snapshot

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"

# review.json without "lint", written out by hand: serde_json pretty, 2 spaces, no final newline
EXPECTED_REVIEW = """{
  "collect_diff": "diff --git a/src/billing/invoice.py b/src/billing/invoice.py\\n-LATE_FEE_RATE = Decimal(\\"0.015\\")\\n\
+LATE_FEE_RATE = Decimal(\\"0.02\\")\\n",
  "reviewed_pr": 481,
  "summarize": {
    "fingerprint": "sha256:817f11e99c260fde091e13b8a99b9d2d2e97ed0efb08472e3feaedd829e032b9",
    "schema": "harn.checkpoint_stage.keyed.v1",
    "value": "Raises the late fee from 1.5% to 2%. Customer-facing: update the terms page and the dunning emails."
  }
}"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    (tmp_path / "outside").mkdir()
    return dest




def test_forget_stage_exact_text(project):
    ws = Workspace.load(str(project))
    path = project / ".harn/checkpoints/review.json"
    result = forget_stage(ws, "review", "lint", expect_mtime=ws.checkpoints["review"].mtime)
    assert path.read_text() == EXPECTED_REVIEW
    assert result["remaining"] == ["collect_diff", "reviewed_pr", "summarize"]
    assert "lint" not in ws.checkpoints["review"].entries  # live model updated
    cold = Workspace.load(str(project))
    assert list(cold.checkpoints["review"].entries) == ["collect_diff", "reviewed_pr", "summarize"]
    assert cold.checkpoints["review"].entries["summarize"].keyed
    assert not cold.checkpoints["review"].problems
    assert not [n for n in os.listdir(path.parent) if n.endswith(".tmp")]


def test_forget_keyed_stage_and_last_key(project):
    ws = Workspace.load(str(project))
    for key in ("clean", "fetch", "prepare", "processed_ids"):
        forget_stage(ws, "ingest", key)
    assert (project / ".harn/checkpoints/ingest.json").read_text() == '{\n  "upload": null\n}'
    forget_stage(ws, "ingest", "upload")
    assert (project / ".harn/checkpoints/ingest.json").read_text() == "{}"


def test_nested_order_kept_as_loaded(project):
    path = project / ".harn/checkpoints/odd.json"
    path.write_text('{"b": {"z": 1, "a": [1.0, {"y": null, "x": "\\u00e9"}]}, "a": 1, "c": 1e400}'.replace("1e400", "2"))
    ws = Workspace.load(str(project))
    forget_stage(ws, "odd", "a")
    # Harn re-saves what it loaded: top-level sorted, nested as in the file, floats as serde writes them
    assert path.read_text() == ('{\n  "b": {\n    "z": 1,\n    "a": [\n      1.0,\n      {\n        "y": null,\n'
                                '        "x": "é"\n      }\n    ]\n  },\n  "c": 2\n}')


@pytest.mark.parametrize("pipeline", ["", ".", "..", "../review", "a/b", "review\n", "rev\x00iew", "a\\b"])
def test_bad_pipeline_names_refused(project, tmp_path, pipeline):
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="refused"):
        forget_stage(ws, pipeline, "lint")
    assert snapshot(tmp_path) == before


def test_refusals_leave_file_untouched(project, tmp_path):
    ws = Workspace.load(str(project))
    path = project / ".harn/checkpoints/review.json"
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="no stage"):
        forget_stage(ws, "review", "nope")
    with pytest.raises(ActionFailed, match="does not exist"):
        forget_stage(ws, "missing", "lint")
    with pytest.raises(ActionFailed, match="changed since"):
        forget_stage(ws, "review", "lint", expect_mtime=ws.checkpoints["review"].mtime - 10)
    assert snapshot(tmp_path) == before
    # caught mid-write by Harn (truncate + write): refuse, never "repair"
    text = path.read_text()
    for partial in ("", text[:40], "[1, 2]"):
        path.write_text(partial)
        before = snapshot(tmp_path)
        with pytest.raises(ActionFailed, match="refused"):
            forget_stage(ws, "review", "lint")
        assert snapshot(tmp_path) == before


def test_symlinked_checkpoint_refused(project, tmp_path):
    outside = tmp_path / "outside" / "x.json"
    outside.write_text('{"a": 1, "b": 2}')
    os.symlink(outside, project / ".harn/checkpoints/x.json")
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="refused"):
        forget_stage(ws, "x", "a")
    assert snapshot(tmp_path) == before






def test_refused_while_a_pipeline_holds_the_checkpoint_lock(project, tmp_path, lock_holder):
    ws = Workspace.load(str(project))
    path = project / ".harn/checkpoints/review.json"
    lock = project / ".harn/checkpoints/review.lock"
    assert checkpoint_lock_path(str(path)) == str(lock)
    assert checkpoint_running(str(path)) is False and not lock.exists()  # reading never creates it
    holder = lock_holder(lock)
    assert checkpoint_running(str(path)) is True
    before = snapshot(tmp_path)
    start = time.monotonic()
    with pytest.raises(ActionFailed,
                       match=r"a pipeline is writing this checkpoint right now.*timed out after 0\.4s.*review\.lock"):
        forget_stage(ws, "review", "lint", timeout=0.4)
    assert 0.4 <= time.monotonic() - start < 3
    assert snapshot(tmp_path) == before  # nothing written
    holder.stdin.close()
    holder.wait(timeout=10)
    assert checkpoint_running(str(path)) is False
    forget_stage(ws, "review", "lint")
    assert path.read_text() == EXPECTED_REVIEW
    assert lock.exists() and lock.stat().st_size == 0  # the lock file stays, empty, as Harn leaves it


def test_waits_for_a_short_save_like_harn(project, lock_holder):
    """A save that releases within the deadline is waited for, then the key is dropped from what it wrote."""
    ws = Workspace.load(str(project))
    path = project / ".harn/checkpoints/review.json"
    holder = lock_holder(project / ".harn/checkpoints/review.lock")
    # the pipeline, under its lock, adds a stage; our action must re-read under the lock and keep it
    data = json.loads(path.read_text())
    data["late"] = 1
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    threading.Timer(0.3, holder.stdin.close).start()
    forget_stage(ws, "review", "lint")
    assert set(json.loads(path.read_text())) == {"collect_diff", "reviewed_pr", "summarize", "late"}
    assert LOCK_DEADLINE == 5.0


def test_lock_symlink_refused(project, tmp_path):
    (tmp_path / "outside" / "evil.lock").write_text("")
    os.symlink(tmp_path / "outside" / "evil.lock", project / ".harn/checkpoints/review.lock")
    ws = Workspace.load(str(project))
    with pytest.raises(ActionFailed, match="refused"):
        forget_stage(ws, "review", "lint")
    assert "lint" in (project / ".harn/checkpoints/review.json").read_text()


def test_mode_kept_and_new_files_get_harns_mode(project):
    ws = Workspace.load(str(project))
    path = project / ".harn/checkpoints/review.json"
    os.chmod(path, 0o600)
    forget_stage(ws, "review", "lint")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(path).st_uid == os.getuid()
    os.chmod(path, 0o640)
    forget_stage(ws, "review", "reviewed_pr")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    umask = os.umask(0)
    os.umask(umask)
    lock = project / ".harn/checkpoints/review.lock"
    assert stat.S_IMODE(os.stat(lock).st_mode) == 0o666 & ~umask


def test_state_dir_outside_project(project, tmp_path):
    """HARN_STATE_DIR elsewhere: the checkpoint is rewritten there, still confined to that root."""
    state = tmp_path / "state"
    shutil.copytree(project / ".harn", state)
    ws = Workspace.load(str(project), env={"HARN_STATE_DIR": str(state)})
    forget_stage(ws, "review", "lint")
    assert (state / "checkpoints/review.json").read_text() == EXPECTED_REVIEW
    assert "lint" in (project / ".harn/checkpoints/review.json").read_text()
