"""Lazy records of a cached recall index: a warm recall decodes only the rows it answers with, and a
rows file or row index that is truncated, changed, foreign or missing is never trusted."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harn_ls.cache import tail
from harn_ls.cache.store import MANIFEST, ProjectCache
from harn_ls.model.workspace import Workspace
from harn_ls.recall.index import _LazyDocs
from harn_ls.render.recall import recall_json
from tests.unit.test_cache import cache_env, project  # noqa: F401  (the same fixtures: a cache folder, a copy of the sample)

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
QUERIES = ["invoice rounding", "decimal money billing", "", "the of", "money", "release version"]
NOTES = ".harn/memory/agent/notes/events.jsonl"
NS = "agent/notes"


def answers(ws: Workspace) -> list:
    out = [recall_json(ws.recall.recall(q, k=10, explain=True)) for q in QUERIES]
    out += [recall_json(ws.recall.recall(q, k=3, namespace=NS)) for q in QUERIES]
    return orjson.loads(orjson.dumps(out, default=str, option=orjson.OPT_NON_STR_KEYS))


def fill(project: Path) -> list:
    """Cold answers; the cache filled with namespaces and index."""
    expected = answers(Workspace.load(str(project)))
    ws = Workspace.load(str(project), cache=True)
    ws.recall  # noqa: B018 - build the index so that it is saved
    assert ws.save_cache()
    return expected


def entry(project: Path) -> tuple[Path, dict]:
    folder = Path(ProjectCache(str(project)).folder)
    return folder, orjson.loads((folder / MANIFEST).read_bytes())["namespaces"][NS]


def test_warm_recall_decodes_only_its_hits(project, cache_env):
    expected = fill(project)
    ws = Workspace.load(str(project), cache=True)
    docs = ws.recall.indexes[NS].docs
    assert isinstance(docs, _LazyDocs)  # restored lazily: no record decoded yet
    assert not docs._docs
    hits = ws.recall.recall("release", k=1, namespace=NS).hits
    assert hits and len(docs._docs) < len(docs)
    assert not ws.memory[NS].materialized  # the namespace itself was never decoded
    assert answers(ws) == expected


def test_materializing_a_lazy_index_early_changes_no_answer(project, cache_env):
    """What the server does after start (lsp/project.py), so the first append does not pay for it."""
    expected = fill(project)
    ws = Workspace.load(str(project), cache=True)
    assert isinstance(ws.recall.indexes[NS].docs, _LazyDocs)
    for ns in ws.recall.namespaces():
        ws.recall.materialize(ns)
    assert not isinstance(ws.recall.indexes[NS].docs, _LazyDocs)  # every record decoded now
    assert answers(ws) == expected
    ws.recall.materialize("no/such-namespace")  # a namespace without an index: nothing to do


def test_lazy_index_then_an_append_equals_a_cold_load(project, cache_env):
    fill(project)
    ws = Workspace.load(str(project), cache=True)
    assert answers(ws) == answers(Workspace.load(str(project)))  # queried while lazy
    line = orjson.dumps({"type": "store", "id": "mem_new_rounding", "namespace": NS, "key": "note/new",
                         "value": "invoice rounding appended", "text": "invoice rounding appended",
                         "tags": ["billing"], "stored_at": "2026-07-01T10:00:00.000000000+00:00"}) + b"\n"
    with open(project / NOTES, "ab") as fh:
        fh.write(line)
    ws.apply_changes([str(project / NOTES)])  # a store with a new sequence is indexed beside the lazy records
    assert isinstance(ws.recall.indexes[NS].docs, _LazyDocs) and not ws.memory[NS].materialized
    assert answers(ws) == answers(Workspace.load(str(project)))
    assert ws.save_cache()
    assert answers(Workspace.load(str(project), cache=True)) == answers(Workspace.load(str(project)))
    with open(project / NOTES, "ab") as fh:  # an update: the one record it changes is decoded, not the others
        fh.write(line.replace(b'"store"', b'"update"').replace(b"appended", b"updated"))
    ws.apply_changes([str(project / NOTES)])
    assert isinstance(ws.recall.indexes[NS].docs, _LazyDocs) and not ws.memory[NS].materialized
    assert answers(ws) == answers(Workspace.load(str(project)))
    assert ws.save_cache()
    assert answers(Workspace.load(str(project), cache=True)) == answers(Workspace.load(str(project)))


@pytest.mark.parametrize("damage", ["flip-row", "truncate-rows", "flip-rowidx", "truncate-rowidx", "missing-rows",
                                    "swap-rows", "foreign-rowidx"])
def test_damaged_rows_are_never_trusted(project, cache_env, damage):
    expected = fill(project)
    folder, e = entry(project)
    rows, rowidx = folder / e["rows"]["name"], folder / e["rowidx"]["name"]
    data = bytearray(rows.read_bytes())
    if damage == "flip-row":  # same size, one byte of a row changed: caught by that row's CRC
        i = data.index(b"money")
        data[i] ^= 0x01
        rows.write_bytes(bytes(data))
    elif damage == "truncate-rows":
        rows.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "flip-rowidx":
        idx = bytearray(rowidx.read_bytes())
        idx[9] ^= 0x01
        rowidx.write_bytes(bytes(idx))
    elif damage == "truncate-rowidx":
        rowidx.write_bytes(rowidx.read_bytes()[:-5])
    elif damage == "missing-rows":
        rows.unlink()
    elif damage == "swap-rows":  # rows of the same size in another order, with a row index that agrees
        lines = bytes(data).split(b"\n")[:-1]
        rows.write_bytes(b"\n".join(reversed(lines)) + b"\n")
    else:  # a row index from another namespace (checksums updated: only the contents disagree)
        other = next(v for k, v in orjson.loads((folder / MANIFEST).read_bytes())["namespaces"].items()
                     if k != NS and v.get("rowidx"))
        manifest = orjson.loads((folder / MANIFEST).read_bytes())
        manifest["namespaces"][NS]["rowidx"] = other["rowidx"]
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    ws = Workspace.load(str(project), cache=True)
    assert answers(ws) == expected
    if damage in ("flip-row", "swap-rows"):
        assert ws._project_cache.readers[NS]._fallback is not None  # the log was projected again instead
    elif damage in ("truncate-rows", "missing-rows"):
        assert NS not in ws._project_cache.hits  # a payload of another size: the namespace is read from its log
    assert answers(Workspace.load(str(project), cache=True)) == expected


def test_memory_only_load_keeps_the_rest_of_the_cache(project, cache_env):
    full = Workspace.load(str(project), cache=True)
    assert full.runs and full.save_cache()
    folder, _e = entry(project)
    runs_before = orjson.loads((folder / MANIFEST).read_bytes())["runs"]
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert set(ws.memory) == set(full.memory) and not ws.runs and not ws.checkpoints
    assert answers(ws) == answers(Workspace.load(str(project)))
    assert ws.save_cache()
    assert orjson.loads((folder / MANIFEST).read_bytes())["runs"] == runs_before  # not emptied
    again = Workspace.load(str(project), cache=True)
    assert sorted(again.runs) == sorted(Workspace.load(str(project)).runs)
    assert again._project_cache.restore_run(next(iter(again._run_paths))) is not None  # still served from the cache


def facts_view(ws: Workspace) -> dict:
    return orjson.loads(orjson.dumps({
        "facts": [[list(k), f.id, f.claim] for k, f in ws.facts.items()],
        "problems": [list(k) for k in ws._fact_problems],
        "by_file": {p: sorted(map(list, keys)) for p, keys in sorted(ws.facts_by_file.items())},
    }, default=str))


@pytest.mark.parametrize("kept", [True, False], ids=["entry-kept", "rewritten"])
def test_memory_only_load_of_an_appended_namespace_saves_its_facts(project, cache_env, kept, monkeypatch):
    if not kept:  # (else a small append of stores leaves the entry as it is: tail.keeps_entry)
        monkeypatch.setattr(tail, "TAIL_KEEP_MAX", 0)
    fill(project)
    facts_log = project / ".harn/memory/project/facts/events.jsonl"
    with open(facts_log, "ab") as fh:
        fh.write(orjson.dumps({"type": "store", "id": "mem_plain", "namespace": "project/facts", "key": "note/x",
                               "value": "not a fact", "text": "not a fact", "tags": [],
                               "stored_at": "2026-07-02T10:00:00.000000000+00:00"}) + b"\n")
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert answers(ws) == answers(Workspace.load(str(project)))
    assert ws.save_cache()
    warm = Workspace.load(str(project), cache=True)
    # saved by the memory-only run (or kept, the appended line applied again)
    assert warm._project_cache.hits.get("project/facts") == ("appended" if kept else "same")
    assert facts_view(warm) == facts_view(Workspace.load(str(project)))


def test_damaged_facts_payload_is_never_trusted(project, cache_env):
    fill(project)
    expected = facts_view(Workspace.load(str(project)))
    folder = Path(ProjectCache(str(project)).folder)
    e = orjson.loads((folder / MANIFEST).read_bytes())["namespaces"]["project/facts"]
    facts = folder / e["facts"]["name"]
    data = bytearray(facts.read_bytes())
    data[len(data) // 2] ^= 0x01
    facts.write_bytes(bytes(data))
    ws = Workspace.load(str(project), cache=True)
    assert "project/facts" not in ws._project_cache.hits  # re-read from its log
    assert facts_view(ws) == expected


def test_a_rewritten_log_drops_the_row_reader(project, cache_env):
    fill(project)
    ws = Workspace.load(str(project), cache=True)
    assert NS in ws._project_cache.readers
    log = project / NOTES
    log.write_bytes(b"\n".join(log.read_bytes().splitlines()[:2]) + b"\n")  # shorter: read again from scratch
    ws.apply_changes([str(log)])
    assert NS not in ws._project_cache.readers  # the old namespace and its open payloads are let go
    assert answers(ws) == answers(Workspace.load(str(project)))


def test_term_ids_answer_as_the_dict_would():
    from harn_ls.recall.docs import _TermIds

    terms = [f"t{i}" for i in range(200)]
    want = dict(zip(terms, range(len(terms)), strict=True))
    lazy = _TermIds(terms)
    probes = ["t5", "nope", "t5", "t199", "", "t0"] + [f"t{i}" for i in range(0, 200, 2)] + ["missing"]
    for t in probes:  # scans, then (past _SCAN_MAX distinct terms) the dict
        assert lazy.get(t) == want.get(t) and (t in lazy) == (t in want)
        assert lazy.get(t, -1) == want.get(t, -1)
    assert dict(lazy.items()) == want and len(lazy) == len(want)
    with pytest.raises(KeyError):
        lazy["nope"]


def test_a_lazy_index_builds_its_term_dict_before_it_changes(project, cache_env):
    fill(project)
    ws = Workspace.load(str(project), cache=True)
    idx = ws.recall.indexes[NS]
    assert type(idx._tid) is not dict
    assert answers(ws) == answers(Workspace.load(str(project)))
    idx.materialize()
    assert type(idx._tid) is dict and idx._tid == {t: i for i, t in enumerate(idx._terms)}


@pytest.mark.parametrize("damage", ["flip", "blank-line", "not-utf8"])
def test_damaged_terms_are_never_trusted(project, cache_env, damage):
    import zlib

    expected = fill(project)
    folder, e = entry(project)
    terms = folder / e["index"]["terms"]["name"]
    data = terms.read_bytes()
    if damage == "flip":  # checksum no longer matches
        terms.write_bytes(data[:3] + bytes([data[3] ^ 0x20]) + data[4:])
    else:  # well-formed by its checksum, but not a term list
        data = data + b"\n" if damage == "blank-line" else b"\xff" + data
        terms.write_bytes(data)
        manifest = orjson.loads((folder / MANIFEST).read_bytes())
        manifest["namespaces"][NS]["index"]["terms"].update(size=len(data), crc=zlib.crc32(data))
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    ws = Workspace.load(str(project), cache=True)
    assert answers(ws) == expected
    assert not isinstance(ws.recall.indexes[NS].docs, _LazyDocs)  # built from the records instead
