"""A namespace's recall index as the state cache writes it (`ProjectCache._save_index`; read back by
`ProjectCache.load_index_arrays` and `state_index.restore_index`): six `.npy` arrays and the terms,
each payload handed out as chunks that are written before the next payload is built.

An array goes out as its `.npy` header and a view of its own buffer: `np.save` into a BytesIO copied
each array once more, into a buffer grown by realloc, and the pages of every place that buffer had
been stayed in the RSS until the heap was trimmed (~3.5 MB for the 1.7 MB postings of a 24k-record
namespace at 100k events). The bytes are those `np.save` writes (tests/unit/test_cache_index_payloads.py)."""

from __future__ import annotations

import io
from collections.abc import Iterator

TERMS_PER_PIECE = 4096  # terms encoded at a time (the terms payload: one a line, UTF-8)


def index_payloads(index) -> Iterator[tuple[str, str, list | Iterator[bytes]]]:
    """(name, file extension, chunks) of each payload of a recall index (`recall.index.NamespaceIndex`),
    compacted first: one sorted postings array, every slot alive (results never depend on it)."""
    # start-up: numpy (~0.15 s) loads only when a recall index is saved
    import numpy as np

    index.compact()
    n = index._nslots
    yield "dl", "npy", npy_chunks(np.ascontiguousarray(index._dl[:n], dtype=np.int32))
    yield "df", "npy", npy_chunks(np.ascontiguousarray(index._df[: len(index._terms)], dtype=np.int64))
    yield "off", "npy", npy_chunks(np.ascontiguousarray(index._off, dtype=np.int64))
    # (uint16 when the namespace's slots fit: recall/index._narrow_slots; the restore checks the range)
    narrow = index._pslot.dtype == np.uint16
    yield "pslot", "npy", npy_chunks(np.ascontiguousarray(index._pslot, dtype=np.uint16 if narrow else np.int32))
    yield "pcode", "npy", npy_chunks(np.ascontiguousarray(index._pcode))
    srec = index._srec
    yield "seqs", "npy", npy_chunks(np.fromiter((r.seq for r in srec), dtype=np.int64, count=len(srec)))
    yield "terms", "txt", term_chunks(index._terms)


def npy_chunks(arr) -> list:
    """[the `.npy` header (format 1.0), a byte view of the array's buffer]: the bytes of `np.save(arr)`
    for a C-contiguous one-dimensional array of plain numbers, without copying the data."""
    # start-up: numpy (~0.15 s) loads only when a recall index is saved
    from numpy.lib import format as npy_format

    if arr.ndim != 1 or not arr.flags.c_contiguous or arr.dtype.hasobject:
        raise ValueError("only a contiguous one-dimensional array of numbers is written this way")
    head = io.BytesIO()
    npy_format.write_array_header_1_0(head, npy_format.header_data_from_array_1_0(arr))
    return [head.getvalue(), memoryview(arr).cast("B")]


def term_chunks(terms: list[str]) -> Iterator[bytes]:
    """"\\n".join(terms) in UTF-8, TERMS_PER_PIECE terms at a time (the whole string and its encoding
    were two more copies of the payload)."""
    for start in range(0, len(terms), TERMS_PER_PIECE):
        if start:
            yield b"\n"
        yield "\n".join(terms[start:start + TERMS_PER_PIECE]).encode("utf-8")
