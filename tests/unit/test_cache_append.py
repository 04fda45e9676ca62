"""Stores appended after a restore are applied without decoding the cached records, and a save keeps
the namespace's entry while the appended tail is small (cache/tail.py): every answer must still equal
a load without the cache - after the append, after the kept entry is read again, and after any other
change (or damage) that follows a kept entry."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from harn_ls.cache import tail as state_tail
from harn_ls.cache.store import MANIFEST
from harn_ls.model.workspace import Workspace
from harn_ls.render.recall import recall_json
from tests.unit.test_cache import (  # noqa: F401
    ACME,
    NOTES,
    QUERIES,
    append,
    cache_env,
    cache_folder,
    check,
    cold,
    event,
    ids_in,
    project,
    snapshot,
)
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
        assert ws._project_cache.hits[NS] == "appended" and NS in ws._project_cache.overlays
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
    assert ws._project_cache.hits[NS] == "same" and snapshot(ws) == cold(project)


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
    assert ws.save_cache() and NS in ws._project_cache.overlays  # the entry is kept, the tail not written
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
    ws.apply_changes([str(log)])
    assert not ws.memory[NS].materialized and recall_answers(ws) == cold(project)["recall"]
    assert ws.save_cache()
    append(log, event("update", "live-1", NS, 311) + event("store", "live-2", NS, 312))
    ws.apply_changes([str(log)])
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
    assert ws._project_cache.hits[NS] == "appended" and snapshot(ws) == expected


# ----------------------------------------------------------------------------- updates, forgets, opens
def tricky_events(project: Path, n: int) -> bytes:
    """Updates, forgets and opens as an agent appends them, on cached records and on appended ones,
    with the cases they read old state for: an id with two active records (a cached one and an
    appended one: both forgotten), an update after a forget (ignored), an update of an unknown id,
    a store of an id forgotten in the same tail (hidden), a value patch (refreshes the text), a
    flags merge, a wrong-typed forget, an open with an unknown backend, an unknown event type."""
    log = project / NOTES
    ids = ids_in(log)
    cached_a, cached_b, cached_c, twin = ids[0], ids[1], ids[2], ids[3]
    return (event("store", f"tail-{n}", NS, n) + event("store", twin, NS, n + 1)
            + event("update", cached_a, NS, n + 2, value={"text": "patched rounding value", "n": n})
            + event("update", cached_b, NS, n + 3, tags=["flagged", "billing"], flags={"pinned": True})
            + event("update", cached_b, NS, n + 4, flags={"seen": True}, status="done")
            + event("update", f"tail-{n}", NS, n + 5)
            + event("forget", twin, NS, n + 6) + event("update", twin, NS, n + 7)
            + event("update", "no-such-id", NS, n + 8) + event("forget", cached_c, NS, n + 9)
            + event("store", cached_c, NS, n + 10)
            + event("forget", "x", NS, n + 11, forgotten_ids="not-a-list")
            + orjson.dumps({"type": "open", "id": f"open-{n}", "namespace": NS, "backend": "bm25",
                            "bm25_weight": 0.7, "opened_at": "2026-06-09T00:00:00Z"}) + b"\n"
            + orjson.dumps({"type": "open", "id": f"open-bad-{n}", "namespace": NS, "backend": "nope"}) + b"\n"
            + orjson.dumps({"type": "rename", "id": f"r-{n}"}) + b"\n"
            + event("store", f"tail-{n}-b", NS, n + 12))


def test_appended_updates_forgets_and_opens_are_applied_without_decoding_and_the_entry_is_kept(project, cache_env):
    check(project)
    append(project / NOTES, tricky_events(project, 500))
    entry_before = manifest(project)["namespaces"][NS]
    assert entry_before["ids"]  # the id index the tail's updates and forgets read
    expected, expected_inspect = cold(project), cold_bytes(project)
    for how in ("memory_only", "defer_facts"):
        ws = Workspace.load(str(project), cache=True, **{how: True})
        assert ws._project_cache.hits[NS] == "appended" and NS in ws._project_cache.overlays
        if how == "memory_only":
            assert recall_answers(ws) == expected["recall"]  # scores, explain (df, N, avgdl) bit for bit
        else:
            got = fast(project)[0]
            assert got == expected_inspect
            assert orjson.loads(got)["counts"] == orjson.loads(expected_inspect)["counts"]
        assert not ws.memory[NS].materialized  # only the rows the tail reaches were read
        assert ws.save_cache()
        assert manifest(project)["namespaces"][NS] == entry_before  # kept: the tail is applied again next time
    ws = Workspace.load(str(project), cache=True)
    assert snapshot(ws) == expected  # built records: the cached ones, patched, then the appended ones
    assert ws.save_cache() and manifest(project)["namespaces"][NS] == entry_before
    assert snapshot(Workspace.load(str(project), cache=True)) == expected


def test_a_lazy_index_takes_updates_and_forgets_as_a_built_one_would(project, cache_env):
    """A server's batches on a restored namespace and its lazily restored recall index: the index
    stays lazy, and N, total tokens, document lengths and every score equal a cold build's, before
    and after its records are decoded (at once, or in steps)."""
    from harn_ls.recall.docs import _LazyDocs  # (numpy: only the recall tests load it)

    check(project)
    log = project / NOTES
    for steps in (False, True):
        ws = Workspace.load(str(project), cache=True)
        assert isinstance(ws.recall.indexes[NS].docs, _LazyDocs)
        append(log, tricky_events(project, 600 + 100 * steps))
        ws.apply_changes([str(log)])
        idx = ws.recall.indexes[NS]
        assert isinstance(idx.docs, _LazyDocs) and not ws.memory[NS].materialized
        fresh = Workspace.load(str(project))
        built = fresh.recall.indexes[NS]
        assert recall_answers(ws) == recall_answers(fresh)
        assert (len(idx), idx.stats(), idx.total_tokens) == (len(built), built.stats(), built.total_tokens)
        assert sorted(idx.docs) == sorted(built.docs)
        if steps:
            for _ in ws.recall.materialize_steps(NS):
                pass
        else:
            ws.recall.materialize(NS)
        assert not isinstance(idx.docs, _LazyDocs)
        assert recall_answers(ws) == recall_answers(fresh) and snapshot(ws) == cold(project)
        idx.compact()
        assert (len(idx), idx.stats(), idx.total_tokens) == (len(built), built.stats(), built.total_tokens)
        assert ws.save_cache()


def _rewrite_ids(project: Path, change) -> None:
    """Replace the namespace's id index (its header, then its 8-byte rows) by `change(head, rows)`,
    with a size and CRC that match it (a payload that passes its checksum but does not fit the rows)."""
    import zlib  # (only these damage cases need it)

    folder = Path(cache_folder(project))
    doc = manifest(project)
    desc = doc["namespaces"][NS]["ids"]
    data = (folder / desc["name"]).read_bytes()
    rows = [data[i:i + 8] for i in range(8, len(data), 8)]
    data = b"".join(change(data[:8], rows))
    (folder / desc["name"]).write_bytes(data)
    desc.update(size=len(data), crc=zlib.crc32(data))
    (folder / MANIFEST).write_bytes(orjson.dumps(doc))


IDS_DAMAGE = {
    "flip": lambda p: _flip_namespace_payload(p, "ids", 0x08),
    "truncate": lambda p: _rewrite_ids(p, lambda head, rows: [head, *rows[:-1]]),
    "swap": lambda p: _rewrite_ids(p, lambda head, rows: [head, rows[1], rows[0], *rows[2:]]),
    "extra": lambda p: _rewrite_ids(p, lambda head, rows: [head, *rows, b"ghost-id"]),
    "off-grid": lambda p: _rewrite_ids(p, lambda head, rows: [head, *rows, b"x"]),
    "no-header": lambda p: _rewrite_ids(p, lambda head, rows: rows),
    # written with other rows (the header names another row index): never read, whatever it holds
    "foreign": lambda p: _rewrite_ids(p, lambda head, rows: [b"\x01" * 8] + rows),
    "missing": None,
}


@pytest.mark.parametrize("damage", list(IDS_DAMAGE))
def test_a_damaged_id_index_is_never_trusted(project, cache_env, damage):
    """Checked like every payload (size, CRC), and against the rows it names (count, and each row's
    id): anything that does not fit decodes the records, answers as a cold load, and writes the
    entry again (an entry without an id index - written before it existed - too)."""
    check(project)
    log = project / NOTES
    if damage == "missing":
        doc = manifest(project)
        del doc["namespaces"][NS]["ids"]
        (Path(cache_folder(project)) / MANIFEST).write_bytes(orjson.dumps(doc))
    else:
        IDS_DAMAGE[damage](project)
    ids = ids_in(log)
    append(log, event("update", ids[0], NS, 700) + event("forget", ids[1], NS, 701) + event("store", "d-1", NS, 702))
    expected, expected_inspect = cold(project), cold_bytes(project)
    ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert recall_answers(ws) == expected["recall"]
    assert ws.save_cache()
    assert manifest(project)["namespaces"][NS]["validator"]["offset"] == log.stat().st_size  # written again
    assert fast(project)[0] == expected_inspect
    assert snapshot(Workspace.load(str(project), cache=True)) == expected
    assert manifest(project)["namespaces"][NS]["ids"]


@pytest.mark.parametrize("recall_first", [False, True])
def test_a_batch_the_overlay_cannot_take_after_one_it_took(project, cache_env, monkeypatch, recall_first):
    """The second batch finds no usable id index: the namespace decodes its records, takes what the
    overlay kept aside (updated, forgotten, appended), applies the batch itself, and the recall index
    (restored over the cached rows, with every delta since) answers as a cold load."""
    check(project)
    log = project / NOTES
    ids = ids_in(log)
    ws = Workspace.load(str(project), cache=True)
    if recall_first:
        ws.recall  # noqa: B018 - the lazily restored index takes the first batch
    append(log, event("update", ids[0], NS, 800) + event("forget", ids[1], NS, 801) + event("store", "o-1", NS, 802))
    ws.apply_changes([str(log)])
    assert not ws.memory[NS].materialized
    monkeypatch.setattr(state_tail.TailOverlay, "prepare", lambda self, lines: False)
    append(log, event("update", ids[2], NS, 803) + event("forget", ids[0], NS, 804) + event("update", "o-1", NS, 805))
    ws.apply_changes([str(log)])
    assert ws.memory[NS].materialized
    assert snapshot(ws) == cold(project)
    assert ws.save_cache()
    assert manifest(project)["namespaces"][NS]["validator"]["offset"] == log.stat().st_size  # written again
    assert snapshot(Workspace.load(str(project), cache=True)) == cold(project)


@pytest.mark.parametrize("many", [False, True])
def test_id_index_lookup_finds_every_row_of_an_id_and_nothing_off_the_grid(many):
    """Both ways of looking ids up (a search per id, one pass for many) give every row of each id,
    in row order, and never a match that straddles two rows."""
    from array import array  # (only this test builds an index by hand)

    class R:
        def __init__(self, rid):
            self.id = rid

    ids = [f"id-{i % 7}" if i % 3 else f"solo-{i}" for i in range(60)] + ["ünï\u2028code"]
    data = state_tail.id_index_payload([R(i) for i in ids], 99)
    assert array("Q", data[:8])[0] == 99 and len(data) == 8 * (len(ids) + 1)
    rows = data[8:]
    shifted = bytes(4) + rows[:8] + bytes(4)  # row 0's hash across two rows: a match off the grid
    wanted = sorted(set(ids))[: 12 if many else 3] + ["absent"]
    got = state_tail._rows_of(rows, wanted)
    assert got == {rid: [i for i, x in enumerate(ids) if x == rid] for rid in wanted}
    assert got["absent"] == [] and state_tail._rows_of(shifted, [ids[0]]) == {ids[0]: []}
