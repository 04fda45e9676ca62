"""A memory record (one projected store event) and the forms it holds its value in.

`MemoryRecord` is a msgspec Struct: a store line that Harn wrote decodes straight into it, in C
(`decode_store_line`); every other line, and every record built from Python values (the state
cache's rows, an update), goes through `memory_record`. See harn-formats §C.2 for the fields.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import msgspec
import orjson

from harn_ls.formats.harn_json import serde_compact
from harn_ls.util.json_types import JsonObject, JsonValue

if TYPE_CHECKING:  # (a TypedDict for the checker only: `to_json` builds a plain dict)
    from typing import NotRequired, TypedDict

    class MemoryRecordJson(TypedDict):
        """`MemoryRecord.to_json()`: a record as the CLI and the tests compare it."""

        id: str
        namespace: str
        key: str
        value: JsonValue
        text: str
        tags: list[str]
        stored_at: str
        provenance: JsonValue
        status: str | None
        scope: str | None
        flags: JsonObject
        sequence: int
        updated_at: NotRequired[str]

class _EmptyFlags(dict[str, JsonValue]):
    """An empty dict that refuses to change: being shared by most records, a write into it would
    give flags to all of them. Still a dict, so equality, `dict(...)` and JSON encoders see `{}`."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a record's flags are shared and read-only: build a new dict")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse


# The flags of every record stored without any (most): one shared empty dict, not one each (~5 MB
# at 100k). Nothing modifies a record's flags (an update merges into a new dict; `to_json` copies),
# and the shared one cannot be modified.
EMPTY_FLAGS: JsonObject = _EmptyFlags()
# Tag tuples seen at least twice, each the first of its equal tuples (its strings interned): records
# share them instead of holding one tuple and one string per tag each (~18 MB at 100k). A tuple seen
# once waits in _TAGS_SEEN_ONCE: facts carry tags of their own (their evidence refs), and taken in on
# first sight, 10k such one-off tuples filled the cap, so every namespace read after them shared
# nothing (~9 MB at 100k). Both bounded: tags are project bytes. Past the cap a new combination is not
# shared; the seen-once table is emptied when full (a pair split by that is not shared, nothing else).
_SHARED_TAGS: dict[tuple[str, ...], tuple[str, ...]] = {}
_SHARED_TAGS_CAP = 1 << 15
_TAGS_SEEN_ONCE: dict[tuple[str, ...], tuple[str, ...]] = {}
_TAGS_SEEN_ONCE_CAP = 1 << 15
def shared_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """tuple(tags), as the one tuple equal records share once it has been seen twice (see _SHARED_TAGS)."""
    key = tuple(tags)
    got = _SHARED_TAGS.get(key)
    if got is not None:
        return got
    first = _TAGS_SEEN_ONCE.pop(key, None)
    if first is not None:  # the second sighting: the first one's tuple is the shared one from now on
        if len(_SHARED_TAGS) < _SHARED_TAGS_CAP:
            _SHARED_TAGS[first] = first
        return first
    key = tuple(sys.intern(t) if type(t) is str else t for t in key)  # (one string per tag, shared or not)
    if len(_TAGS_SEEN_ONCE) >= _TAGS_SEEN_ONCE_CAP:
        _TAGS_SEEN_ONCE.clear()
    _TAGS_SEEN_ONCE[key] = key
    return key


def pack_json(value: Any) -> Any:
    """A dict or list parsed by orjson, as its compact JSON bytes (what MemoryRecord keeps as its
    provenance: a two-key dict of a run id, its strings and its table took ~330 bytes, the bytes
    ~110; 30k of them at 100k events). Anything else, or a value orjson would not write back the
    same (it always does for what it parsed), is returned as it is."""
    if type(value) in _PLAIN_JSON and value:
        try:
            packed = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return value
        # (copied: the bytes orjson returns keep the 4 KB buffer they were written in, whatever their length)
        return memoryview(packed).tobytes()
    return value


def _serde_like_json(value: Any) -> bytes | None:
    """orjson's compact JSON of a parsed dict or list, when serde_json writes the same bytes (what a
    record may keep as its text instead of the value: `value_json`, `decode_store_line`); None when
    it would not: an integer past 64 bits (orjson refuses it) or a float orjson spells with `e+`."""
    try:
        compact = orjson.dumps(value)
    except TypeError:  # (orjson.JSONEncodeError is one)
        return None
    return None if b"e+" in compact else compact


_RECORD_FIELDS = ("id", "namespace", "key", "value", "text", "tags", "stored_at", "seq", "line_no", "provenance",
                  "status", "scope", "flags", "updated_at")
_FIELD_NAMES = frozenset(_RECORD_FIELDS)
_HELD = {"value": "_value", "provenance": "_provenance", "flags": "_flags"}  # fields held in another form


