"""Lines appended to a memory log after its namespace was restored from the state cache, applied
without decoding the cached records; and when a save may leave that namespace's entry as it is.

A restored namespace (`MemoryNamespace.restored`) builds its records only when something needs
them. An appended batch is projected by a scratch namespace (`_TailSpace`) that holds the cached
tombstones and continues the restored counters (`TailOverlay`):
- a store adds a record at the next sequence (or a hidden one when its id has a tombstone: the
  only old state a store reads);
- an update or a forget also reaches the cached records of its id. Their rows are found by the
  cached id index (`ids` payload: an 8-byte hash of each row's id, in row order), read one
  by one and checked (row CRC, sequence, and the id the index claims) before anything of the batch
  is applied; the overlay then keeps the updated records (`replaced`) and the forgotten ones
  (`removed`) aside, the cached rows stay as they are;
- an open changes the config, which the restored summary holds.
The namespace takes its counters, sizes, config and problems at once and its records when they are
built (`merge_tail`, called by the loader). When the id index is missing or does not check out, the
records are decoded first and the batch is applied by the namespace itself, as before: the overlay
is merged then and not used again.

A save may keep a namespace's cached entry unchanged while its log only grew by batches applied
through the overlay and the growth since the entry's offset is small (`keeps_entry`): the entry
still describes the log up to that offset, the validator sees the growth as an append, and the next
load applies those lines again, the same way - the cost of a run follows the appended bytes, not
the namespace's size."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Collection, Iterable
from hashlib import blake2b

import orjson

from harn_ls.cache.rows import CacheInvalid, _checked, _pread_all
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace, add_seq
from harn_ls.formats.memory_record import MemoryRecord

TAIL_KEEP_MAX = 1 << 20  # appended bytes past a kept entry's offset, at most (each run applies them again)
TAIL_KEEP_MIN = 64 << 10  # and below this, kept whatever the namespace's size (else a quarter of its bytes)


def id_hash(rid: str) -> bytes:
    """The 8 bytes the id index holds for an id (BLAKE2b of its UTF-8)."""
    return blake2b(rid.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def id_index_payload(records: Collection[MemoryRecord], rowidx_crc: int) -> bytearray:
    """The `ids` payload of a namespace's rows (given in row order): the CRC-32 of the row index it
    was written with (a native uint64), then `id_hash` of each row's id. Fixed-width, so a row is
    found by a search of the bytes or one pass over them (no per-row objects kept). Built in one
    buffer of its final size (a list of the hashes and its join held ~5 MB of RSS at 100k)."""
    out = bytearray(8 * (len(records) + 1))
    out[:8] = array("Q", [rowidx_crc]).tobytes()
    pos = 8
    for r in records:
        out[pos:pos + 8] = id_hash(r.id)
        pos += 8
    return out


class _TailSpace(MemoryNamespace):
    """An overlay's scratch namespace: the appended stores are its own records; its updates and
    forgets also reach the cached records of the id, through the overlay (checked beforehand)."""

    overlay: TailOverlay

    def get(self, record_id: str) -> MemoryRecord | None:
        got = MemoryNamespace.get(self, record_id)  # (an appended record is past every cached one)
        return got if got is not None else self.overlay.cached_last(record_id)

    def _replace(self, old: MemoryRecord, new: MemoryRecord) -> None:
        if old.seq < self.overlay.base_seq:
            self.overlay.replaced[old.seq] = new
        else:
            self.active[old.seq] = new

    def _drop_id(self, rid: str, delta: MemoryDelta) -> None:
        self.overlay.drop_cached(rid, delta)  # (file order: the cached records come first)
        MemoryNamespace._drop_id(self, rid, delta)


class TailOverlay:
    """The batches appended to one restored namespace whose records were not built yet."""

    def __init__(self, space: MemoryNamespace, forgotten: set[str], reader, ids_source) -> None:
        self.space = space
        self.scratch = _TailSpace(space.namespace, space.path)
        self.scratch.overlay = self
        self.scratch.forgotten = forgotten  # the cached tombstones, and the ids forgotten since
        self.base_seq = space.seq  # records below it are the cached ones
        self.lazy = True  # every batch since the restore was applied here (then kept: `keeps_entry`)
        self.needs_ids = False  # a batch since held more than stores (applied again only with an id index)
        self._reader = reader  # cache/rows.RowReader of the cached rows
        self._ids_source = ids_source  # () -> the checked `ids` payload (raises CacheInvalid), or None
        self._ids: bytes | None = None  # that payload's row hashes (past its header), once a batch needed them
        self.cached_seqs: dict[str, list[int]] = {}  # id -> sequences of its cached rows (looked up so far)
        self.fetched: dict[int, MemoryRecord] = {}  # cached sequence -> its record as cached (read so far)
        self.replaced: dict[int, MemoryRecord] = {}  # cached sequence -> its record as updated since
        self.removed: set[int] = set()  # cached sequences forgotten since

    # -- the cached records an update or a forget reaches ------------------------
    def cached_last(self, rid: str) -> MemoryRecord | None:
        seqs = [s for s in self.cached_seqs.get(rid, ()) if s not in self.removed]
        if not seqs:
            return None
        return self.replaced.get(seqs[-1]) or self.fetched[seqs[-1]]

    def drop_cached(self, rid: str, delta: MemoryDelta) -> None:
        for seq in self.cached_seqs.get(rid, ()):
            if seq not in self.removed:
                self.removed.add(seq)
                updated: MemoryRecord | None = self.replaced.pop(seq, None)
                delta.remove(updated or self.fetched[seq])

    def prepare(self, lines: list[JsonlLine]) -> bool:
        """Look up and read the cached records of every id the batch's updates and forgets name;
        False (nothing changed) when the id index or a row does not check out."""
        wanted: set[str] = set()
        for ln in lines:
            ev = ln.value if ln.problem is None else None
            if ev is None:
                continue
            kind = ev.get("type")
            if kind == "update" and type(ev.get("id")) is str:
                wanted.add(ev["id"])
            elif kind == "forget" and isinstance(ev.get("forgotten_ids"), list):
                wanted.update(i for i in ev["forgotten_ids"] if type(i) is str)
        wanted.difference_update(self.cached_seqs)
        if not wanted:
            return True
        try:
            ids = self._load_ids()
            seqs = self._reader.seqs()
            if seqs is None or len(ids) != 8 * len(seqs):
                raise CacheInvalid("id index and rows differ")
            found = {rid: [seqs[row] for row in rows] for rid, rows in _rows_of(ids, sorted(wanted)).items()}
            for rid, rid_seqs in found.items():
                for seq in rid_seqs:  # (a hash shared by another id, or a damaged index: the rows decoded)
                    if seq not in self.fetched:
                        r = self._reader.record(seq)
                        if r.id != rid or r.seq != seq:
                            raise CacheInvalid("id index and rows differ")
                        self.fetched[seq] = r
        except (CacheInvalid, OSError, KeyError, TypeError, ValueError, IndexError, UnicodeError):
            return False
        self.cached_seqs.update(found)
        return True

    def _load_ids(self) -> bytes:
        """The row hashes of the id index (checked against its description, and written with these rows)."""
        if self._ids is None:
            data = self._ids_source() if self._ids_source is not None else None
            if data is None:
                raise CacheInvalid("no id index")
            if len(data) % 8 or len(data) < 8 or array("Q", data[:8])[0] != self._reader.rowidx_crc():
                raise CacheInvalid("id index not written with these rows")
            self._ids = data[8:]
        return self._ids


_FIND_MAX = 8  # ids looked up by a search of the bytes each (~2 ms at 250k rows); more: one pass (~25 ms)


def _rows_of(ids: bytes, wanted: list[str]) -> dict[str, list[int]]:
    """id -> the rows whose id hash is its, in row order, in an id index's row hashes."""
    hashes = {rid: id_hash(rid) for rid in wanted}
    out: dict[str, list[int]] = {rid: [] for rid in wanted}
    if len(wanted) <= _FIND_MAX:
        for rid, needle in hashes.items():
            pos = ids.find(needle)
            while pos >= 0:
                if pos % 8 == 0:  # (a match off the 8-byte grid is none)
                    out[rid].append(pos // 8)
                pos = ids.find(needle, pos + 1)
        return out
    by_hash: dict[int, list[str]] = {}  # (as the native uint64 the rows read as)
    for rid, h in hashes.items():
        by_hash.setdefault(int.from_bytes(h, sys.byteorder), []).append(rid)
    rows = array("Q")
    rows.frombytes(ids)
    for row in [row for row, h in enumerate(rows.tolist()) if h in by_hash]:
        for rid in by_hash[rows[row]]:
            out[rid].append(row)
    return out


def stores_only(lines: Iterable[JsonlLine]) -> bool:
    """Whether every line is a store event or a line that does not parse (a problem)."""
    # (a line without a problem holds its object)
    return all(ln.problem is not None or ln.decoded is not None or ln.value.get("type") == "store"  # type: ignore[union-attr]
               for ln in lines)


def read_tombstones(cache, tombs_desc, records_fh, records_desc) -> set[str] | None:
    """The forgotten ids of a cached namespace: its tombs payload, else (an entry written before
    there was one) its records payload; each checked against its description. None if unusable."""
    try:
        if tombs_desc is not None:
            ids = orjson.loads(cache.read_payload(tombs_desc))
        else:
            ids = orjson.loads(_checked(_pread_all(records_fh), records_desc))["forgotten"]
    except (OSError, ValueError, CacheInvalid, KeyError, TypeError):
        return None
    if type(ids) is not list or not all(type(i) is str for i in ids):
        return None
    return set(ids)


def apply_tail_lines(overlay: TailOverlay, lines: list[JsonlLine]) -> MemoryDelta | None:
    """Apply a batch through the overlay; the namespace takes its counters, config and problems.
    None (nothing applied) when the cached records it reaches cannot be read (`prepare`)."""
    if not stores_only(lines) and not overlay.prepare(lines):
        return None
    space, sc = overlay.space, overlay.scratch
    sc.seq, sc.event_count, sc.last_event_at = space.seq, space.event_count, space.last_event_at
    sc.config, sc.open_event = space.config, space.open_event
    hidden = len(sc.hidden)
    delta = sc.apply_lines(lines)
    space.seq, space.event_count, space.last_event_at = sc.seq, sc.event_count, sc.last_event_at
    space.config, space.open_event = sc.config, sc.open_event
    space.problems.extend(sc.problems)
    sc.problems.clear()
    active, _forgotten, was_hidden = space._sizes
    space._sizes = (active + len(delta.added) - len(delta.removed), len(sc.forgotten),
                    was_hidden + len(sc.hidden) - hidden)
    return delta


def index_base(overlay: TailOverlay, active: dict[int, MemoryRecord]) -> dict[int, MemoryRecord]:
    """seq -> record of the cached rows (what a cached recall index was built over), from a
    namespace's built records: the cached ones, with those updated or forgotten since as cached."""
    base = {seq: r for seq, r in active.items() if seq < overlay.base_seq}
    for seq in (*overlay.replaced, *overlay.removed):
        base[seq] = overlay.fetched[seq]
    return base


def merge_tail(overlay: TailOverlay | None, space: MemoryNamespace) -> None:
    """After the loader built a namespace's cached records: apply what the overlay kept aside, as
    the namespace's own `apply_lines` would have (the appended records past every cached one)."""
    if overlay is None or overlay.space is not space:
        return
    d = space.__dict__
    active: dict[int, MemoryRecord] = d["active"]
    by_id: dict[str, int | list[int]] = d["_by_id"]
    for seq in overlay.removed:  # (a forget removes every record of its id: the id leaves the map)
        r = active.pop(seq, None)
        if r is not None:
            by_id.pop(r.id, None)
    for seq, r in overlay.replaced.items():
        active[seq] = r  # (an update keeps the record's place)
    sc = overlay.scratch
    for seq, r in sc.active.items():
        active[seq] = r
        add_seq(by_id, r.id, seq)
    d["hidden"] = d["hidden"] + sc.hidden  # (from then on the namespace applies batches itself)
    overlay._ids = None  # (the id index is not read again)
    d["forgotten"] = d["forgotten"] | sc.forgotten
    if sc.forgets:
        d["forgets"] = d["forgets"] + sc.forgets


def keeps_entry(overlay: TailOverlay | None, space: MemoryNamespace, entry: dict | None, offset: int,
                has_index: bool) -> bool:
    """Whether a save may leave a namespace's cached `entry` as it is: its log only grew since, by
    batches applied through `overlay` (the next load applies them the same way: a forget, update or
    open only when the entry has an id index), `offset` (read so far) is not far past the entry's,
    and no recall index was built over the appended records that the entry would then lack."""
    if overlay is None or overlay.space is not space or not overlay.lazy or not isinstance(entry, dict):
        return False
    if overlay.needs_ids and not isinstance(entry.get("ids"), dict):
        return False
    v = entry.get("validator")
    start = v.get("offset") if isinstance(v, dict) else None
    if type(start) is not int:
        return False
    grown = offset - start
    return 0 <= grown <= min(TAIL_KEEP_MAX, max(TAIL_KEEP_MIN, start // 4)) and (bool(entry.get("index")) or not has_index)
