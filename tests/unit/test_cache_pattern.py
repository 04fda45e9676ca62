"""A warm one-shot `inspect --json` takes the pattern-learning projection from the state cache when
its namespace is restored unchanged from the very entry the projection was made of. Whatever
changes (an append, a rewrite, a damaged or foreign payload), the output equals an uncached run's."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import orjson
import pytest

from harn_ls.cache.store import MANIFEST, ProjectCache
from harn_ls.model.workspace import Workspace
from tests.unit.test_cache import append, cache_env, project  # noqa: F401  (fixtures)
from tests.unit.test_cache_inspect import cold_bytes, fast

PATTERN = ".harn/memory/project/pattern-learning/events.jsonl"


def fill(project: Path) -> None:
    for _ in range(2):  # the second one-shot load is served from the cache and keeps the entry
        ws = Workspace.load(str(project), cache=True, defer_facts=True, one_shot=True)
        assert ws.save_cache()


def restored(ws: Workspace) -> bool:
    """The projection came from the cache (no record links), not from the namespace's records."""
    return ws._pattern_made_of is None and all(p.record is None for p in ws.pattern.pending)


def pattern_entry(project: Path) -> tuple[Path, dict]:
    folder = Path(ProjectCache(str(project)).folder)
    return folder, orjson.loads((folder / MANIFEST).read_bytes())


def pending_event(pid: str, support: int) -> bytes:
    value = {"schema": "harn.pattern_learning.v1", "record_kind": "pending", "id": pid, "kind": "skill",
             "source": "observation", "name": f"name-{pid}", "title": "t", "description": "d", "support": support}
    ev = {"type": "store", "id": f"pending_{pid}", "namespace": "project/pattern-learning", "key": f"pending:{pid}",
          "value": value, "text": orjson.dumps(value).decode(),
          "tags": ["pattern_learning", "pattern_learning:pending", "schema:harn.pattern_learning.v1"],
          "stored_at": "2026-06-01T10:00:00.000Z"}
    return orjson.dumps(ev) + b"\n"


def test_the_projection_of_an_unchanged_namespace_comes_from_the_cache(project, cache_env):
    fill(project)
    expected = cold_bytes(project)
    got, ws, data = fast(project)
    assert got == expected
    assert restored(ws)
    assert data["pattern_learning"]["pending"]  # the sample has proposals: something was really restored
    assert ws.counts()["proposals"] == Workspace.load(str(project)).counts()["proposals"]


def test_a_full_load_never_uses_the_cached_projection(project, cache_env):
    fill(project)
    ws = Workspace.load(str(project), cache=True)  # the server's load: records stay linked
    assert ws.pattern.pending and all(p.record is not None for p in ws.pattern.pending)


def _linked(ws: Workspace) -> list:
    pl = ws.pattern
    return [[(v.id if hasattr(v, "id") else None, v.record) for v in views]
            for views in (pl.observations, pl.pending, pl.state_records)] + [pl.state.record, pl.rejected]


def test_a_server_start_relinks_the_cached_projection_to_its_records(project, cache_env):
    """A server starts with defer_facts (not one-shot): the cached views come back linked to their
    memory records, as a cold projection has them (the proposal-at-line lookup matches on the
    record's line; an Accept reads its value). Issue 34: they came back with none."""
    fill(project)
    ws = Workspace.load(str(project), cache=True, defer_facts=True)
    assert ws._pattern_made_of is None  # from the cache
    assert not ws.memory["project/pattern-learning"].materialized  # (read row by row: the namespace stays unbuilt)
    cold = Workspace.load(str(project))
    assert all(p.record is not None for p in cold.pattern.pending)
    assert _linked(ws) == _linked(cold)


def _append(project: Path) -> None:
    append(project / PATTERN, pending_event("appended-proposal", 99))


def _rewrite_same_size(project: Path) -> None:
    path = project / PATTERN
    data = path.read_bytes()
    st = path.stat()
    path.write_bytes(data.replace(b'"enabled":true', b'"enabled":1234', 1))  # same size, a new mtime
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))


def _rewrite_shorter(project: Path) -> None:
    path = project / PATTERN
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-3]))


def _removed(project: Path) -> None:
    (project / PATTERN).unlink()


@pytest.mark.parametrize("change", [_append, _rewrite_same_size, _rewrite_shorter, _removed],
                         ids=["append", "same-size", "shorter", "removed"])
def test_a_changed_namespace_is_projected_again(project, cache_env, change):
    fill(project)
    change(project)
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    assert not restored(ws) or change is _removed
    assert ws.save_cache()
    again, ws2, _data = fast(project)
    assert again == expected
    if change is not _removed:
        assert restored(ws2)  # the save kept the new projection, for the new entry


DAMAGE = ["flip", "truncate", "other-entry", "shape", "state-index", "missing-file", "links"]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cached_projection_is_never_trusted(project, cache_env, damage):
    fill(project)
    folder, manifest = pattern_entry(project)
    desc = manifest["pattern"]
    payload = folder / desc["payload"]["name"]
    data = payload.read_bytes()
    if damage == "flip":
        data = data.replace(b'"skill"', b'"skilz"', 1)  # same size: the checksum catches it
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "other-entry":
        desc["of"] = "ns0-000000000000-1-1.meta.json"
    elif damage in ("shape", "state-index", "links"):
        doc = orjson.loads(data)
        if damage == "shape":
            doc["fields"][1] = doc["fields"][1][:-1]
        elif damage == "links":
            doc["links"][1][0] = 10**9  # a record the namespace never had
        else:
            doc["state"] = len(doc["state_records"]) + 3
        data = orjson.dumps(doc)
        desc["payload"].update(size=len(data), crc=zlib.crc32(data))  # consistent: only the content is wrong
    if damage == "missing-file":
        payload.unlink()
    else:
        payload.write_bytes(data)
    (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    expected = cold_bytes(project)
    got, ws, _data = fast(project)
    assert got == expected
    assert not restored(ws) or damage == "links"  # (a one-shot load never follows the links)
    if damage == "links":
        linked = Workspace.load(str(project), cache=True, defer_facts=True)  # a server's start does
        assert linked._pattern_made_of is not None and _linked(linked) == _linked(Workspace.load(str(project)))
