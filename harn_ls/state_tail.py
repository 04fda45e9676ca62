"""Lines appended to a memory log after its namespace was restored from the state cache, applied
without decoding the cached records; and when a save may leave that namespace's entry as it is.

A restored namespace (`MemoryNamespace.restored`) builds its records only when something needs
them. A batch of appended lines holding only stores (and lines that do not parse) changes none of
those records: a store adds a record at the next sequence, or a hidden one when its id has a
tombstone - the only old state a store reads. Such a batch is projected by a scratch namespace that
holds the cached tombstones and continues the restored counters (`TailOverlay`); the namespace takes
its counters, sizes and problems at once and its records when they are built (`merge_tail`, called
by the loader). Any other event (forget, update, open, an unknown type) decodes the records first
and is applied by the namespace itself, as before: the overlay is merged then and not used again.

A save may keep a namespace's cached entry unchanged while its log only grew by such stores and
the growth since the entry's offset is small (`keeps_entry`): the entry still describes the log up
to that offset, the validator sees the growth as an append, and the next load applies those lines
again, the same way - the cost of a run follows the appended bytes, not the namespace's size."""

from __future__ import annotations

from typing import Iterable

import orjson

from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace, MemoryRecord, add_seq
from harn_ls.state_rows import CacheInvalid, _checked, _pread_all

TAIL_KEEP_MAX = 1 << 20  # appended bytes past a kept entry's offset, at most (each run applies them again)
TAIL_KEEP_MIN = 64 << 10  # and below this, kept whatever the namespace's size (else a quarter of its bytes)


class TailOverlay:
    """The stores appended to one restored namespace whose records were not built yet."""

    def __init__(self, space: MemoryNamespace, forgotten: set[str]) -> None:
        self.space = space
        self.scratch = MemoryNamespace(space.namespace, space.path)
        self.scratch.forgotten = forgotten  # (never changed: a forget is not applied here)
        self.base_seq = space.seq  # records below it are the cached ones
        self.only_stores = True  # every batch since the restore held only stores (then kept: `keeps_entry`)


def stores_only(lines: Iterable[JsonlLine]) -> bool:
    """Whether every line is a store event or a line that does not parse (a problem)."""
    return all(ln.problem is not None or ln.value.get("type") == "store" for ln in lines)


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


def apply_stores(overlay: TailOverlay, lines: list[JsonlLine]) -> MemoryDelta:
    """Apply a `stores_only` batch to the overlay; the namespace takes its counters and problems."""
    space, sc = overlay.space, overlay.scratch
    sc.seq, sc.event_count, sc.last_event_at = space.seq, space.event_count, space.last_event_at
    hidden = len(sc.hidden)
    delta = sc.apply_lines(lines)
    space.seq, space.event_count, space.last_event_at = sc.seq, sc.event_count, sc.last_event_at
    space.problems.extend(sc.problems)
    sc.problems.clear()
    active, forgotten, was_hidden = space._sizes
    space._sizes = (active + len(delta.added), forgotten, was_hidden + len(sc.hidden) - hidden)
    return delta


def merge_tail(overlay: TailOverlay | None, space: MemoryNamespace) -> None:
    """After the loader built a namespace's cached records: add the overlay's, as the namespace's
    own `_store` would have (file order: every one past the cached records)."""
    if overlay is None or overlay.space is not space:
        return
    d = space.__dict__
    active: dict[int, MemoryRecord] = d["active"]
    by_id: dict[str, int | list[int]] = d["_by_id"]
    for seq, r in overlay.scratch.active.items():
        active[seq] = r
        add_seq(by_id, r.id, seq)
    d["hidden"] = d["hidden"] + overlay.scratch.hidden  # (from then on the namespace applies batches itself)


def keeps_entry(overlay: TailOverlay | None, space: MemoryNamespace, entry: dict | None, offset: int,
                has_index: bool) -> bool:
    """Whether a save may leave a namespace's cached `entry` as it is: its log only grew since, by
    stores applied through `overlay` alone, `offset` (read so far) is not far past the entry's, and
    no recall index was built over the appended records that the entry would then lack."""
    if overlay is None or overlay.space is not space or not overlay.only_stores or not isinstance(entry, dict):
        return False
    v = entry.get("validator")
    start = v.get("offset") if isinstance(v, dict) else None
    if type(start) is not int:
        return False
    grown = offset - start
    return 0 <= grown <= min(TAIL_KEEP_MAX, max(TAIL_KEEP_MIN, start // 4)) and (bool(entry.get("index")) or not has_index)