class _InText:
    """The type of IN_TEXT (a named sentinel: its repr says what it stands for)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "IN_TEXT"

    def __reduce__(self) -> str:
        return "IN_TEXT"  # (copied or pickled, it stays the module's one instance: `is IN_TEXT` holds)


# Held instead of a record's value when the value is a dict or list whose compact JSON is exactly
# the record's text (every dict value Harn stores: `text = serde_json::to_string(value)`): the prose
# is then kept once, as the text, and `value` parses it again when read (~2 us for a note). At 100k
# events that is ~47 MB of value dicts a server no longer holds (`MemoryRecord.value_json`).
IN_TEXT: Any = _InText()
_PLAIN_JSON = (dict, list)



# An integer no JSON value decodes to (> 0 and < 0): the type of a member a line must not have.
_NotInALine = Annotated[int, msgspec.Meta(gt=0, lt=0)]


def _no_flags() -> JsonObject:
    return EMPTY_FLAGS


class MemoryRecord(msgspec.Struct, kw_only=True, gc=False, eq=False, forbid_unknown_fields=True,
                   tag_field="type", tag="store"):
    """One active (or hidden) store, as projected. Treated as immutable: an update makes a new
    record (`with_changes`).

    A msgspec Struct that a store line decodes into directly, in C (`decode_store_line`): no dict
    of the event, no Python-level check or copy of its fields. `gc=False`: a record holds no
    reference cycle, so the cyclic collector never tracks it, nor a seq -> record dict of them.
    Built from Python values (the cache's rows, an update, a line the decoder leaves to the
    field-by-field checks) through `memory_record`."""

    id: str
    key: str
    stored_at: str
    _value: Any = msgspec.field(name="value")  # the value, or IN_TEXT when `text` is its compact JSON
    text: str = ""
    tags: tuple[str, ...] = ()
    _provenance: Any = msgspec.field(name="provenance", default=None)  # the provenance, or its compact JSON (pack_json)
    status: str | None = None
    scope: str | None = None
    # EMPTY_FLAGS (shared, read-only) when the store had none (a line with flags is not decoded)
    _flags: Any = msgspec.field(name="flags", default_factory=_no_flags)
    # set by the projection (what a line says of these is overwritten; a line with a seq or line_no
    # member is not decoded: no value passes `_NotInALine`, so msgspec never keeps an unchecked number)
    namespace: str = ""
    seq: _NotInALine = 0  # sequence of the store event (tie-break)
    line_no: _NotInALine = 0  # 1-based line of the store event
    updated_at: str | None = None

    @property
    def flags(self) -> JsonObject:
        return self._flags  # type: ignore[no-any-return]

    @property
    def provenance(self) -> Any:
        """Where the record came from (kept packed, as its compact JSON, when it is a dict or list:
        `pack_json`; parsed again on each read, an equal value and a new object each time)."""
        prov = self._provenance
        return orjson.loads(prov) if type(prov) is bytes else prov

    def provenance_json(self) -> Any:
        """The provenance for a document about to be encoded by orjson: a packed one as an
        orjson.Fragment of its bytes (the same output, without parsing it first)."""
        prov = self._provenance
        return orjson.Fragment(prov) if type(prov) is bytes else prov

    @property
    def value(self) -> Any:
        """The stored value (for a record that keeps it as its text, parsed again on each read: an
        equal value, a new object each time)."""
        value = self._value
        return orjson.loads(self.text) if value is IN_TEXT else value

    @property
    def value_in_text(self) -> bool:
        """Whether the value is held as the text only (the text is exactly its compact JSON)."""
        return self._value is IN_TEXT

    def might_hold_key(self, key: str) -> bool:
        """False only when the value is certainly no object with member `key`: a value kept as its
        text that is no object, or holds neither `key` nor an escape (`value` would parse it). Lets
        a reader find the few records it wants (facts) without parsing every other value."""
        if self._value is not IN_TEXT:
            return True
        text = self.text
        return text[:1] == "{" and (key in text or "\\" in text)

    def value_json(self) -> str:
        """`serde_compact(self.value)` (Harn's compact JSON of the value). When that is exactly the
        record's text and the value a dict or list, the record keeps the text only from then on
        (`IN_TEXT`): an equal value is parsed from it whenever read. Only values orjson writes as
        serde_json does are folded (no integer beyond 64 bits, no float spelled with `e+`), so
        parsing the text gives back an equal value."""
        value: Any = self._value
        if value is IN_TEXT:
            return self.text
        if type(value) in _PLAIN_JSON and (compact := _serde_like_json(value)) is not None:
            js = compact.decode("utf-8")
            if js == self.text:
                self._value = IN_TEXT
            return js
        return serde_compact(value)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _RECORD_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __ne__(self, other: object) -> bool:  # (msgspec's own `!=` is by identity once `__eq__` is ours)
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # value and flags are dicts: unhashable, as always

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _RECORD_FIELDS)
        return f"MemoryRecord({inner})"

    def with_changes(self, **changes: Any) -> MemoryRecord:
        """A copy with some fields replaced (the record itself is never modified)."""
        unknown = changes.keys() - _FIELD_NAMES
        if unknown:
            raise TypeError(f"MemoryRecord has no field {sorted(unknown)[0]!r}")
        if "text" in changes and "value" not in changes and self._value is IN_TEXT:
            changes["value"] = self.value  # (a value held as the old text is parsed before the text goes)
        if "flags" in changes and changes["flags"] is None:
            changes["flags"] = EMPTY_FLAGS
        return msgspec.structs.replace(self, **{_HELD.get(name, name): v for name, v in changes.items()})

    def to_json(self) -> MemoryRecordJson:
        out: MemoryRecordJson = {
            "id": self.id,
            "namespace": self.namespace,
            "key": self.key,
            "value": self.value,
            "text": self.text,
            "tags": list(self.tags),
            "stored_at": self.stored_at,
            "provenance": self.provenance,
            "status": self.status,
            "scope": self.scope,
            "flags": dict(self.flags),  # (a copy: the caller may modify it; the record's may be shared)
            "sequence": self.seq,
        }
        if self.updated_at:
            out["updated_at"] = self.updated_at
        return out


def memory_record(id: str, namespace: str, key: str, value: Any, text: str, tags: tuple[str, ...], stored_at: str,
                  seq: int, line_no: int, provenance: Any = None, status: str | None = None, scope: str | None = None,
                  flags: JsonObject | None = None, updated_at: str | None = None) -> MemoryRecord:
    """A record from Python values (`value` may be IN_TEXT, `provenance` packed bytes)."""
    return MemoryRecord(id=id, namespace=namespace, key=key, _value=value, text=text, tags=tags, stored_at=stored_at,
                        seq=seq, line_no=line_no, _provenance=provenance, status=status, scope=scope,
                        _flags=EMPTY_FLAGS if flags is None else flags, updated_at=updated_at)


def fold_values(records: Iterable[MemoryRecord]) -> None:
    """Have each record whose text is exactly its value's compact JSON keep the text only
    (`MemoryRecord.value_json`; answers do not change). A long-lived model does it as the log is
    read, so the value dicts are freed batch by batch (their memory reused by the next batch)
    instead of when the recall index analyses the records, leaving holes all over the heap: ~35 MB
    less RSS for a server at 100k events, for a JSON encoding per store (~1.5 us)."""
    for record in records:
        record.value_json()


def value_text(value: Any) -> str:
    """Harn's `value_to_search_text`: strings verbatim, anything else compact JSON."""
    return value if isinstance(value, str) else serde_compact(value)


_STORE_LINE = msgspec.json.Decoder(MemoryRecord)
_STORE_HEAD = b'{"type":"store",'  # how Harn starts every store line (the tag first)
_INT_RANGE = range(-(1 << 63), 1 << 64)  # the integers orjson reads as integers (and serde_json: i64, u64)
_DIGITS = b"0123456789"
_REFUSED_DIGITS = 309  # the digits of the smallest integer orjson refuses (past f64's 1.8e308)


def decode_store_line(line: bytes) -> MemoryRecord | None:
    """A store event's line decoded into its record in C, its value folded into its text when
    that is its compact JSON (`IN_TEXT`); or None, and the line is left to orjson and the
    field-by-field checks (`MemoryNamespace._store`), which name what is wrong.

    Decoded only where both ways give the same record, problem or not. msgspec reads JSON as
    strictly as orjson (UTF-8, escapes, number syntax, `1e400`) but for integers: it keeps one past
    64 bits exact where orjson reads a float, and one past 1.8e308 (309 digits) where orjson, as
    serde_json, refuses the line. So a line is decoded only when it starts as Harn writes a store
    (the tag there, and store), has no member the record does not know (nothing is skipped
    unchecked), every field of its type, no flags (rare; shown and merged as dicts), and fewer than
    309 digits in all (no such integer anywhere, not even in a member a later duplicate replaces);
    and kept only when its value and provenance hold no integer past 64 bits (orjson.dumps, which
    the fold needs anyway, refuses one) and its value no float orjson spells with `e+` (which the
    fold leaves unfolded: such a rare line is left to the field checks, which keep it so too)."""
    if not line.startswith(_STORE_HEAD) or len(line) - len(line.translate(None, _DIGITS)) >= _REFUSED_DIGITS:
        return None
    try:
        record = _STORE_LINE.decode(line)
    except msgspec.DecodeError:  # (a ValidationError too)
        return None
    if record._flags is not EMPTY_FLAGS:
        return None
    value: Any = record._value
    kind = type(value)
    if kind is dict or kind is list:
        compact = _serde_like_json(value)
        if compact is None:  # (an integer past 64 bits, or a rare float: the field checks keep it as it is)
            return None
        if compact == record.text.encode():  # (the fold of `value_json`, done once here)
            record._value = IN_TEXT
    elif kind is int and value not in _INT_RANGE:
        return None
    elif kind is str and value == record.text:
        record._value = record.text  # a string value is its own text (§C.2): one copy, not two
    prov: Any = record._provenance
    kind = type(prov)
    if kind is dict or kind is list:
        packed = pack_json(prov)  # (as `_store` packs it)
        if prov and type(packed) is not bytes:  # (orjson cannot write it: an integer past 64 bits)
            return None
        record._provenance = packed
    elif kind is int and prov not in _INT_RANGE:
        return None
    return record
