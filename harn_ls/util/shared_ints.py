"""One int object per small non-negative number, shared by every structure that keeps one.

CPython caches the ints -5..256 only: every other number a loop computes is an object of its own
(32 bytes). A 100k-event server keeps several per record (its sequence, its line, its recall slot)
and one per recall term and namespace (the term id in each namespace's term dict), ~400k objects
holding the same few tens of thousands of values: the sequences of one namespace are the
sequences of the next. Taken from this table instead, each value is one object (~10 MB less at
100k events). Ints are immutable and compared by value, so sharing them changes no answer."""

from __future__ import annotations

from collections.abc import Iterator

# Grown on demand up to TABLE_MAX entries (8 bytes a slot, plus 32 per int made): past it,
# numbers are used as they come (a namespace that big amortises its own ints).
TABLE_MAX = 1 << 22
_table: list[int] = list(range(1 << 12))


def table_for(stop: int) -> list[int]:
    """The shared table, holding at least the numbers below `stop` (or up to TABLE_MAX):
    for a loop that indexes it directly (`table[n] if n < len(table) else n`)."""
    if stop > len(_table) and len(_table) < TABLE_MAX:
        _table.extend(range(len(_table), min(TABLE_MAX, max(stop, 2 * len(_table)))))
    return _table


def shared(n: int) -> int:
    """`n`, as the table's object when it holds it (n >= 0)."""
    table = _table if n < len(_table) else table_for(n + 1)
    return table[n] if 0 <= n < len(table) else n


def shared_range(start: int, stop: int) -> Iterator[int]:
    """`range(start, stop)` as the table's objects where it holds them."""
    table = table_for(stop)
    if stop <= len(table):
        return iter(table[start:stop])
    return iter([*table[start:len(table)], *range(max(start, len(table)), stop)])
