"""Checkpoint history: kept outside the project, deduplicated, bounded; version and history documents; lens hint."""

from __future__ import annotations

import json
import os

import pytest

from harn_ls.cache.checkpoint_history import CheckpointHistory
from harn_ls.lsp.tree import tree_options
from harn_ls.model.checkpoint_versions import record_workspace
from harn_ls.model.workspace import Workspace
from harn_ls.render import UriError, render_uri
from harn_ls.render.checkpoint_history import diff, last_change, parse
from harn_ls.render.tree_items import tree_items

FP_A = "sha256:" + "a" * 64
FP_B = "sha256:" + "b" * 64


def keyed(fp, value):
    return {"fingerprint": fp, "schema": "harn.checkpoint_stage.keyed.v1", "value": value}


def harn_bytes(mapping) -> bytes:
    return json.dumps(dict(sorted(mapping.items())), indent=2).encode()


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARN_LS_CACHE", raising=False)
    p = tmp_path / "proj"
    (p / ".harn" / "checkpoints").mkdir(parents=True)
    (p / "harn.toml").write_text("")
    return p


def files_under(path):
    return sorted(os.path.join(r, f) for r, _d, fs in os.walk(path) for f in fs)


def test_versions_are_deduplicated_and_kept_outside_the_project(proj, tmp_path):
    before = files_under(proj)
    h = CheckpointHistory(str(proj))
    assert h.folder.startswith(str(tmp_path / "cache"))
    v1 = harn_bytes({"fetch": "rows", "plan": keyed(FP_A, 1)})
    v2 = harn_bytes({"fetch": "rows", "plan": keyed(FP_B, 2)})
    assert h.record("ingest", v1) == 1
    assert h.record("ingest", v1) is None  # same as the newest: not a version
    assert h.record("ingest", v2) == 2
    assert h.record("ingest", v1) == 3  # back to the first content: a new version, same object
    objects = os.listdir(os.path.join(h._dir("ingest"), "objects"))
    assert len(objects) == 2
    assert [v.n for v in h.versions("ingest")] == [1, 2, 3]
    assert h.read("ingest", 2) == v2 and h.read("ingest", 3) == v1
    assert files_under(proj) == before  # nothing written inside the project


def test_history_refuses_a_folder_inside_the_project(proj):
    with pytest.raises(ValueError):
        CheckpointHistory(str(proj), folder=str(proj / ".harn" / "history"))


def test_bounds_per_pipeline_and_total_bytes(proj, tmp_path):
    h = CheckpointHistory(str(proj), max_versions=3, max_bytes=10_000)
    for i in range(10):
        h.record("a", harn_bytes({"s": i}))
    assert [v.n for v in h.versions("a")] == [8, 9, 10]
    assert len(os.listdir(os.path.join(h._dir("a"), "objects"))) == 3
    big = CheckpointHistory(str(proj), folder=str(tmp_path / "cache2"), max_versions=100, max_bytes=5_000)
    for i in range(20):
        big.record("p1", harn_bytes({"s": "x" * 900 + str(i)}))
        big.record("p2", harn_bytes({"t": "y" * 900 + str(i)}))
    assert big.total_bytes() <= 5_000
    # the newest version of each pipeline survives
    assert big.read("p1", big.versions("p1")[-1].n) == harn_bytes({"s": "x" * 900 + "19"})
    assert big.read("p2", big.versions("p2")[-1].n) == harn_bytes({"t": "y" * 900 + "19"})


def test_tampered_object_is_not_served(proj):
    h = CheckpointHistory(str(proj))
    h.record("a", harn_bytes({"s": 1}))
    v = h.versions("a")[0]
    with open(os.path.join(h._dir("a"), "objects", f"{v.sha256}.json"), "wb") as fh:
        fh.write(b'{"s": 666}')
    assert h.read("a", 1) is None


def test_diff_names_added_removed_value_and_fingerprint():
    old = parse("p", harn_bytes({"gone": 1, "same": 2, "val": 3, "fp": keyed(FP_A, 1)}))
    new = parse("p", harn_bytes({"same": 2, "val": 4, "fp": keyed(FP_B, 1), "new": None}))
    d = diff(old, new)
    assert (d.added, d.removed, d.value_changed, d.fingerprint_changed) == (["new"], ["gone"], ["val"], ["fp"])


