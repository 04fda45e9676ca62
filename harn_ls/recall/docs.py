"""The index's documents: a record and its slot (`_Doc`), and the lazy mappings an index restored
from the state cache starts with (records decoded when first asked for)."""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, Mapping

from harn_ls.formats.memory_record import MemoryRecord
from harn_ls.util.shared_ints import shared, shared_range


class _Doc:
    __slots__ = ("record", "slot", "vec_hash")

    def __init__(self, record: MemoryRecord, slot: int) -> None:
        self.record = record
        self.slot = shared(slot)  # dense document slot in the index arrays (one int object per number)
        self.vec_hash: str | None = None  # sha256 of the searchable text, computed lazily


class _LazyDocs(Mapping[int, _Doc]):
    """seq -> `_Doc` of an index restored from the state cache: a record is decoded the first
    time it is asked for (a query touches only its hits and the ties at the cut), never all at once
    unless the index is merged (`NamespaceIndex._merge`). Records appended since the restore get new
    slots (`append`); a record removed (`pop`: forgotten, or replaced by an update, which appends
    the new one) leaves a dead slot behind, as in a built index."""

    def __init__(self, seqs: list[int], fetch: Callable[[int], MemoryRecord],
                 fetch_all: Callable[[], dict[int, MemoryRecord]], slot_of: dict[int, int] | None = None) -> None:
        self.seqs = seqs  # slot -> seq (a dead slot keeps the seq it had)
        self._seqs_shared = True  # `seqs` is the caller's list until the first append copies it
        # seq -> slot (read only)
        self._slot = dict(zip(seqs, shared_range(0, len(seqs)), strict=True)) if slot_of is None else slot_of
        self._docs: dict[int, _Doc] = {}
        self._fetch = fetch
        self._fetch_all = fetch_all
        self._restored = len(seqs)  # slots below it hold the cached records
        self._gone: set[int] = set()  # restored seqs whose cached record was removed
        self.dead: set[int] = set()  # slots of removed records
        self.changes = 0  # bumped by every append and removal (`NamespaceIndex.materialize_steps`)

    def slot_records(self) -> list[MemoryRecord | None]:
        """slot -> record of every slot (None for a dead one), the restored ones decoded all at once."""
        by_seq = self._fetch_all()
        seqs, dead, docs = self.seqs, self.dead, self._docs
        return [None if slot in dead else by_seq[seq] if slot < self._restored else docs[seq].record
                for slot, seq in enumerate(seqs)]

    def append(self, records: list[MemoryRecord], first_slot: int) -> None:
        """Documents for records with sequences not alive here, at slots `first_slot`.. (past every
        other one): an append to the log after the restore, indexed without decoding the cached records."""
        if self._seqs_shared:  # the list the restore was given may be the row reader's: copied once,
            self.seqs = list(self.seqs)  # then grown in place (a copy a batch cost ~1 ms at 265k slots)
            self._seqs_shared = False
        self.seqs.extend(r.seq for r in records)
        for slot, r in enumerate(records, first_slot):
            self._docs[r.seq] = _Doc(r, slot)
        self.changes += 1

    def pop(self, seq: int, default: _Doc | None = None) -> _Doc | None:
        """Remove a live document (its slot becomes dead); `default` when there is none."""
        if seq not in self:
            return default
        doc = self[seq]
        del self._docs[seq]
        if seq in self._slot:
            self._gone.add(seq)
        self.dead.add(doc.slot)
        self.changes += 1
        return doc

    def __getitem__(self, seq: int) -> _Doc:
        doc = self._docs.get(seq)
        if doc is None:
            if seq in self._gone:
                raise KeyError(seq)
            slot = self._slot[seq]  # KeyError for an unknown seq, as a dict
            doc = self._docs[seq] = _Doc(self._fetch(seq), slot)
        return doc

    def __contains__(self, seq: object) -> bool:
        return seq in self._docs or (seq in self._slot and seq not in self._gone)

    def __iter__(self) -> Iterator[int]:
        if not self.dead:
            return iter(self.seqs)
        dead = self.dead
        return (seq for slot, seq in enumerate(self.seqs) if slot not in dead)

    def __len__(self) -> int:
        return len(self.seqs) - len(self.dead)


class _LazySlots:
    """slot -> record over `_LazyDocs` (None for a dead slot; the only value it takes is None,
    which `_LazyDocs.pop` has already recorded)."""

    __slots__ = ("_docs",)

    def __init__(self, docs: _LazyDocs) -> None:
        self._docs = docs

    def __getitem__(self, slot: int) -> MemoryRecord | None:
        docs = self._docs
        if slot in docs.dead:
            return None
        return docs[docs.seqs[slot]].record

    def __setitem__(self, slot: int, value: None) -> None:
        if value is not None:
            raise TypeError("a restored index's slots only die")
        self._docs.dead.add(slot)

    def __len__(self) -> int:
        return len(self._docs.seqs)


class _TermIds:
    """term -> term id over a restored index's term list, without building the whole dict: a query
    looks up a handful of terms (a C-level scan of the list each, remembered). After `_SCAN_MAX`
    distinct terms, or for anything but a lookup, the dict is built once and used from then on.

    A scan costs about a tenth of building the dict (0.5 ms against 5 ms for 20k terms at 1M
    events), so a one-off CLI query scans, and a process that keeps querying builds the dict
    at its fifth distinct term instead of paying a scan per new term in every namespace
    (at 64, the first ~30 queries of a session each paid ~1 ms per term per namespace)."""

    __slots__ = ("_terms", "_memo", "_full")
    _SCAN_MAX = 4

    def __init__(self, terms: list[str]) -> None:
        self._terms = terms
        self._memo: dict[str, int | None] = {}
        self._full: dict[str, int] | None = None

    def as_dict(self) -> dict[str, int]:
        if self._full is None:
            self._full = dict(zip(self._terms, shared_range(0, len(self._terms)), strict=True))
        return self._full

    def get(self, term: str, default: int | None = None) -> int | None:
        if self._full is not None or len(self._memo) >= self._SCAN_MAX:
            return self.as_dict().get(term, default)
        if term in self._memo:
            got = self._memo[term]
        else:
            try:
                got = self._terms.index(term)
            except ValueError:
                got = None
            self._memo[term] = got
        return default if got is None else got

    def __getitem__(self, term: str) -> int:
        got = self.get(term)
        if got is None:
            raise KeyError(term)
        return got

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def __len__(self) -> int:
        return len(self._terms)

    def items(self) -> ItemsView[str, int]:
        return self.as_dict().items()
