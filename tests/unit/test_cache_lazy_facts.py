"""A one-shot load (defer_facts: `inspect --json`, memory_only: `recall`) checks a namespace's cached
facts payload only when it decodes it. A payload that then turns out damaged - a flipped byte, cut
short, or rows that do not decode under a matching size and checksum - is never used: the facts are
read again from the log, equal to an uncached load's (in the same order), and the entry is rewritten."""

from __future__ import annotations

import zlib
from pathlib import Path

import orjson
import pytest

from harn_ls.cache.store import MANIFEST, ProjectCache
from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json
from tests.helpers.cache_damage import flip_cut_or_delete
from tests.unit.test_cache import append, cache_env, event, ids_in, project  # noqa: F401  (fixtures)
from tests.unit.test_cache_inspect import TEAM, add_tricky_facts, cold_bytes, dump, fast, fill
from tests.unit.test_cache_rows import facts_view

DAMAGES = ["flip", "truncate", "rows-that-do-not-decode", "deleted"]


def damage_facts(project: Path, ns: str, damage: str) -> None:
    folder = Path(ProjectCache(str(project)).folder)
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    desc = manifest["namespaces"][ns]["facts"]
    payload = folder / desc["name"]
    if not flip_cut_or_delete(payload, damage, b"fact_"):
        # size and checksum agree with the manifest; the rows are not fact rows
        data = payload.read_bytes()
        new = orjson.dumps([[seq, ["not", "a", "fact"], probs] for seq, _f, probs in orjson.loads(data)])
        payload.write_bytes(new)
        desc.update(size=len(new), crc=zlib.crc32(new))
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_facts_of_a_deferred_load_are_read_again_from_the_log(project, cache_env, damage):
    add_tricky_facts(project)
    expected_view = facts_view(Workspace.load(str(project)))
    expected = cold_bytes(project)
    fill(project)
    damage_facts(project, "team/extra", damage)
    ws = Workspace.load(str(project), cache=True, defer_facts=True)
    late = damage in ("flip", "rows-that-do-not-decode")
    # a payload of the wrong size (cut, gone) is a miss at restore; the others are found when decoded
    assert ("team/extra" in ws._project_cache.hits) == late
    ws.materialize_facts()
    assert ("team/extra" in ws._project_cache.damaged) == late
    if late:  # (a namespace read from its log keeps its facts ahead of the deferred ones: dict order differs)
        assert facts_view(ws) == expected_view
        assert dump(inspect_json(ws)) == expected
    assert ws.save_cache()  # the entry is written again
    again = Workspace.load(str(project), cache=True)
    assert "team/extra" in again._project_cache.hits and not again._project_cache.damaged
    assert facts_view(again) == expected_view
    assert fast(project)[0] == expected


@pytest.mark.parametrize("damage", ["flip", "rows-that-do-not-decode"])
def test_a_one_shot_recall_that_must_save_damaged_facts_reads_them_from_the_log(project, cache_env, damage):
    """An update appended to the namespace makes the one-shot load decode its deferred facts to save it."""
    add_tricky_facts(project)
    fill(project)
    damage_facts(project, "team/extra", damage)
    log = project / TEAM
    append(log, event("update", ids_in(log)[1], "team/extra", 70))
    expected_view = facts_view(Workspace.load(str(project)))
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert ws.save_cache()
    assert "team/extra" in ws._project_cache.damaged
    again = Workspace.load(str(project), cache=True)
    assert facts_view(again) == expected_view
    assert facts_view(Workspace.load(str(project), cache=True)) == expected_view


def test_intact_facts_of_a_deferred_load_are_used_as_cached(project, cache_env):
    add_tricky_facts(project)
    expected_view = facts_view(Workspace.load(str(project)))
    fill(project)
    ws = Workspace.load(str(project), cache=True, defer_facts=True)
    ws.materialize_facts()
    assert not ws._project_cache.damaged
    assert facts_view(ws) == expected_view


@pytest.mark.parametrize("damage", ["flip", "extra-entry", "one-entry-less", "header-only"])
def test_the_one_namespace_body_printed_whole_is_checked(project, cache_env, damage):
    """The sample's facts are all in project/facts: its cached body is printed whole, checked to be the
    counted entries (not by its header, which printing it whole does not use)."""
    expected = cold_bytes(project)
    fill(project)
    folder = Path(ProjectCache(str(project)).folder)
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    desc = manifest["namespaces"]["project/facts"]["ifacts"]
    payload = folder / desc["name"]
    data = payload.read_bytes()
    head, _, body = data.partition(b"\n")
    doc = orjson.loads(head)
    assert len(doc["ids"]) > 1
    if damage == "flip":
        i = data.index(b"fact_", len(head))
        payload.write_bytes(data[:i] + b"F" + data[i + 1:])
    else:
        if damage == "extra-entry":
            body += b",\n    {}"
        elif damage == "one-entry-less":
            body = body[: doc["ends"][-2]]
        else:  # ids and ends that fit nothing: the printed body is still the counted entries
            doc = {"ids": doc["ids"][::-1], "ends": [e + 1 for e in doc["ends"]]}
        new = orjson.dumps(doc) + b"\n" + body
        payload.write_bytes(new)
        desc.update(size=len(new), crc=zlib.crc32(new))
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    got, ws, data_ = fast(project)
    assert got == expected
    if damage == "header-only":
        assert isinstance(data_["facts"], orjson.Fragment) and not ws._project_cache.damaged
    else:
        assert isinstance(data_["facts"], list)  # decoded instead
        assert "project/facts" in ws._project_cache.damaged
        assert ws.save_cache()
        got, ws, data_ = fast(project)
        assert got == expected and isinstance(data_["facts"], orjson.Fragment)