def test_documents_tree_and_lens_hint_from_the_workspace(proj):
    path = proj / ".harn" / "checkpoints" / "ingest.json"
    path.write_bytes(harn_bytes({"fetch": "rows", "plan": keyed(FP_A, 1)}))
    ws = Workspace.load(str(proj), env={}, home=str(proj.parent / "home"))
    ws.checkpoint_history = CheckpointHistory.for_project(str(proj))
    assert record_workspace(ws) == [("ingest", 1)]
    assert last_change(ws, "ingest") is None
    path.write_bytes(harn_bytes({"fetch": "rows", "plan": keyed(FP_B, 1), "clean": [1]}))
    ws.apply_changes({str(path)})
    assert record_workspace(ws, {"ingest"}) == [("ingest", 2)]
    assert record_workspace(ws, {"ingest"}) == []
    change = last_change(ws, "ingest")
    assert change.changed("plan") and change.changed("clean") and not change.changed("fetch")

    doc = render_uri(ws, "harn-state:/checkpoints/ingest.md")
    assert "## History (2 version(s) kept)" in doc
    assert "[2](harn-state:/checkpoints/ingest.md?version=2)" in doc
    assert "added: clean; fingerprint changed: plan" in doc
    v1 = render_uri(ws, "harn-state:/checkpoints/ingest.md?version=1")
    v2 = render_uri(ws, "harn-state:/checkpoints/ingest.md?version=2")
    assert FP_A in v1 and FP_B in v2 and "## clean" in v2 and "## clean" not in v1
    with pytest.raises(UriError):
        render_uri(ws, "harn-state:/checkpoints/ingest.md?version=9")

    stages = tree_items(ws, "checkpoints", "ckpt:ingest", tree_options())
    hist = [i for i in stages if i["contextValue"] == "checkpointHistory"]
    assert hist and hist[0]["description"] == "2 version(s)"
    versions = tree_items(ws, "checkpoints", hist[0]["id"], tree_options())
    assert [v["label"] for v in versions] == ["version 2", "version 1"]
    assert versions[0]["contextValue"] == "checkpointVersion"
    assert versions[0]["data"]["previousUri"] == "harn-state:/checkpoints/ingest.md?version=1"
    assert versions[1]["contextValue"] == "checkpointVersion.first"


def test_cache_off_means_no_history(proj, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE", "off")
    assert CheckpointHistory.for_project(str(proj)) is None


def _stored(h: CheckpointHistory) -> dict:
    return {p: [(v.n, v.sha256, v.size) for v in h.versions(p)] for p in h.pipelines()}


def test_a_batch_evicts_what_one_record_at_a_time_evicts(proj, tmp_path):
    """Rounds of new versions of five pipelines (sizes differ, some content comes back): recorded a round
    per batch, the history keeps exactly the versions and objects it keeps recorded one at a time."""
    one = CheckpointHistory(str(proj), folder=str(tmp_path / "one"), max_versions=6, max_bytes=9_000)
    batched = CheckpointHistory(str(proj), folder=str(tmp_path / "batched"), max_versions=6, max_bytes=9_000)
    for rnd in range(8):
        data = {f"p{k}": harn_bytes({"s": "x" * (150 * k + 40 * (rnd % 3)) + str(rnd % 5)}) for k in range(5)}
        for name, body in data.items():
            one.record(name, body, seen_at=1000.0 + rnd * 10 + int(name[1:]))
        for name, body in data.items():
            batched.record(name, body, seen_at=1000.0 + rnd * 10 + int(name[1:]), check_caps=False)
        batched.check_caps()
        assert _stored(batched) == _stored(one), rnd
        assert batched.total_bytes() == one.total_bytes() <= 9_000
    assert sum(len(v) for v in _stored(one).values()) < 8 * 5  # the cap did evict


def test_recording_a_load_walks_the_cache_folders_once(proj, monkeypatch):
    """A load records every checkpoint file: the history and the cache root are measured once for
    the whole load, not once per version recorded (directories listed, counted)."""
    for k in range(6):
        (proj / ".harn" / "checkpoints" / f"pipe{k}.json").write_bytes(harn_bytes({"plan": keyed(FP_A, k)}))
    ws = Workspace.load(str(proj))
    ws.checkpoint_history = CheckpointHistory(str(proj))
    cache = os.environ["HARN_LS_CACHE_DIR"]
    listed: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path="."):
        if str(path).startswith(cache):
            listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    assert len(record_workspace(ws)) == 6
    monkeypatch.setattr(os, "scandir", real_scandir)
    folders = sum(len(dirs) for _r, dirs, _f in os.walk(cache)) + 1
    assert len(listed) <= 2 * folders + 2, (len(listed), folders)  # one walk of the history, one of the cache root
    assert listed.count(cache) == 1  # the cache root's projects: looked at once


def test_version_times_are_shown_as_every_other_time_and_a_bad_one_breaks_nothing(proj):
    """The tree's and the documents' version times go through harn_time (render/markdown.display_time): the
    same `YYYY-MM-DD HH:MM:SS` as every other time shown; a time no clock can show (an index written by
    another tool) is shown as written, and the tree and the documents still come."""
    path = proj / ".harn" / "checkpoints" / "ingest.json"
    path.write_bytes(harn_bytes({"plan": keyed(FP_A, 1)}))
    ws = Workspace.load(str(proj), env={}, home=str(proj.parent / "home"))
    ws.checkpoint_history = hist = CheckpointHistory.for_project(str(proj))
    assert hist.record("ingest", harn_bytes({"plan": keyed(FP_A, 1)}), seen_at=1778235300.75) == 1
    assert hist.record("ingest", harn_bytes({"plan": keyed(FP_B, 2)}), seen_at=1e300) == 2
    stages = tree_items(ws, "checkpoints", "ckpt:ingest", tree_options())
    hist_id = next(i["id"] for i in stages if i["contextValue"] == "checkpointHistory")
    versions = tree_items(ws, "checkpoints", hist_id, tree_options())
    assert [v["description"] for v in versions] == ["1e+300 · newest", "2026-05-08 10:15:00"]
    doc = render_uri(ws, "harn-state:/checkpoints/ingest.md")
    assert "| 2026-05-08 10:15:00 UTC |" in doc and "| 1e+300 UTC |" in doc
    assert "Seen 1e+300 UTC" in render_uri(ws, "harn-state:/checkpoints/ingest.md?version=2")
