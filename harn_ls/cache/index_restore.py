"""A namespace's recall index restored from the state cache: the cached arrays (postings
memory-mapped) over the namespace's cached rows, its records decoded lazily."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harn_ls.cache.rows import CacheInvalid
from harn_ls.cache.store import ProjectCache
from harn_ls.formats.memory import MemoryNamespace

if TYPE_CHECKING:
    from harn_ls.formats.memory_record import MemoryRecord
    from harn_ls.recall.index import NamespaceIndex


def restore_index(cache: ProjectCache, ns: str, space: MemoryNamespace,
                  base: dict[int, MemoryRecord] | None = None) -> NamespaceIndex | None:
    """The recall index of a namespace from the cache, over `base` (the records it was built
    over: the namespace's active records as restored); None when missing or not consistent."""
    # numpy and the index are loaded only when recall is used: `inspect` never needs them
    import numpy as np

    # (same reason: the recall package imports numpy)
    from harn_ls.recall.docs import _Doc, _LazyDocs, _LazySlots, _TermIds

    # (same reason)
    from harn_ls.recall.index import NamespaceIndex

    desc = cache.index_entry(ns)
    if desc is None:
        return None
    reader = cache.readers.get(ns) if base is None and not space.materialized else None
    records = None if reader is not None else space.active if base is None else base
    try:
        arrays, terms, total = cache.load_index_arrays(desc)
        seqs = arrays["seqs"].tolist()
        n, nterms = len(seqs), len(terms)
        off, pslot, pcode = arrays["off"], arrays["pslot"], arrays["pcode"]
        if reader is not None:
            rows = reader.seqs()  # the namespace as restored, unchanged since: the index's records
            if rows is None or len(rows) != n or (rows != seqs and set(rows) != set(seqs)):
                raise CacheInvalid("index and rows differ")
        else:
            assert records is not None  # (no reader: the records given, or the namespace's)
            if n != len(records):
                raise CacheInvalid("index and records differ")
        if len(arrays["dl"]) != n or len(arrays["df"]) != nterms or len(off) != nterms + 1 \
                or int(off[0]) != 0 or int(off[-1]) != len(pslot) or len(pcode) != len(pslot) \
                or (len(pslot) and (int(pslot.min()) < 0 or int(pslot.max()) >= n)) or bool(np.any(np.diff(off) < 0)):
            raise CacheInvalid("index arrays do not fit together")
        srec: list[MemoryRecord] | None = None if records is None else [records[s] for s in seqs]
    except (CacheInvalid, KeyError, TypeError, ValueError):
        return None
    idx = NamespaceIndex(ns, space.config, os.path.dirname(space.path))
    idx._terms = terms
    # (the lazy stand-ins below: NamespaceIndex declares only the dicts and list they stand in for)
    idx._tid = _TermIds(terms)  # a dict once the index changes (NamespaceIndex.materialize)
    idx._df = np.array(arrays["df"], dtype=np.int64)  # written to on removals: a private copy
    idx._dl = np.array(arrays["dl"], dtype=np.int32)
    idx._alive = np.ones(n, dtype=bool)
    idx._nslots = n
    if srec is None:
        assert reader is not None  # (no records: the reader's rows are the index's records)
        same_order = reader.seqs_cached == seqs  # then a row's position is its slot: share the map
        docs = _LazyDocs(seqs, reader.record, reader.all, reader.positions() if same_order else None)
        idx.docs = docs  # type: ignore[assignment]  # (a lazy stand-in, see above)
        idx._srec = _LazySlots(docs)  # type: ignore[assignment]  # (likewise)
    else:
        # (list invariance: the index's slot list holds a record per slot now, None in the slots that die later)
        idx._srec = srec  # type: ignore[assignment]
        idx.docs = {r.seq: _Doc(r, slot) for slot, r in enumerate(srec)}
    idx.total_tokens = total
    idx._off, idx._pslot, idx._pcode = off, pslot, pcode  # read-only maps; a merge replaces them
    return idx
