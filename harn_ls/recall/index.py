"""One namespace's BM25 index in numpy arrays, scored bit-identically to Harn (see the package
docstring for the formula and its order of operations)."""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable, Iterator
from functools import partial
from itertools import compress, count, repeat
from operator import is_
from typing import Any, cast

import numpy as np

from harn_ls.formats.memory import DEFAULT_CONFIG, MemoryDelta
from harn_ls.formats.memory_record import MemoryRecord
from harn_ls.recall.arrays import grown, own_copy, small_uint
from harn_ls.recall.docs import _Doc, _LazyDocs, _TermIds
from harn_ls.recall.overflow import OverflowByTerm
from harn_ls.recall.results import Explain, TermExplain
from harn_ls.recall.scoring import K1, KEY_BOOST, TAG_BOOST, B, FlaggedMemo, QueryTerm, idf_of, search
from harn_ls.recall.tokenizer import _TF_BITS, _TF_MASK, analysis_chunks, analyze, analyze_many
from harn_ls.recall.vectors import namespace_vectors
from harn_ls.util.shared_ints import shared, shared_range

# Harn's per-query-term field boost, `(0.4 if in key) + (0.25 if in tags)`,
# indexed by the 2-bit flag code (1 = key, 2 = tag) stored with each posting.
_BOOST_OF_FLAGS = [(KEY_BOOST if code & 1 else 0.0) + (TAG_BOOST if code & 2 else 0.0) for code in range(4)]

_OVERFLOW_MIN = 1 << 15  # postings appended before they are merged into the sorted main arrays
_DEAD_MIN = 1024  # dead slots tolerated before the slots are renumbered (and at most a quarter of them)
_BATCH_MIN = 8  # records per apply() from which the vectorised add path pays off
_EMPTY_I32 = np.zeros(0, dtype=np.int32)


def _narrow_slots(slots: np.ndarray, nslots: int) -> np.ndarray:
    """Main postings' slots as uint16 when every slot of the namespace fits (most namespaces: half
    the bytes of int32, ~6 MB of a 100k project's server), else int32."""
    return slots.astype(np.uint16 if nslots <= 1 << 16 else np.int32, copy=False)


