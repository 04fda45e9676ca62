"""Checkpoint files are kept in the state cache per file, with the lstat of the regular file they
were read from: whatever happens to one between runs, the warm `inspect --json` equals an uncached
one, and a damaged checkpoint payload is never trusted."""

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

CHECKPOINTS = ".harn/checkpoints"


def files(project: Path) -> list[Path]:
    return sorted(p for p in (project / CHECKPOINTS).iterdir() if p.name.endswith(".json") and p.is_file())


def filled(project: Path) -> None:
    for _ in range(2):
        assert Workspace.load(str(project), cache=True, defer_facts=True).save_cache()


def cached_paths(project: Path) -> set[str]:
    """The files a fresh cache answers from its rows (without reading them)."""
    cache = ProjectCache.open(str(project))
    rows = cache.checkpoint_rows
    for p in files(project):
        rows.read(cache, str(p))
    return {p for p, entry in rows.seen.items() if entry is rows.cached.get(p)}  # restored, not read


def _rewrite(p: Path) -> None:
    doc = orjson.loads(p.read_bytes())
    doc["added-stage"] = {"value": 1}
    p.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def _same_size(p: Path) -> None:
    data = p.read_bytes()
    i = data.index(b'"', data.index(b"{") + 1) + 1  # the first key's first character
    st = p.stat()
    p.write_bytes(data[:i] + bytes([data[i] ^ 1]) + data[i + 1:])
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 3_000_000_000))


def _deleted(p: Path) -> None:
    p.unlink()


def _added(p: Path) -> None:
    shutil.copyfile(p, p.parent / "added-pipeline.json")


def _link_inside(p: Path) -> None:
    target = p.parent.parent / "kept-elsewhere.json"
    shutil.copyfile(p, target)
    _rewrite(target)
    p.unlink()
    p.symlink_to(target)


def _link_outside(p: Path) -> None:
    outside = p.parent.parent.parent.parent / "outside-checkpoint.json"
    shutil.copyfile(p, outside)
    p.unlink()
    p.symlink_to(outside)


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _half_written(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


CHANGES = {"rewritten": _rewrite, "same-size-new-mtime": _same_size, "deleted": _deleted, "added": _added,
           "symlink-inside": _link_inside, "symlink-outside": _link_outside, "directory": _directory,
           "half-written": _half_written}


def test_unchanged_checkpoints_come_from_the_cache(project, cache_env):
    filled(project)
    assert files(project)
    assert cached_paths(project) == {str(p) for p in files(project)}
    assert fast(project)[0] == cold_bytes(project)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_checkpoint_is_read_again(project, cache_env, change):
    filled(project)
    victim = files(project)[0]
    CHANGES[change](victim)
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    assert ws.save_cache()
    assert fast(project)[0] == expected
    assert Workspace.load(str(project), cache=True).checkpoints.keys() == Workspace.load(str(project)).checkpoints.keys()


@pytest.mark.parametrize("damage", ["flip", "truncate", "bad-rows", "other-path"])
def test_a_damaged_checkpoint_payload_is_never_trusted(project, cache_env, damage):
    filled(project)

    def rewrite(doc: dict) -> dict:
        if damage == "bad-rows":
            return {path: [entry[0], ["only", "three", "fields"]] for path, entry in doc.items()}
        # rows that name another file than the one they are filed under
        return {path: [entry[0], [entry[1][0], "/elsewhere.json", *entry[1][2:]]] for path, entry in doc.items()}

    damage_payload(project, "checkpoints", damage, (b'"', b"'"), rewrite)
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    assert ws.save_cache()
    assert cached_paths(project) == {str(p) for p in files(project)}  # rebuilt
    assert fast(project)[0] == expected
