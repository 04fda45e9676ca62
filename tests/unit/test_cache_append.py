"""Stores appended after a restore are applied without decoding the cached records, and a save keeps
the namespace's entry while the appended tail is small (state_tail.py): every answer must still equal
a load without the cache - after the append, after the kept entry is read again, and after any other
change (or damage) that follows a kept entry."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from harn_ls import state_tail
from harn_ls.render.recall import recall_json
from harn_ls.state_cache import MANIFEST
from harn_ls.workspace import Workspace
from tests.unit.test_cache import (ACME, NOTES, QUERIES, append, cache_env, cache_folder, check, cold,  # noqa: F401
                                   event, ids_in, project, snapshot)
from tests.unit.test_cache_inspect import cold_bytes, fact_event, fast

NS = "agent/notes"


def manifest(project: Path) -> dict:
    return orjson.loads((Path(cache_folder(project)) / MANIFEST).read_bytes())


def recall_answers(ws: Workspace) -> list:
    return orjson.loads(orjson.dumps([recall_json(ws.recall.recall(q, k=10, explain=True)) for q in QUERIES],
                                     default=str))


def tricky_stores(project: Path, n: int) -> bytes:
    """Stores as an agent appends them, plus the cases a store reads old state for: an id forgotten
    earlier (hidden by its tombstone), an id already active (a second record), a fact, a line that
    does not parse, and a store with a wrong-typed field."""
    log = project / NOTES
    forgotten = ids_in(log)[0]
    append(log, event("forget", forgotten, NS, n))
    check(project)  # (read and saved, with its recall index, before the stores come)
    active = ids_in(log)[1]
    return (event("store", f"app-{n}", NS, n + 1) + event("store", forgotten, NS, n + 2)
            + event("store", active, NS, n + 3) + fact_event(f"fact_app{n}", NS, n + 4, "appended fact")
            + b'{"type":"store", oops\n' + event("store", f"bad-{n}", NS, n + 5, tags="not-a-list")
            + event("store", f"app-{n}-b", NS, n + 6))


def test_appended_stores_are_applied_without_decoding_and_the_entry_is_kept(project, cache_env):
    check(project)
    append(project / NOTES, tricky_stores(project, 100))
    entry_before = manifest(project)["namespaces"][NS]
    expected, expected_inspect = cold(project), cold_bytes(project)
    for how in ("memory_only", "defer_facts"):
        ws = Workspace.load(str(project), cache=True, **{how: True})
        assert ws._state_cache.hits[NS] == "appended" and NS in ws._state_cache.overlays
        if how == "memory_only":
            assert recall_answers(ws) == expected["recall"]
        else:
            got = fast(project)[0]
            assert got == expected_inspect
            assert orjson.loads(got)["counts"] == orjson.loads(expected_inspect)["counts"]
        assert not ws.memory[NS].materialized  # nothing decoded the cached records
        assert ws.save_cache()
        assert manifest(project)["namespaces"][NS] == entry_before  # kept: the tail is applied again next time
    ws = Workspace.load(str(project), cache=True)
    assert snapshot(ws) == expected  # built records: the cached ones, then the appended ones
    assert ws.save_cache() and manifest(project)["namespaces"][NS] == entry_before
    assert snapshot(Workspace.load(str(project), cache=True)) == expected


def test_a_growing_tail_is_written_once_it_is_over_the_limit(project, cache_env, monkeypatch):
    check(project)
    monkeypatch.setattr(state_tail, "TAIL_KEEP_MIN", 300)
    monkeypatch.setattr(state_tail, "TAIL_KEEP_MAX", 300)
    log = project / NOTES
    entry = manifest(project)["namespaces"][NS]
    append(log, event("store", "grow-1", NS, 1))  # ~250 bytes: kept
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert recall_answers(ws) == cold(project)["recall"] and ws.save_cache()
    assert manifest(project)["namespaces"][NS] == entry
    append(log, event("store", "grow-2", NS, 2))  # past the limit: the namespace is written again
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert recall_answers(ws) == cold(project)["recall"] and ws.save_cache()
    written = manifest(project)["namespaces"][NS]
    assert written["meta"] != entry["meta"] and written["validator"]["offset"] == log.stat().st_size
    assert written["index"]  # (recall built the index over every record: saved with them)
    ws = Workspace.load(str(project), cache=True)
    assert ws._state_cache.hits[NS] == "same" and snapshot(ws) == cold(project)


def _shorter(project: Path) -> None:
    log = project / NOTES
    lines = log.read_bytes().splitlines(keepends=True)
    with open(log, "r+b") as fh:
        fh.truncate(0)
        fh.write(b"".join(lines[:-3]))


def _same_size(project: Path) -> None:
    log = project / NOTES
    data = bytearray(log.read_bytes())
    i = data.rindex(b"rounding")
    data[i] = ord("X")
    st = log.stat()
    log.write_bytes(bytes(data))
    import os  # (only this change needs it)

    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _rename(project: Path) -> None:
    log = project / NOTES
    tmp = log.with_name("events.tmp")
    tmp.write_bytes(log.read_bytes() + event("store", "renamed", NS, 60))
    tmp.replace(log)


def _recreate(project: Path) -> None:
    log = project / NOTES
    data = log.read_bytes()
    log.unlink()
    log.write_bytes(data.split(b"\n", 2)[-1])


def _update_forget(project: Path) -> None:
    ids = ids_in(project / NOTES)
    append(project / NOTES, event("update", ids[-1], NS, 61) + event("forget", ids[-2], NS, 62)
           + event("store", "after-forget", NS, 63))


def _more_stores(project: Path) -> None:
    append(project / NOTES, event("store", "more-1", NS, 64) + event("store", "more-2", NS, 65))


def _remove_namespace(project: Path) -> None:
    shutil.rmtree(project / NOTES.rsplit("/", 1)[0])


def _add_namespace(project: Path) -> None:
    new = project / ".harn/memory/team/new/events.jsonl"
    new.parent.mkdir(parents=True)
    new.write_bytes(event("store", "n1", "team/new", 66))
    append(project / ACME, event("store", "acme-1", "workspace/acme", 67))


def _drop_cache(project: Path) -> None:
    shutil.rmtree(cache_folder(project))


def _flip_namespace_payload(project: Path, part: str, bit: int) -> None:
    """Flip one bit in the middle of one of the namespace's cached payloads."""
    folder = Path(cache_folder(project))
    payload = folder / manifest(project)["namespaces"][NS][part]["name"]
    data = bytearray(payload.read_bytes())
    data[len(data) // 2] ^= bit
    payload.write_bytes(bytes(data))


def _damage_records(project: Path) -> None:
    """The payload the tombstones come from (a kept entry's): a flipped byte is caught by its CRC."""
    _flip_namespace_payload(project, "records", 0x04)


def _damage_tombs(project: Path) -> None:
    """The forgotten ids a kept entry's appended stores are checked against: caught by its CRC."""
    _flip_namespace_payload(project, "tombs", 0x02)


CHANGES = [_shorter, _same_size, _rename, _recreate, _update_forget, _more_stores, _remove_namespace, _add_namespace,
           _drop_cache, _damage_records, _damage_tombs]


@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__.strip("_") for c in CHANGES])
def test_any_change_after_a_kept_entry_never_changes_an_answer(project, cache_env, change):
    check(project)
    append(project / NOTES, tricky_stores(project, 200))
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert ws.save_cache() and NS in ws._state_cache.overlays  # the entry is kept, the tail not written
    change(project)
    expected, expected_inspect = cold(project), cold_bytes(project)
    assert recall_answers(Workspace.load(str(project), cache=True, memory_only=True)) == expected["recall"]
    got, ws, _data = fast(project)
    assert got == expected_inspect
    assert ws.save_cache()
    assert snapshot(Workspace.load(str(project), cache=True)) == expected
    check(project)


