"""The state cache's payloads are written in chunks from one fixed buffer (state_rows.gathered and
the builders on it, state_index_payloads): whatever the chunk size, the bytes written are exactly
those of the whole-payload encodings they replace (orjson.dumps, np.save, joins), and a payload
whose chunks fail midway leaves no file behind."""

from __future__ import annotations

import io
import os
import zlib
from array import array

import numpy as np
import orjson
import pytest

from harn_ls.cache import index_payloads as state_index_payloads
from harn_ls.cache import rows as state_rows
from harn_ls.cache.index_payloads import npy_chunks, term_chunks
from harn_ls.cache.rows import (
    FACT_SEPARATOR,
    fact_inspect_chunks,
    fact_inspect_fragment,
    gathered,
    json_object_chunks,
    new_row_index,
    row_chunks,
)
from harn_ls.cache.store import ProjectCache, namespace_payloads
from harn_ls.cache.tail import id_hash, id_index_payload
from harn_ls.model.workspace import Workspace
from tests.unit.test_cache import cache_env, project  # noqa: F401  (fixtures)

CHUNK_SIZES = (1, 3, 64, 200, 1 << 16)


@pytest.mark.parametrize("cap", CHUNK_SIZES)
def test_gathered_chunks_join_to_the_pieces_and_stay_within_the_size(monkeypatch, cap):
    monkeypatch.setattr(state_rows, "ROW_CHUNK_BYTES", cap)
    pieces = [b"", b"a", b"bc" * 40, b"", bytes(range(256)), b"x" * 300, memoryview(b"tail")]
    chunks = list(gathered(pieces))  # kept all at once: each chunk is its own object
    assert b"".join(chunks) == b"".join(bytes(p) for p in pieces)
    longest = max(len(p) for p in pieces)
    assert all(len(c) <= max(cap, longest) for c in chunks)
    assert all(len(c) <= cap for c in chunks if not any(bytes(p) == bytes(c) for p in pieces))


@pytest.mark.parametrize("cap", CHUNK_SIZES)
def test_json_object_chunks_are_the_bytes_of_one_dumps(monkeypatch, cap):
    monkeypatch.setattr(state_rows, "ROW_CHUNK_BYTES", cap)
    cases = [{}, {"a": 1}, {"/p/ü\u2028.json": [[1, 2, 3, 4, 5], [None, "x" * 500], "{\"s\": []}"], "b": {"k": [1.5]}},
             {f"/run/{i}.json": [[i, i * 7], list(range(i)), "d" * i] for i in range(60)}]
    for doc in cases:
        assert b"".join(json_object_chunks(doc)) == orjson.dumps(doc)
    with pytest.raises(TypeError):
        b"".join(json_object_chunks({"a": 1, 2: 3}))


def _old_inspect_payload(facts: list) -> bytes:
    """The inspect facts payload as it was built before it came in chunks (the reference)."""
    ordered = sorted(facts, key=lambda f: f.id)
    fragments = [fact_inspect_fragment(f) for f in ordered]
    ends, end = [], -len(FACT_SEPARATOR)
    for frag in fragments:
        end += len(FACT_SEPARATOR) + len(frag)
        ends.append(end)
    head = orjson.dumps({"ids": [f.id for f in ordered], "ends": ends})
    return head + b"\n" + FACT_SEPARATOR.join(fragments)


@pytest.mark.parametrize("cap", CHUNK_SIZES)
def test_inspect_fact_chunks_are_the_old_payload(project, monkeypatch, cap):
    ws = Workspace.load(str(project))
    facts = list(ws.facts.values())
    assert len(facts) > 2
    monkeypatch.setattr(state_rows, "ROW_CHUNK_BYTES", cap)
    for some in (facts, facts[:1], [], list(reversed(facts))):
        assert b"".join(fact_inspect_chunks(some)) == _old_inspect_payload(some)


