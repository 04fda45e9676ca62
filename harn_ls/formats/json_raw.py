"""A big JSON document read in parts, never all parsed at once.

msgspec splits a document into the JSON text of its parts (`msgspec.Raw`: views into the bytes
read, checked as JSON but not decoded); orjson then reads each part, as every other JSON
harn-ls reads, so a part's value is what a whole parse would give. An array of many elements
(a run record's transcript events) becomes a `RawArray`, whose elements are parsed when asked
for: a 14 MB run record parsed whole took ~54 MB at once, in parts its own bytes and one
element at a time.

Every part is parsed once as it is split, so whatever a whole parse refuses (invalid UTF-8, a
float past f64, bad JSON: msgspec does not look inside the bytes it only skips) is refused here
too, as `NotRead`; the caller then parses the document whole, which names the problem exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import msgspec
import orjson

from harn_ls.util.json_types import JsonValue

_members = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_elements = msgspec.json.Decoder(list[msgspec.Raw]).decode
_REFUSED = (msgspec.DecodeError, orjson.JSONDecodeError, RecursionError)


class NotRead(Exception):
    """A part that msgspec or orjson refuses: read the document whole for its problem."""


def members(data: bytes | msgspec.Raw) -> dict[str, msgspec.Raw]:
    """The members of the JSON object `data` as their JSON text (NotRead if it is not one)."""
    try:
        return _members(data)
    except _REFUSED as exc:
        raise NotRead(str(exc)) from None


def parse(part: msgspec.Raw) -> JsonValue:
    """One part, read by orjson (NotRead if orjson refuses it)."""
    try:
        value: JsonValue = orjson.loads(memoryview(part))  # (orjson reads a Raw through its buffer)
    except _REFUSED as exc:
        raise NotRead(str(exc)) from None
    return value


def starts_with(part: msgspec.Raw, byte: bytes) -> bool:
    """Whether the part's JSON begins with `byte` (`{` an object, `[` an array)."""
    return memoryview(part)[:1] == byte


def checked_array(part: msgspec.Raw) -> RawArray:
    """The JSON array `part` as a RawArray, after parsing (and dropping) each element once: the
    array is then known to be exactly what a whole parse gives (NotRead if not)."""
    try:
        elements = _elements(part)
    except _REFUSED as exc:
        raise NotRead(str(exc)) from None
    for element in elements:
        parse(element)
    return RawArray(elements)


class RawArray(Sequence[JsonValue]):
    """The elements of a JSON array, each kept as its JSON text and parsed when asked for (an
    equal value, a new object each time; none is held once its caller lets it go)."""

    __slots__ = ("_parts",)

    def __init__(self, parts: list[msgspec.Raw]) -> None:
        self._parts = parts

    def __len__(self) -> int:
        return len(self._parts)

    @overload
    def __getitem__(self, i: int) -> JsonValue: ...
    @overload
    def __getitem__(self, i: slice) -> list[JsonValue]: ...

    def __getitem__(self, i: int | slice) -> JsonValue | list[JsonValue]:
        if isinstance(i, slice):
            return [orjson.loads(memoryview(p)) for p in self._parts[i]]
        value: JsonValue = orjson.loads(memoryview(self._parts[i]))  # (checked once: cannot fail)
        return value

    def __iter__(self) -> Iterator[JsonValue]:
        for part in self._parts:
            yield orjson.loads(memoryview(part))

    def items(self, indexes: Iterable[int]) -> Iterator[JsonValue]:
        """The elements at `indexes`, parsed one at a time."""
        parts = self._parts
        for i in indexes:
            yield orjson.loads(memoryview(parts[i]))