class NamespaceIndex:
    """Inverted index over one namespace's active records, in numpy arrays.

    Documents live in dense *slots* (per-slot arrays: dl, alive; a slot ->
    record list). A posting is a (slot, code) pair with `code = tf << 2 |
    flags` (flags: 1 = the term is a key token, 2 = a tag token). Postings
    are kept in a term-sorted main array (CSR: `_off[term]` .. `_off[term +
    1]`, about 6 bytes a posting) plus an append-only overflow that new
    records go to (a plain-list tail of it makes a single add nearly free of
    numpy calls); the overflow is merged into the main arrays when it
    outgrows 1/8 of them, so each posting is moved O(1) times amortised.

    df of a term = `_df[term]` + its overflow postings, where `_df` counts
    the live main postings minus the dead overflow ones: a removal decrements
    `_df` wherever the posting lives, and a merge adds the overflow counts.
    Removing a record marks its slot dead (re-tokenizing the record to find
    its terms, so no per-record term list is kept); dead postings are
    dropped at the next merge, and slots are renumbered (and terms no record
    uses forgotten) once a quarter of the slots are dead.

    Scoring vectorises Harn's formula over the postings of each query term,
    in query order, accumulating into a float64 buffer per slot; numpy
    evaluates the same IEEE operations in the same order as the scalar
    formula, so every score is bit-identical to it, and the field boosts are
    summed in a separate buffer and added last, as Harn does.
    """

    def __init__(self, namespace: str, config: dict[str, Any] | None = None, ns_dir: str | None = None) -> None:
        self.namespace = namespace
        self.config: dict[str, Any] = dict(config) if config else dict(DEFAULT_CONFIG)
        self.ns_dir = ns_dir  # `<memory root>/<namespace>`, for the vector cache
        self.docs: dict[int, _Doc] = {}  # seq -> doc
        self.total_tokens = 0
        self._vectors: dict[str, list[float]] = {}  # content hash -> cached vector
        # terms
        self._tid: dict[str, int] | _TermIds = {}  # (a restored index's: `_TermIds`, until it changes)
        self._terms: list[str] = []
        self._df = np.zeros(0, dtype=np.int64)  # live main postings - dead overflow postings, per term id
        # slots
        self._nslots = 0
        self._dl = np.zeros(0, dtype=np.int32)  # max(1, tokens)
        self._alive = np.zeros(0, dtype=bool)
        self._srec: list[MemoryRecord | None] = []  # slot -> record (None once dead)
        self._ndead = 0  # dead slots
        self._dead_postings = 0  # postings (main or overflow) that point at dead slots
        # main postings, sorted by term (CSR)
        self._off = np.zeros(1, dtype=np.int64)
        self._pslot = _EMPTY_I32
        self._pcode: np.ndarray = np.zeros(0, dtype=np.uint16)
        # overflow postings, in arrival order: numpy arrays, then a list tail
        self._m = 0
        self._ov_term = np.zeros(0, dtype=np.int32)
        self._ov_slot = np.zeros(0, dtype=np.int32)
        self._ov_val = np.zeros(0, dtype=np.int64)  # analysis value: tf | flags << 40
        self._tail_term: list[int] = []
        self._tail_slot: list[int] = []
        self._tail_val: list[int] = []
        self._tail_dec: list[int] = []  # term ids whose _df a removal decrements
        self._ov_by_term = OverflowByTerm()  # a term's overflow postings by binary search
        self._norm_key: tuple[float, int] | None = None
        self._norm: np.ndarray | None = None
        self._norm_min = 0.0
        self._ordered_for: np.ndarray | None = None  # the `_pslot` array `_merge` wrote (sorted per term)
        self._checked_for: np.ndarray | None = None  # the `_pslot` array `_checked` holds terms of
        self._checked: dict[int, bool] = {}  # term id -> main postings ascending (arrays not from `_merge`)
        self._flagged = FlaggedMemo()  # emptied whenever postings are added or merged

    def __len__(self) -> int:
        return len(self.docs)

    # -- maintenance ---------------------------------------------------------
    def _term_ids(self, terms: list[str]) -> list[int] | np.ndarray:
        """Term ids, interning new terms (a list for one record, an int32 array for a batch)."""
        tid = self._tid_dict()
        if len(terms) <= 256:
            known = list(map(tid.get, terms))
            if None not in known:
                return cast(list[int], known)
            fresh = list(dict.fromkeys(compress(terms, map(is_, known, repeat(None)))))
            self._intern(fresh)
            return list(map(tid.__getitem__, terms))
        # One C-level pass: a new term provisionally gets base + the index of its
        # first occurrence; those are then renumbered densely.
        base = len(self._terms)
        ids = np.fromiter(map(tid.setdefault, terms, count(base)), dtype=np.int64, count=len(terms))
        ids -= base  # new terms: >= 0, the index of their first occurrence
        first = np.flatnonzero(ids == np.arange(len(ids)))
        if len(first):
            fresh = [terms[i] for i in first.tolist()]
            for t in fresh:
                del tid[t]
            self._intern(fresh)
            dense = np.zeros(len(ids), dtype=np.int64)
            dense[first] = np.arange(len(first))
            new = ids >= 0
            ids[new] = dense[ids[new]]
        ids += base
        return ids.astype(np.int32)

    def _tid_dict(self) -> dict[str, int]:
        """The term dict, built now if the index was restored with a `_TermIds` (it is about to change)."""
        if isinstance(self._tid, _TermIds):
            self._tid = self._tid.as_dict()
        return self._tid

    def _intern(self, fresh: list[str]) -> None:
        # One string per term across all namespaces' indexes (a namespace holds ~20k terms, most of
        # them in the others too: ~5 MB at 100k events); interned strings are freed with their last user.
        fresh = list(map(sys.intern, map(own_copy, fresh)))
        names = self._terms
        self._tid_dict().update(zip(fresh, shared_range(len(names), len(names) + len(fresh)), strict=False))
        names += fresh
        self._df = grown(self._df, len(names))

    def _new_slots(self, records: list[MemoryRecord], ntokens: list[int]) -> int:
        """Allocate slots for records (in order); returns the first slot."""
        first = self._nslots
        end = first + len(records)
        if end > len(self._dl):
            self._dl = grown(self._dl, end)
            self._alive = grown(self._alive, end)
        self._dl[first:end] = np.maximum(np.array(ntokens, dtype=np.int32), 1)
        self._alive[first:end] = True
        if isinstance(self.docs, _LazyDocs):
            self.docs.append(records, first)  # (`_srec`, a `_LazySlots` over the docs, follows)
        else:
            self._srec += records
            self.docs.update(zip([r.seq for r in records], map(_Doc, records, range(first, end)), strict=False))
        self._nslots = end
        self.total_tokens += sum(ntokens)
        self._norm_key = None
        return first

    def _append_overflow(self, ids: np.ndarray, slots: np.ndarray | int, vals: list[int] | np.ndarray) -> None:
        self._flagged.clear()
        m = self._m
        k = len(ids)
        if m + k > len(self._ov_term):
            self._ov_term = grown(self._ov_term, m + k)
            self._ov_slot = grown(self._ov_slot, m + k)
            self._ov_val = grown(self._ov_val, m + k)
        self._ov_term[m : m + k] = ids
        self._ov_slot[m : m + k] = slots
        self._ov_val[m : m + k] = vals
        self._m = m + k

    def _flush(self) -> None:
        """Move the list tail into the overflow arrays and apply pending df decrements."""
        if self._tail_term:
            self._append_overflow(np.array(self._tail_term, dtype=np.int32), np.array(self._tail_slot, dtype=np.int32),
                                  self._tail_val)
            self._tail_term, self._tail_slot, self._tail_val = [], [], []
        if self._tail_dec:
            nterms = len(self._terms)
            self._df[:nterms] -= np.bincount(np.array(self._tail_dec, dtype=np.int64), minlength=nterms)
            self._tail_dec = []

    def materialize_steps(self, records_per_step: int = 1_000) -> Iterator[None]:
        """`materialize` in short steps (a server runs one per turn of its project thread, so a
        hover never waits for a whole namespace: 300k records took ~0.4 s at once). Nothing
        changes until the last step swaps the finished tables in; a change meanwhile materializes
        the index itself, and the steps then stop without touching it."""
        if isinstance(self._tid, _TermIds):
            self._tid = self._tid.as_dict()  # a complete state on its own (what `materialize` does first)
            yield
        docs = self.docs
        if not isinstance(docs, _LazyDocs):
            return
        by_slot = docs.slot_records()
        changes = docs.changes  # (what `by_slot` holds: an append or removal meanwhile stops the steps)
        yield
        srec: list[MemoryRecord | None] = []
        built: dict[int, _Doc] = {}
        for start in range(0, len(by_slot), max(1, records_per_step)):
            if self.docs is not docs or docs.changes != changes:
                return
            for slot in range(start, min(len(by_slot), start + records_per_step)):
                r = by_slot[slot]
                srec.append(r)
                if r is not None:
                    built[r.seq] = _Doc(r, slot)
            yield
        if self.docs is docs and docs.changes == changes:
            self._srec = srec
            self.docs = built

    def materialize(self) -> None:
        """Decode every record of a lazily restored index (and build its term dict): what its first
        change does first. Answers are the same either way; only when the cost is paid differs."""
        self._tid_dict()
        docs = self.docs
        if isinstance(docs, _LazyDocs):
            srec = docs.slot_records()
            self._srec = srec
            self.docs = {r.seq: _Doc(r, slot) for slot, r in enumerate(srec) if r is not None}

    def add(self, record: MemoryRecord) -> None:
        self.materialize()
        seq = record.seq
        if seq in self.docs:
            self.remove(seq)
        counts, ntokens = analyze(record)
        slot = self._nslots
        if slot >= len(self._dl):
            self._dl = grown(self._dl, slot + 1)
            self._alive = grown(self._alive, slot + 1)
        self._dl[slot] = max(1, ntokens)
        self._alive[slot] = True
        self._srec.append(record)
        self.docs[seq] = _Doc(record, slot)
        self._nslots = slot + 1
        self.total_tokens += ntokens
        self._norm_key = None
        if counts:
            self._tail_term += self._term_ids(list(counts))
            self._tail_slot += [slot] * len(counts)
            self._tail_val += counts.values()
            if len(self._tail_term) >= 4096:
                self._flush()
                self._maybe_merge()

    def add_many(self, records: Iterable[MemoryRecord], lazily: bool = False) -> None:
        """Add records in one vectorised pass (same result as `add` one by one). `lazily`: a restored
        index keeps its records undecoded (`_LazyDocs.append`); replacing one decodes them (`remove_many`)."""
        self._tid_dict()  # (new terms are interned into it)
        if not lazily:
            self.materialize()
        batch: dict[int, MemoryRecord] = {}
        for r in records:  # a later record with the same sequence replaces an earlier one
            batch.pop(r.seq, None)
            batch[r.seq] = r
        if stale := [seq for seq in batch if seq in self.docs]:
            self.remove_many(stale)
        if not batch:
            return
        self._flush()
        # tokenized in bulk a chunk at a time (its token strings all alive at once); overflow merged as it grows
        for chunk in analysis_chunks(list(batch.values())):
            postings = analyze_many(chunk)
            first = self._new_slots(chunk, postings.ntokens.tolist())
            if postings.terms:  # (terms interned first seen first, as `add` one by one would)
                ids = np.asarray(self._term_ids(postings.terms), dtype=np.int32)
                self._append_overflow(ids[postings.term], (postings.doc + first).astype(np.int32), postings.val)
            self._maybe_merge()

    def _drop(self, seq: int) -> tuple[MemoryRecord, list[str]] | None:
        self._tid_dict()  # (a restored index's records stay undecoded: `_LazyDocs.pop`)
        doc = self.docs.pop(seq, None)
        if doc is None:
            return None
        counts, ntokens = analyze(doc.record)  # the same terms add() indexed
        self._alive[doc.slot] = False
        self._srec[doc.slot] = None
        self._ndead += 1
        self._dead_postings += len(counts)
        self.total_tokens -= ntokens
        self._norm_key = None
        if doc.vec_hash is not None:
            self._vectors.pop(doc.vec_hash, None)  # content-addressed: a twin simply reloads it
        return doc.record, list(counts)

    def remove(self, seq: int) -> MemoryRecord | None:
        dropped = self._drop(seq)
        if dropped is None:
            return None
        record, terms = dropped
        self._tail_dec += map(self._tid.__getitem__, terms)
        if len(self._tail_dec) >= 4096:
            self._flush()
        self._maybe_compact()
        return record

    def remove_many(self, seqs: Iterable[int]) -> None:
        terms: list[str] = []
        for seq in seqs:
            dropped = self._drop(seq)
            if dropped is not None:
                terms += dropped[1]
        self._tail_dec += map(self._tid.__getitem__, terms)
        self._flush()
        self._maybe_compact()

    def apply_delta(self, delta: MemoryDelta) -> None:
        """Apply one batch. Removed and added lists are netted by identity first:
        a record stored (or updated) and forgotten within the same batch never
        existed for us, and an update replaces the record at the same sequence."""
        added_ids = {id(r) for r in delta.added}
        removed_ids = {id(r) for r in delta.removed}
        removed = [r.seq for r in delta.removed if id(r) not in added_ids]
        added = [r for r in delta.added if id(r) not in removed_ids]
        if isinstance(self.docs, _LazyDocs):  # appended after a restore: only the records changed are decoded
            if removed:
                self.remove_many(removed)
            return self.add_many(added, lazily=True)
        if len(removed) >= _BATCH_MIN:
            self.remove_many(removed)
        else:
            for seq in removed:
                self.remove(seq)
        if len(added) >= _BATCH_MIN:
            self.add_many(added)
        else:
            for r in added:
                self.add(r)
        self._maybe_merge()

    # -- merging and compaction -----------------------------------------------
    def _maybe_merge(self) -> None:
        if self._m + len(self._tail_term) > max(_OVERFLOW_MIN, len(self._pslot) >> 3):
            self._merge()

    def _maybe_compact(self) -> None:
        if self._ndead > max(_DEAD_MIN, self._nslots >> 2):
            self._merge(renumber=True)
        elif self._dead_postings > max(_OVERFLOW_MIN, len(self._pslot) >> 2):
            self._merge()

    def _merge(self, renumber: bool = False, sort_all: bool = False) -> None:
        """Fold the overflow into the sorted main arrays, dropping dead postings;
        with `renumber`, also pack the live slots and forget unused terms. With no dead posting and
        no renumbering the overflow is inserted into the main arrays (`_insert_overflow`) instead of
        sorting every posting again (`sort_all`: that way regardless; the arrays are the same)."""
        self.materialize()
        self._flush()
        self._flagged.clear()
        if not renumber and not self._dead_postings and not sort_all:
            self._insert_overflow()
            return
        m = self._m
        nterms = len(self._terms)
        ov_term = self._ov_term[:m]
        self._df[:nterms] += np.bincount(ov_term, minlength=nterms)  # _df: live main postings again
        main_terms = np.repeat(np.arange(len(self._off) - 1, dtype=np.int32), np.diff(self._off))
        ov_val = self._ov_val[:m]
        ov_code = small_uint(((ov_val & _TF_MASK) << 2) | (ov_val >> _TF_BITS))
        term = np.concatenate((main_terms, ov_term))
        slot = np.concatenate((self._pslot, self._ov_slot[:m]))
        code = np.concatenate((self._pcode, ov_code))  # the wider of the two dtypes
        del main_terms, ov_code
        if self._dead_postings:
            keep = self._alive[slot]
            term, slot, code = term[keep], slot[keep], code[keep]
            del keep
        if renumber:
            live = self._alive[: self._nslots]
            new_slot = (np.cumsum(live) - 1).astype(np.int32)
            slot = new_slot[slot]
            self._dl = self._dl[: self._nslots][live].copy()
            kept = [r for r in self._srec if r is not None]
            self._srec = cast(list[MemoryRecord | None], kept)
            self._nslots = len(kept)
            self._alive = np.ones(self._nslots, dtype=bool)
            docs = self.docs
            for i, r in enumerate(kept):
                docs[r.seq].slot = shared(i)
            self._ndead = 0
            used = self._df[:nterms] > 0
            if not used.all():
                new_tid = (np.cumsum(used) - 1).astype(np.int32)
                term = new_tid[term]
                self._terms = list(compress(self._terms, used.tolist()))
                self._tid = dict(zip(self._terms, shared_range(0, len(self._terms)), strict=False))
                self._df = self._df[:nterms][used].copy()
                nterms = len(self._terms)
            self._norm_key = None
        order = np.argsort(term, kind="stable")  # main part is sorted already: a merge, not a sort
        off = np.zeros(nterms + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=nterms), out=off[1:])
        del term
        self._pslot = _narrow_slots(slot[order], self._nslots)
        del slot
        self._pcode = code[order]
        self._overflow_folded(off)

    def _insert_overflow(self) -> None:
        """`_merge` without dead postings: each overflow posting goes in after its term's main
        postings, in arrival order, as a stable sort of all of them puts it. Only the two new arrays
        and the overflow's order are allocated: sorting every posting again took ~18 MB at once for
        a 100k project's largest namespace (the save compacts each index)."""
        m = self._m
        nterms = len(self._terms)
        ov_term = self._ov_term[:m]
        counts = np.bincount(ov_term, minlength=nterms)
        self._df[:nterms] += counts  # _df: live main postings again
        old_off = self._off
        counts[: len(old_off) - 1] += np.diff(old_off)
        off = np.zeros(nterms + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
        del counts
        if m:
            order = np.argsort(ov_term, kind="stable")
            # after the last main posting of the term (a term new since the last merge: at the end)
            at = old_off[np.minimum(ov_term[order].astype(np.int64) + 1, len(old_off) - 1)]
            ov_val = self._ov_val[:m]
            ov_code = small_uint(((ov_val & _TF_MASK) << 2) | (ov_val >> _TF_BITS))
            code_type = np.result_type(self._pcode.dtype, ov_code.dtype)  # (the wider, as a concatenation)
            slot_type = _narrow_slots(self._ov_slot[:0], self._nslots).dtype
            self._pslot = np.insert(self._pslot.astype(slot_type, copy=False), at, self._ov_slot[:m][order].astype(slot_type))
            self._pcode = np.insert(self._pcode.astype(code_type, copy=False), at, ov_code[order].astype(code_type))
        self._overflow_folded(off)

    def _overflow_folded(self, off: np.ndarray) -> None:
        """The main arrays hold the overflow now, at the term offsets `off`: the overflow is emptied."""
        self._off = off
        # main slots ascending per term, the overflow's in arrival order and past them: sorted, no check
        self._ordered_for = self._pslot
        self._m = 0
        self._ov_by_term.reset()
        self._dead_postings = 0
        if len(self._ov_term) > _OVERFLOW_MIN >> 3:  # give back the overflow buffers (a build's: MBs each)
            self._ov_term = np.zeros(0, dtype=np.int32)
            self._ov_slot = np.zeros(0, dtype=np.int32)
            self._ov_val = np.zeros(0, dtype=np.int64)

    def compact(self) -> None:
        """Merge everything now (tests and idle time); results never depend on it."""
        self._merge(renumber=self._ndead > 0)

    # -- statistics ----------------------------------------------------------
    def stats(self) -> tuple[int, float]:
        """(N, avgdl) exactly as Harn computes them."""
        n = max(1, len(self.docs))
        return n, max(1, self.total_tokens) / n

    def df(self, term: str) -> int:
        tid = self._tid.get(term)
        if tid is None:
            return 0
        self._flush()
        return int(self._df[tid]) + int(np.count_nonzero(self._ov_term[: self._m] == tid))

    def _all_df(self) -> np.ndarray:
        self._flush()
        nterms = len(self._terms)
        return self._df[:nterms] + np.bincount(self._ov_term[: self._m], minlength=nterms)

    def tf(self, term: str, seq: int) -> int:
        doc = self.docs.get(seq)
        if doc is None:
            return 0
        return analyze(doc.record)[0].get(term, 0) & _TF_MASK

    def _term_postings(self, tid: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(slots, codes, df) of one term, main and overflow (dead slots included); flushed first."""
        df = int(self._df[tid])
        off = np.asarray(self._off)  # (a memory map restored from the cache: numpy's wrapper costs per access)
        if tid < len(off) - 1:
            lo, hi = off[tid], off[tid + 1]
            slots, codes = np.asarray(self._pslot)[lo:hi], np.asarray(self._pcode)[lo:hi]
        else:
            slots, codes = _EMPTY_I32, self._pcode[:0]
        if self._m:
            hit = self._ov_by_term.positions(self._ov_term, self._m, tid)
            if len(hit):
                df += len(hit)
                val = self._ov_val[hit]
                slots = np.concatenate((slots, self._ov_slot[hit]))
                ov_codes = ((val & _TF_MASK) << 2) | (val >> _TF_BITS)
                if codes.dtype == np.uint16 and int(ov_codes.max()) < 1 << 16:
                    ov_codes = ov_codes.astype(np.uint16)  # keep the narrow codes the scorer's tables index
                codes = np.concatenate((codes, ov_codes))
        return slots, codes, df

    def _views(self) -> Iterable[tuple[str, list[int], list[int]]]:
        """(term, live seqs, codes) per term with live postings."""
        df = self._all_df()
        srec = self._srec
        for term, tid in self._tid.items():
            if df[tid]:
                slots, codes, _ = self._term_postings(tid)
                if self._ndead:
                    keep = self._alive[slots]
                    slots, codes = slots[keep], codes[keep]
                yield term, [srec[s].seq for s in slots.tolist()], codes.tolist()

    @property
    def postings(self) -> dict[str, dict[int, int]]:
        """Debugging view {term: {seq: tf}} of the live postings (built on each access)."""
        return {term: {s: c >> 2 for s, c in zip(seqs, codes, strict=False)} for term, seqs, codes in self._views()}

    @property
    def boosts(self) -> dict[str, dict[int, float]]:
        """Debugging view {term: {seq: Harn's per-term field boost}} (built on each access)."""
        out = {}
        for term, seqs, codes in self._views():
            b = {s: _BOOST_OF_FLAGS[c & 3] for s, c in zip(seqs, codes, strict=False) if c & 3}
            if b:
                out[term] = b
        return out

    # -- lexical scoring -----------------------------------------------------
    def _norms(self, avgdl: float) -> np.ndarray:
        """Per slot `k1 * (1 - b + b * dl / avgdl)`, the same operations as the scalar formula."""
        key = (avgdl, self._nslots)
        norm = self._norm
        if self._norm_key != key or norm is None:  # (None only before the first key is set)
            norm = self._norm = K1 * ((1.0 - B) + (B * self._dl[: self._nslots]) / avgdl)
            self._norm_min = float(norm.min()) if self._nslots else 0.0  # (bounds: scoring.QueryTerm)
            self._norm_key = key
        return norm

    def _term_ordered(self, tid: int, slots: np.ndarray, nmain: int) -> bool:
        """Whether a term's postings list its slots strictly ascending, so they can be binary-searched:
        `_merge` writes the main arrays so, and the overflow comes in slot order after them; arrays
        restored from the state cache are checked, per term and once (only terms a query searches)."""
        if self._ordered_for is not self._pslot:
            if self._checked_for is not self._pslot:
                self._checked_for, self._checked = self._pslot, {}
            ok = self._checked.get(tid)
            if ok is None:
                main = slots[:nmain]
                ok = self._checked[tid] = bool(np.all(main[1:] > main[:-1]))
            if not ok:
                return False
        tail = slots[nmain:]
        return (not len(tail) or not nmain or int(tail[0]) > int(slots[nmain - 1])) and bool(np.all(tail[1:] > tail[:-1]))

    def _query_terms(self, q: list[str]) -> list[QueryTerm]:
        """The query's terms this namespace knows (with live postings), in query order, repeats included."""
        n, _ = self.stats()
        self._flush()
        tid_get = self._tid.get
        seen: dict[str, QueryTerm | None] = {}
        order: list[QueryTerm] = []
        for term in q:
            if term not in seen:
                tid = tid_get(term)
                seen[term] = None
                if tid is not None:
                    slots, codes, df = self._term_postings(tid)
                    if df:
                        off = np.asarray(self._off)
                        nmain = int(off[tid + 1] - off[tid]) if tid < len(off) - 1 else 0
                        ordered = partial(self._term_ordered, tid, slots, nmain)  # asked only before a binary search
                        seen[term] = QueryTerm(slots, codes, idf_of(n, df), ordered, self._flagged, tid)
            got = seen[term]
            if got is not None:
                order.append(got)
        return order

    def _score(self, q: list[str], k: int | None = None, floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(live slots with score > 0, their Harn lexical scores); with `k`, records that cannot be in
        the top k (or score below `floor`) may be left out (`scoring.search`)."""
        order = self._query_terms(q)
        if not order:
            return _EMPTY_I32, np.zeros(0)
        _, avgdl = self.stats()
        norm = self._norms(avgdl)
        return search(order, norm, self._norm_min, self._alive if self._ndead else None, self._nslots, k, floor)

    def lexical_scores(self, q: list[str]) -> dict[int, float]:
        """seq -> Harn lexical score for every record with score > 0."""
        slots, scores = self._score(q)
        srec = self._srec
        return dict(zip([srec[s].seq for s in slots.tolist()], scores.tolist(), strict=False))

    def explain(self, seq: int, q: list[str]) -> Explain:
        n, avgdl = self.stats()
        counts, ntokens = analyze(self.docs[seq].record)
        dl = max(1, ntokens)
        qcount: dict[str, int] = {}
        for t in q:
            qcount[t] = qcount.get(t, 0) + 1
        dfs = {t: self.df(t) for t in qcount}
        bm25 = 0.0
        boost = 0.0
        per_term: dict[str, float] = {}
        for t in q:  # same formula and order as scoring, so `lexical` equals the hit's score
            tf = counts.get(t, 0) & _TF_MASK
            if tf:
                c = idf_of(n, dfs[t]) * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * dl / avgdl))
                bm25 += c
                per_term[t] = per_term.get(t, 0.0) + c
        for t in q:
            flags = counts.get(t, 0) >> _TF_BITS
            boost = boost + (KEY_BOOST if flags & 1 else 0.0) + (TAG_BOOST if flags & 2 else 0.0)
        terms: list[TermExplain] = []
        kb_total = tb_total = 0.0
        for t, times in qcount.items():
            flags = counts.get(t, 0) >> _TF_BITS
            kb = KEY_BOOST * times if flags & 1 else 0.0
            tb = TAG_BOOST * times if flags & 2 else 0.0
            kb_total += kb
            tb_total += tb
            df = dfs[t]
            terms.append(TermExplain(t, times, counts.get(t, 0) & _TF_MASK, df, idf_of(n, df), per_term.get(t, 0.0), kb, tb))
        return Explain(tuple(terms), bm25, kb_total, tb_total, bm25 + boost, dl, avgdl, n)

    def top_lexical(self, q: list[str], k: int, floor: float | None = None) -> list[tuple[float, int]]:
        """Top k (score, seq) in Harn order; ties at the cut are resolved exactly. With `floor` (the
        k-th best score of other namespaces), records scoring below it may be left out."""
        slots, scores = self._score(q, k, floor)
        if floor is not None:  # below it a record cannot be in the merged top k: not even decoded
            at_floor = scores >= floor
            slots, scores = slots[at_floor], scores[at_floor]
        nc = len(slots)
        if not nc:
            return []
        srec = self._srec
        if nc > k:
            kth = np.partition(scores, nc - k)[nc - k]
            above = np.flatnonzero(scores > kth)
            ties = np.flatnonzero(scores == kth)
            need = k - len(above)
            if len(ties) > need:
                # Only the records tied at the k-th score need the full key.
                at, tied = ties.tolist(), slots[ties].tolist()
                chosen = heapq.nlargest(need, range(len(tied)), key=lambda j: (
                    srec[tied[j]].stored_at, srec[tied[j]].seq))
                ties = np.array([at[j] for j in chosen], dtype=np.int64)
            pick = np.concatenate((above, ties))
            slots, scores = slots[pick], scores[pick]
        items = list(zip(scores.tolist(), slots.tolist(), strict=False))
        items.sort(key=lambda x: (x[0], srec[x[1]].stored_at, srec[x[1]].seq), reverse=True)
        return [(s, srec[slot].seq) for s, slot in items]

    def _top(self, scores: dict[int, float], k: int) -> list[tuple[float, int]]:
        """Top k of a seq -> score mapping (semantic / hybrid scores) in Harn order."""
        if not scores:
            return []
        if len(scores) > k:
            # The k-th best *distinct* score bounds the cut from below; only the
            # records at or above it get the full tie-break key.
            distinct = set(scores.values())
            kth = min(distinct) if len(distinct) <= k else heapq.nlargest(k, distinct)[-1]
            keys = list(compress(scores.keys(), map(kth.__le__, scores.values())))
        else:
            keys = list(scores)
        docs = self.docs
        # seq is unique within a namespace, so id never decides here.
        return heapq.nlargest(k, ((scores[s], s) for s in keys),
                              key=lambda x: (x[0], docs[x[1]].record.stored_at, x[1]))

    def newest(self, k: int) -> list[int]:
        docs = self.docs
        return heapq.nlargest(k, docs, key=lambda seq: (docs[seq].record.stored_at, seq))

    # -- vectors (§C.6) ------------------------------------------------------
    def cached_vectors(self, query: str) -> tuple[list[float] | None, dict[int, list[float]] | None, str]:
        """(query vector, seq -> record vector, reason) — vectors None when the cache lacks any."""
        return namespace_vectors(self.docs, self.config, self.ns_dir, self._vectors, query)