@pytest.mark.parametrize("cap", (1, 200, 1 << 16))
def test_rows_fitting_or_not_in_a_chunk_give_the_same_payload_and_index(project, monkeypatch, cap):
    """Rows shorter and longer than a chunk mixed (200 bytes: some of each): the joined chunks and
    the row index equal a build in one chunk; the index is sized once, whatever it was given."""
    ws = Workspace.load(str(project))
    whole = {ns: namespace_payloads(space, ws._fact_entries(ns)) for ns, space in ws.memory.items()}
    monkeypatch.setattr(state_rows, "ROW_CHUNK_BYTES", cap)
    for ns, space in ws.memory.items():
        for index in (new_row_index(space), array("q"), array("q", [7] * 5)):
            data = b"".join(row_chunks(space, None, index))
            assert data == whole[ns]["rows"] and index.tobytes() == whole[ns]["rowidx"]
            assert len(index) == 3 * len(space.active)


def test_id_index_is_the_crc_then_each_ids_hash():
    class R:
        def __init__(self, rid):
            self.id = rid

    ids = ["a", "ünï\u2028", "a", "x" * 300, ""]
    expected = array("Q", [0xDEADBEEF]).tobytes() + b"".join(id_hash(i) for i in ids)
    assert bytes(id_index_payload([R(i) for i in ids], 0xDEADBEEF)) == expected
    assert bytes(id_index_payload([], 5)) == array("Q", [5]).tobytes()


@pytest.mark.parametrize("dtype", ["u2", "i4", "u4", "i8"])
@pytest.mark.parametrize("n", [0, 1, 1000])
def test_npy_chunks_are_the_bytes_of_np_save(dtype, n):
    arr = (np.arange(n, dtype=np.int64) * 7919 % 60000).astype(dtype)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    got = b"".join(bytes(c) for c in npy_chunks(arr))
    assert got == buf.getvalue()
    back = np.load(io.BytesIO(got), allow_pickle=False)
    assert back.dtype == arr.dtype and np.array_equal(back, arr)


def test_npy_chunks_refuse_what_np_save_would_copy():
    with pytest.raises(ValueError):
        npy_chunks(np.arange(10, dtype=np.int64)[::2])
    with pytest.raises(ValueError):
        npy_chunks(np.zeros((2, 2), dtype=np.int64))


@pytest.mark.parametrize("per_piece", [1, 2, 3, 4096])
def test_term_chunks_are_the_joined_terms(monkeypatch, per_piece):
    monkeypatch.setattr(state_index_payloads, "TERMS_PER_PIECE", per_piece)
    for terms in ([], ["a"], ["a", "bé"], [f"t{i}" for i in range(7)], ["ü"] * 9):
        assert b"".join(term_chunks(terms)) == "\n".join(terms).encode("utf-8")


def test_saved_index_arrays_read_back_as_np_save_writes_them(project, cache_env):
    """Each `.npy` payload of a saved recall index is a file np.save would write for its array."""
    ws = Workspace.load(str(project), cache=True)
    _ = ws.recall  # the index is built, so it is saved
    assert ws.save_cache()
    cache = ProjectCache(str(project))
    checked = 0
    for ns in ws.memory:
        desc = cache.index_entry(ns)
        assert desc is not None
        for d in desc.values():
            if not isinstance(d, dict) or not d["name"].endswith(".npy"):
                continue
            data = cache.read_payload(d)
            buf = io.BytesIO()
            np.save(buf, np.load(io.BytesIO(data), allow_pickle=False), allow_pickle=False)
            assert buf.getvalue() == data and zlib.crc32(data) == d["crc"]
            checked += 1
    assert checked >= 6 * len(ws.memory)


def test_a_payload_failing_midway_leaves_no_file(project, cache_env):
    cache = ProjectCache(str(project))
    os.makedirs(cache.folder, exist_ok=True)

    def chunks():
        yield b"[1,"
        raise TypeError("a value orjson cannot write")

    with pytest.raises(TypeError):
        cache._write_payload("runs.json", chunks(), "tok")
    assert os.listdir(cache.folder) == []
    desc = cache._write_payload("runs.json", iter([b"{", b"}"]), "tok")
    assert cache.read_payload(desc) == b"{}"
