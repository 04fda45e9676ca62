"""A big JSON document read with its big arrays left unparsed, element by element.

msgspec splits a document into the JSON text of its parts (`msgspec.Raw`: views into the bytes
read, checked as JSON syntax but not decoded), which locates a big array (a run record's
transcript events) in the bytes (`span`). The document is then parsed by orjson, as every other
JSON harn-ls reads, with each such array cut out (`[]` in its place), and each element of the
array is parsed once on its own, at the depth it has in the document: whatever a whole parse
refuses or decides - invalid UTF-8 or a float past f64 anywhere (msgspec does not look inside
the bytes it only skips), a repeated key (the last one wins, and the bytes of the others are
still checked), the nesting limit - is refused or decided the same, so the value is a whole
parse's. Anything refused raises `NotRead`; the caller then parses the document whole, which
names the problem exactly. The array becomes a `RawArray`, its elements parsed when asked for:
a 14 MB run record parsed whole took ~54 MB at once, this way its bytes and one element at a time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast, overload

import orjson

from harn_ls.util.json_types import JsonValue

if TYPE_CHECKING:
    import msgspec


@functools.cache
def _msgspec() -> ModuleType:
    """msgspec, imported with the first big record (~10 ms a one-shot command need not pay)."""
    # start-up: only a run record of 1 MB or more is split
    import msgspec

    return msgspec


@functools.cache
def _decoder(of: str) -> Callable[[Any], Any]:
    """msgspec's decoder of an object's members (`of`="members") or an array's elements, as Raws."""
    ms = _msgspec()
    raw: Any = ms.Raw  # (a type known at run time only, to the checker)
    decoder: Any = ms.json.Decoder(dict[str, raw] if of == "members" else list[raw])
    decode: Callable[[Any], Any] = decoder.decode
    return decode


def _split(of: str, data: bytes | msgspec.Raw) -> Any:
    """`data` decoded by `_decoder(of)` (NotRead if msgspec refuses it)."""
    try:
        return _decoder(of)(data)
    except (_msgspec().DecodeError, orjson.JSONDecodeError, RecursionError) as exc:
        raise NotRead(str(exc)) from None


class NotRead(Exception):
    """A part that msgspec or orjson refuses: read the document whole for its problem."""


def members(data: bytes | msgspec.Raw) -> dict[str, msgspec.Raw]:
    """The members of the JSON object `data` as their JSON text (NotRead if it is not one)."""
    found: dict[str, msgspec.Raw] = _split("members", data)
    return found


def parse(data: bytes) -> JsonValue:
    """A document read by orjson (NotRead if orjson refuses it)."""
    try:
        value: JsonValue = orjson.loads(data)
    except (orjson.JSONDecodeError, RecursionError) as exc:
        raise NotRead(str(exc)) from None
    return value


def starts_with(part: msgspec.Raw, byte: bytes) -> bool:
    """Whether the part's JSON begins with `byte` (`{` an object, `[` an array)."""
    return memoryview(part)[:1] == byte


def _address(buffer: bytes | msgspec.Raw) -> int:
    # start-up: numpy (~70 ms) only where a big record is split, and the recall index needs it anyway
    import numpy as np

    return int(np.frombuffer(buffer, dtype=np.uint8).ctypes.data)


def span(part: msgspec.Raw, source: bytes) -> tuple[int, int]:
    """Where `part` (a Raw decoded from `source`, or from a Raw of it) lies in `source`: a Raw is
    a view into the bytes it was decoded from, never a copy."""
    start = _address(part) - _address(source)
    end = start + len(part)
    if not 0 <= start < end <= len(source):
        raise NotRead("a part outside its document")
    return start, end


# An element this small or smaller on average is not worth its Raw (48 bytes and a list slot): an
# array of them (`[0,0,...]`) is left in the document, to the whole parse and its density rule.
MIN_ELEMENT_BYTES = 64
# Before any Raw is made, the commas bound how many there could be (commas in strings count too:
# an over-count, never an under-count): at most one per this many bytes, or the Raws of `[0,0,...]`
# alone would take ~28 times the array (a whole parse: 12 times, small ints being shared).
MIN_BYTES_PER_COMMA = 16


def elements(part: msgspec.Raw, source: bytes) -> list[msgspec.Raw] | None:
    """The elements of the JSON array `part` (of `source`) as their JSON text, or None when they
    are too small on average to be kept apart (NotRead if it is not an array)."""
    start, end = span(part, source)
    if (source.count(b",", start, end) + 1) * MIN_BYTES_PER_COMMA > end - start:
        return None
    items: list[msgspec.Raw] = _split("elements", part)
    return items if len(items) * MIN_ELEMENT_BYTES <= end - start else None


def checked_array(items: list[msgspec.Raw], depth: int, clean: Callable[[JsonValue], bool] | None = None) -> RawArray:
    """An array's elements as a RawArray, after parsing (and dropping) each once at `depth`, the
    number of containers around it in its document (so orjson's nesting limit falls where a whole
    parse meets it): the array is then known to be exactly what a whole parse gives (NotRead if
    not). `clean`, asked of each element while it is parsed: the indexes of those it says no to
    become the array's `unclean`, so its reader need not parse every element again to find them."""
    opening, closing = b"[" * depth, b"]" * depth
    unclean: list[int] = []
    for i, item in enumerate(items):
        value = parse(b"".join((opening, item, closing)))  # (one copy of the element)
        if clean is not None:
            for _ in range(depth):
                value = cast("list[JsonValue]", value)[0]  # (the element, inside the `depth` arrays put around it)
            if not clean(value):
                unclean.append(i)
    return RawArray(items, None if clean is None else unclean)


class RawArray(Sequence[JsonValue]):
    """The elements of a JSON array, each kept as its JSON text and parsed when asked for (an
    equal value, a new object each time; none is held once its caller lets it go). `unclean`: the
    indexes `checked_array`'s `clean` said no to (None: not asked, any element may be)."""

    __slots__ = ("_parts", "unclean")

    def __init__(self, parts: list[msgspec.Raw], unclean: list[int] | None = None) -> None:
        self._parts = parts
        self.unclean = unclean

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
