"""A warm load lists unchanged run records from the state cache by one lstat each: whatever happens
to a run record (or to the run folder) between runs, the warm `inspect --json` equals an uncached
one, and a damaged run-listing payload is never trusted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from harn_ls.cache.store import ProjectCache
from harn_ls.model.workspace import Workspace
from tests.helpers.cache_damage import damage_payload
from tests.unit.test_cache import cache_env, project  # noqa: F401  (fixtures)
from tests.unit.test_cache_inspect import cold_bytes, fast

RUNS = ".harn-runs"


def run_files(project: Path) -> list[Path]:
    return sorted(p for p in (project / RUNS).iterdir() if p.name.endswith(".json") and p.is_file())


def filled(project: Path) -> Workspace:
    """Fill the cache (twice: the second load is served from it) and return the warm workspace."""
    for _ in range(2):
        ws = Workspace.load(str(project), cache=True, defer_facts=True, one_shot=True)
        assert ws.save_cache()
    return ws


def served_from_cache(project: Path) -> set[str]:
    cache = ProjectCache.open(str(project))
    assert cache is not None
    paths = [str(p) for p in run_files(project)]
    return set(cache.restore_regular_runs(paths))


def test_unchanged_run_records_are_listed_from_the_cache(project, cache_env):
    filled(project)
    assert served_from_cache(project) == {str(p) for p in run_files(project)}
    got, ws, _data = fast(project)
    assert got == cold_bytes(project)
    assert ws.runs


def _touch_same_size(p: Path) -> None:
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _rewrite_status(p: Path) -> None:
    doc = orjson.loads(p.read_bytes())
    doc["status"] = "failed" if doc.get("status") != "failed" else "completed"
    p.write_bytes(orjson.dumps(doc))


def _delete(p: Path) -> None:
    p.unlink()


def _add_copy(p: Path) -> None:
    doc = orjson.loads(p.read_bytes())
    doc["id"] = "run_added_after_the_cache"
    (p.parent / "run_added_after_the_cache.json").write_bytes(orjson.dumps(doc))


def _link_inside(p: Path) -> None:
    target = p.parent.parent / "elsewhere.json"
    shutil.copyfile(p, target)
    p.unlink()
    p.symlink_to(target)


def _link_outside(p: Path) -> None:
    outside = p.parent.parent.parent / "outside-run.json"
    shutil.copyfile(p, outside)
    p.unlink()
    p.symlink_to(outside)


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _hard_link_elsewhere(p: Path) -> None:
    os.link(p, p.parent.parent / "second-name.json")  # same file: its ctime changes


CHANGES = {"same-size-new-mtime": _touch_same_size, "rewritten": _rewrite_status, "deleted": _delete,
           "added": _add_copy, "symlink-inside": _link_inside, "symlink-outside": _link_outside,
           "directory": _directory, "hard-linked": _hard_link_elsewhere}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_run_record_is_read_again(project, cache_env, change):
    filled(project)
    victim = run_files(project)[0]
    CHANGES[change](victim)
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    if change != "added":
        assert str(victim) not in served_from_cache(project)  # never answered from the stale entry
    assert ws.save_cache()
    assert fast(project)[0] == expected  # and the refreshed cache agrees


def test_a_run_folder_that_leaves_the_project_is_not_listed_from_the_cache(project, cache_env, tmp_path):
    filled(project)
    moved = tmp_path / "runs-outside"
    shutil.move(str(project / RUNS), moved)
    (project / RUNS).symlink_to(moved)
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    assert not ws.runs


@pytest.mark.parametrize("damage", ["flip", "truncate", "not-a-dict", "bad-rows"])
def test_a_damaged_run_listing_is_never_trusted(project, cache_env, damage):
    filled(project)

    def rewrite(doc: dict) -> dict:
        if damage == "not-a-dict":
            return {path: "entry" for path in doc}
        return {path: [entry[0], {"id": 1}] for path, entry in doc.items()}

    damage_payload(project, "runs", damage, (b'"status":"', b'"status":"X'), rewrite)
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    assert ws.save_cache()
    assert fast(project)[0] == expected
    assert served_from_cache(project) == {str(p) for p in run_files(project)}  # rebuilt


def test_a_run_record_rewritten_while_it_is_read_is_not_cached_with_the_new_stat(project, cache_env, monkeypatch):
    """The record is read, then rewritten before the reader returns: the stat after the read is the new
    file's, the content the old one's. That pair must not be cached, or the next warm load would list
    the old content for the new file."""
    from harn_ls.model import runs as model_runs

    victim = run_files(project)[0]
    real_read = model_runs.runs_fmt.read_run_record
    rewritten = []

    def read_then_rewrite(path, **kw):
        run = real_read(path, **kw)
        if path == str(victim) and not rewritten:
            _rewrite_status(victim)
            rewritten.append(path)
        return run

    monkeypatch.setattr(model_runs.runs_fmt, "read_run_record", read_then_rewrite)
    ws = Workspace.load(str(project), cache=True, defer_facts=True, one_shot=True)
    assert rewritten and ws.save_cache()
    monkeypatch.setattr(model_runs.runs_fmt, "read_run_record", real_read)
    assert str(victim) not in served_from_cache(project)
    expected = cold_bytes(project)
    assert fast(project)[0] == expected


def _runs_view(ws: Workspace) -> dict:
    """Every field of every listed run record, as documents and the run timeline read them."""
    return {rid: (r.status, r.path, r.stages, r.usage, [(t.id, t.message_count, t.event_count, t.asset_count)
                                                        for t in r.transcripts], [p.to_json() for p in r.problems],
                  r.mtime, r.size, r.task, r.workflow_id, r.started_at, r.finished_at, r.llm_transcript_path)
            for rid, r in sorted(ws.runs.items())}


def test_a_full_warm_load_lists_run_records_with_their_stages_and_usage(project, cache_env):
    """A one-shot `inspect --json` leaves the cached stages and usage undecoded; a load that shows run
    documents decodes them, and they equal an uncached read, as does the rest of each record."""
    expected = _runs_view(Workspace.load(str(project)))
    assert any(stages for _s, _p, stages, *_rest in expected.values())  # (the sample has stages to lose)
    filled(project)
    assert served_from_cache(project) == {str(p) for p in run_files(project)}
    warm = Workspace.load(str(project), cache=True)
    assert _runs_view(warm) == expected
    # a server's start (facts deferred, not one-shot) shows run documents: issue 34's cold/warm sweep
    # found them without Usage and Stages
    server = Workspace.load(str(project), cache=True, defer_facts=True, keep_rows=False, fold_values=True)
    assert _runs_view(server) == expected
    slim = Workspace.load(str(project), cache=True, defer_facts=True, one_shot=True)
    assert all(not r.stages and not r.usage for r in slim.runs.values())
    assert {rid: v[:2] + v[4:] for rid, v in _runs_view(slim).items()} == {rid: v[:2] + v[4:] for rid, v in expected.items()}
    assert slim.save_cache() is not None
    assert _runs_view(Workspace.load(str(project), cache=True)) == expected  # kept through a one-shot save


@pytest.mark.parametrize("damage", ["details-not-json", "details-not-a-pair", "previous-entry-shape", "short-values"])
def test_cached_run_details_that_do_not_fit_are_never_trusted(project, cache_env, damage):
    expected = _runs_view(Workspace.load(str(project)))
    expected_inspect = cold_bytes(project)
    filled(project)

    def rewrite(doc: dict) -> dict:
        out = {}
        for path, (validator, values, details) in doc.items():
            if damage == "details-not-json":
                out[path] = [validator, values, details[:-1]]
            elif damage == "details-not-a-pair":
                out[path] = [validator, values, orjson.dumps({"stages": []}).decode()]
            elif damage == "previous-entry-shape":  # harn-ls-state/6: [validator, {field: value}]
                out[path] = [validator, {"id": values[0], "path": values[1]}]
            else:
                out[path] = [validator, values[:-1], details]
        return out

    damage_payload(project, "runs", damage, (b"", b""), rewrite)
    assert _runs_view(Workspace.load(str(project), cache=True)) == expected
    assert fast(project)[0] == expected_inspect