def test_apply_in_process_after_a_lazy_append_matches_a_cold_load(project, cache_env):
    """A server's batches: stores then an update, on a namespace restored from a kept entry."""
    check(project)
    log = project / NOTES
    append(log, tricky_stores(project, 300))
    ws = Workspace.load(str(project), cache=True, defer_facts=True)
    assert not ws.memory[NS].materialized
    append(log, event("store", "live-1", NS, 310))
    ws.apply([str(log)])
    assert not ws.memory[NS].materialized and recall_answers(ws) == cold(project)["recall"]
    assert ws.save_cache()
    append(log, event("update", "live-1", NS, 311) + event("store", "live-2", NS, 312))
    ws.apply([str(log)])
    ws.materialize_facts()
    assert snapshot(ws) == cold(project)
    assert ws.save_cache()
    assert snapshot(Workspace.load(str(project), cache=True)) == cold(project)


def test_an_entry_without_its_tombs_payload_reads_them_from_the_records_payload(project, cache_env):
    """(an entry written before the tombs payload existed): the same tombstones, from the records payload."""
    check(project)
    append(project / NOTES, tricky_stores(project, 400))
    doc = manifest(project)
    del doc["namespaces"][NS]["tombs"]
    (Path(cache_folder(project)) / MANIFEST).write_bytes(orjson.dumps(doc))
    expected = cold(project)
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert recall_answers(ws) == expected["recall"] and not ws.memory[NS].materialized
    ws = Workspace.load(str(project), cache=True)
    assert ws._state_cache.hits[NS] == "appended" and snapshot(ws) == expected
