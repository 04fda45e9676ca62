"""recall/docs.py `_LazyDocs`: appended documents get the next slots, and the list of sequences the
restore handed over (the row reader's) is never changed by them."""

from __future__ import annotations

from harn_ls.formats.memory_record import MemoryRecord, memory_record
from harn_ls.recall.docs import _LazyDocs


def _record(seq: int) -> MemoryRecord:
    return memory_record(f"id-{seq}", "ns", f"k{seq}", f"text {seq}", f"text {seq}", (), "2026-01-01T00:00:00Z", seq, seq)


def test_appends_take_the_next_slots_and_leave_the_restored_list_alone():
    restored = [0, 1, 2]
    docs = _LazyDocs(restored, fetch=_record, fetch_all=lambda: {s: _record(s) for s in restored})
    docs.append([_record(5), _record(6)], 3)
    docs.append([_record(9)], 5)
    assert restored == [0, 1, 2]  # the reader's list, as it was
    assert docs.seqs == [0, 1, 2, 5, 6, 9]
    assert [docs[s].slot for s in (5, 6, 9)] == [3, 4, 5]
    assert docs[1].record.id == "id-1" and docs[1].slot == 1  # a restored one, decoded when asked for
    docs.pop(5)
    assert list(docs) == [0, 1, 2, 6, 9] and len(docs) == 5
    assert [r.id if r else None for r in docs.slot_records()] == ["id-0", "id-1", "id-2", None, "id-6", "id-9"]
