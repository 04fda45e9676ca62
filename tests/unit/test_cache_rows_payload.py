"""project_cache.namespace_payloads writes the rows into one buffer (no list of orjson outputs, each of
which holds several times its length): the payload is still one row a line, and the row index
still gives each row's end offset and CRC-32, for fresh and for reused rows alike."""

from __future__ import annotations

import zlib
from array import array

import orjson

from harn_ls.cache.rows import record_row
from harn_ls.cache.store import namespace_payloads
from harn_ls.model.workspace import Workspace
from tests.unit.test_cache import project  # noqa: F401  (fixture)


def _check(payloads: dict, space) -> None:
    rows = payloads["rows"]
    assert isinstance(rows, bytes)
    lines = rows.split(b"\n")
    assert lines[-1] == b""  # every row ends with a newline
    lines = lines[:-1]
    records = list(space.active.values())
    assert [orjson.loads(line) for line in lines] == [orjson.loads(orjson.dumps(record_row(r))) for r in records]
    index = array("q")
    index.frombytes(payloads["rowidx"])
    triples = [tuple(index[i:i + 3]) for i in range(0, len(index), 3)]
    end, expected = 0, []
    for r, line in zip(records, lines, strict=True):
        end += len(line) + 1
        expected.append((r.seq, end, zlib.crc32(line)))
    assert triples == expected


def test_rows_payload_is_one_row_a_line_with_ends_and_crcs(project):
    ws = Workspace.load(str(project))
    assert any(len(s.active) > 2 for s in ws.memory.values())
    for ns, space in ws.memory.items():
        _check(namespace_payloads(space, ws._fact_entries(ns)), space)


def test_reused_rows_give_the_same_payload(project):
    ws = Workspace.load(str(project))
    for ns, space in ws.memory.items():
        fresh = namespace_payloads(space, ws._fact_entries(ns))
        lines = fresh["rows"].split(b"\n")[:-1]
        # every other record "restored" from its row bytes: the same payload either way
        kept = {r.seq: (r, line) for i, (r, line) in enumerate(zip(space.active.values(), lines, strict=True)) if i % 2 == 0}
        reused = namespace_payloads(space, ws._fact_entries(ns), kept)
        assert reused["rows"] == fresh["rows"] and reused["rowidx"] == fresh["rowidx"]
        _check(reused, space)
    empty = next((s for s in ws.memory.values() if not s.active), None)
    if empty is not None:
        assert namespace_payloads(empty, [])["rows"] == b""


def test_rows_in_many_chunks_give_the_same_payload_and_index(project, monkeypatch):
    """The save writes the rows a chunk at a time (state_rows.row_chunks): cut after every row,
    the joined chunks and the row index (end offsets run across chunks) equal a one-chunk build."""
    from harn_ls.cache import rows as state_rows

    ws = Workspace.load(str(project))
    whole = {ns: namespace_payloads(space, ws._fact_entries(ns)) for ns, space in ws.memory.items()}
    monkeypatch.setattr(state_rows, "ROW_CHUNK_BYTES", 1)
    for ns, space in ws.memory.items():
        index = array("q")
        chunks = list(state_rows.row_chunks(space, None, index))
        assert len(chunks) == len(space.active) + 1  # (the last, empty, closes the payload)
        assert b"".join(chunks) == whole[ns]["rows"] and index.tobytes() == whole[ns]["rowidx"]
        _check(namespace_payloads(space, ws._fact_entries(ns)), space)


def test_json_array_chunks_are_the_bytes_of_one_dumps(monkeypatch):
    """The facts payload is encoded an item at a time (state_rows.json_array_chunks): joined, the
    chunks are exactly orjson's bytes for the whole list, cut after every item or in larger pieces."""
    from harn_ls.cache import rows as state_rows

    cases = [[], [None], [[1, {"a": [1, 2]}, []]], [[i, {"k": "v" * i, 3: None}, [["p", i]]] for i in range(50)]]
    for chunk_bytes in (1, 64, 1 << 20):
        monkeypatch.setattr(state_rows, "ROW_CHUNK_BYTES", chunk_bytes)
        for items in cases:
            got = b"".join(state_rows.json_array_chunks(iter(items), orjson.OPT_NON_STR_KEYS))
            assert got == orjson.dumps(items, option=orjson.OPT_NON_STR_KEYS)
