"""Memory event logs (`<memory root>/<namespace>/events.jsonl`) and their projection.

Implements harn-formats §C.3 exactly, incrementally:
1. every id in any `forget` event is hidden for good, wherever the forget is;
2. stores whose id is not forgotten are active, in file order; an `update`
   overlays the *last* store with that id (flags merge, a value patch also
   refreshes text); duplicate ids are kept;
3. the last `open` event is the namespace config;
4. sequence = index of the event among the parsed events.
Applying new events to an existing projection gives the same result as a
cold read of the whole file.
"""

from __future__ import annotations

import operator
import os
import sys
from _thread import get_ident
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject, JsonValue
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.shared_ints import shared

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

EVENT_TYPES = ("store", "forget", "open", "update")

CODE_UNKNOWN_TYPE = "HL-MEM-001"
CODE_BAD_FIELD = "HL-MEM-002"
CODE_HIDDEN_BY_TOMBSTONE = "HL-MEM-003"
CODE_UPDATE_UNKNOWN = "HL-MEM-004"

# Shared defaults of an absent `tags` / `flags` (a literal default would build one per store); never
# modified: a record gets tuple(tags) and dict(flags).
_NO_TAGS: list[str] = []
_NO_FLAGS: JsonObject = {}


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
# The fields Harn writes in every store event (flags, provenance, status and scope are optional).
_STORE_FIELDS = operator.itemgetter("id", "key", "stored_at", "text", "tags")

DEFAULT_CONFIG = {"backend": "bm25", "embed_model_hint": "default", "bm25_weight": 0.5, "cosine_weight": 0.5}


# Restored namespaces that have built their records so far, per thread (thread id -> count; each
# thread writes its own entry). What a build makes (an id map and a seq -> record dict as big as the
# log) is new to the cyclic collector, which would walk it at each of its passes until it is old (a
# 262k-entry dict: ~20 ms a pass); a server whose project thread sees its count move during a task
# takes it out of the collector's view (lsp/project.py). Per thread: a task of another project
# running meanwhile is not mistaken for one that built.
_BUILDS: dict[int, int] = {}


def builds_here() -> int:
    """How many restored namespaces the calling thread has built so far."""
    return _BUILDS.get(get_ident(), 0)


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


_RECORD_FIELDS = ("id", "namespace", "key", "value", "text", "tags", "stored_at", "seq", "line_no", "provenance",
                  "status", "scope", "flags", "updated_at")
_FIELD_NAMES = frozenset(_RECORD_FIELDS)


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


class MemoryRecord:
    """One active (or hidden) store, as projected. Treated as immutable: an update makes a new
    record (`with_changes`). A plain slots class, not a frozen dataclass: a cold load builds one
    per store, and the frozen `__init__` (one `object.__setattr__` per field) cost ~4 us each."""

    __slots__ = tuple(f"_{name}" if name in ("value", "provenance") else name for name in _RECORD_FIELDS)
    id: str
    namespace: str
    key: str
    _value: Any  # the value, or IN_TEXT when `text` is its compact JSON (see `value`)
    text: str
    tags: tuple[str, ...]
    stored_at: str
    seq: int  # sequence of the store event (tie-break)
    line_no: int  # 1-based line of the store event
    _provenance: Any  # the provenance, or its compact JSON as bytes (see `provenance`, pack_json)
    status: str | None
    scope: str | None
    flags: JsonObject  # EMPTY_FLAGS (shared, read-only) when the store had none
    updated_at: str | None

    def __init__(self, id: str, namespace: str, key: str, value: Any, text: str, tags: tuple[str, ...],
                 stored_at: str, seq: int, line_no: int, provenance: Any = None, status: str | None = None,
                 scope: str | None = None, flags: JsonObject | None = None, updated_at: str | None = None) -> None:
        self.id = id
        self.namespace = namespace
        self.key = key
        self._value = value
        self.text = text
        self.tags = tags
        self.stored_at = stored_at
        self.seq = seq
        self.line_no = line_no
        self._provenance = provenance
        self.status = status
        self.scope = scope
        self.flags = EMPTY_FLAGS if flags is None else flags
        self.updated_at = updated_at

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

    def value_json(self) -> str:
        """`serde_compact(self.value)` (Harn's compact JSON of the value). When that is exactly the
        record's text and the value a dict or list, the record keeps the text only from then on
        (`IN_TEXT`): an equal value is parsed from it whenever read. Only values orjson writes as
        serde_json does are folded (no integer beyond 64 bits, no float spelled with `e+`), so
        parsing the text gives back an equal value."""
        value = self._value
        if value is IN_TEXT:
            return self.text
        if type(value) in _PLAIN_JSON:
            try:
                js = orjson.dumps(value).decode("utf-8")
            except (TypeError, ValueError):
                return serde_compact(value)
            if "e+" in js:  # (a float orjson spells otherwise than serde_json)
                return serde_compact(value)
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

    __hash__ = None  # type: ignore[assignment]  # value and flags are dicts: as unhashable as the dataclass was

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _RECORD_FIELDS)
        return f"MemoryRecord({inner})"

    def with_changes(self, **changes: Any) -> MemoryRecord:
        """A copy with some fields replaced (the record itself is never modified)."""
        unknown = changes.keys() - _FIELD_NAMES
        if unknown:
            raise TypeError(f"MemoryRecord has no field {sorted(unknown)[0]!r}")
        get = changes.get
        # (a value kept as the text stays so while neither changes: not parsed only to be copied)
        value = get("value", self.value if "text" in changes else self._value)
        return MemoryRecord(
            get("id", self.id), get("namespace", self.namespace), get("key", self.key), value,
            get("text", self.text), get("tags", self.tags), get("stored_at", self.stored_at), get("seq", self.seq),
            get("line_no", self.line_no), get("provenance", self._provenance), get("status", self.status),
            get("scope", self.scope), get("flags", self.flags), get("updated_at", self.updated_at))

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


@lean_dataclass(slots=True)
class MemoryDelta:
    """What one `apply` changed; an updated record appears in both lists."""

    added: list[MemoryRecord] = field(default_factory=list)
    removed: list[MemoryRecord] = field(default_factory=list)
    config_changed: bool = False
    # id() of the records in `added` (kept alive by the list, so ids are stable), and
    # of those netted out since the last `compact()`: a cold load of a big log applies
    # thousands of updates/forgets per batch, and a linear search per removal was quadratic.
    _added_ids: set[int] = field(default_factory=set, repr=False, compare=False)
    _netted: set[int] = field(default_factory=set, repr=False, compare=False)

    def add(self, record: MemoryRecord) -> None:
        self.added.append(record)
        self._added_ids.add(id(record))

    def remove(self, record: MemoryRecord) -> None:
        # Net out records added earlier in this same delta, so consumers can apply
        # `removed` then `added` without resurrecting anything.
        key = id(record)
        if key in self._added_ids:
            self._added_ids.discard(key)
            self._netted.add(key)  # still listed in `added` until compact()
            return
        self.removed.append(record)

    def compact(self) -> None:
        """Drop netted-out records from `added` (apply_lines calls this before returning)."""
        if self._netted:
            netted = self._netted
            self.added[:] = [r for r in self.added if id(r) not in netted]
            self._netted = set()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.config_changed)


def _str(event: JsonObject, name: str) -> str | None:
    v = event.get(name)
    return v if isinstance(v, str) else None


def add_seq(by_id: dict[str, int | list[int]], rid: str, seq: int) -> None:
    """Note in a namespace's id map that `seq` holds a record of id `rid`: one int for an id's only
    record (the usual case, and the smallest), a list once the id has several."""
    seqs = by_id.get(rid)
    if seqs is None:
        by_id[rid] = seq
    elif type(seqs) is int:
        by_id[rid] = [seqs, seq]
    else:
        seqs.append(seq)  # type: ignore[union-attr]  # (not an int: a list; mypy narrows `type(x) is int` one way only)


class MemoryNamespace:
    """Projection of one namespace's event log, fed line batches in file order."""

    # Set by `restored` only (a namespace restored from the state cache, until `__getattr__` builds
    # its records): the summary's sizes, and what builds the record-level state.
    _sizes: tuple[int, int, int]
    _loader: Callable[[MemoryNamespace], None]

    def __init__(self, namespace: str, path: str) -> None:
        self.namespace = namespace
        self.path = path
        self.seq = 0
        self.forgotten: set[str] = set()
        self.active: dict[int, MemoryRecord] = {}  # seq -> record, file order (dict keeps insertion order)
        # id -> seq of its active store, or a list of seqs (file order) when several stores share the id:
        # one int, not a one-element list per record (~9 MB at 100k)
        self._by_id: dict[str, int | list[int]] = {}
        self.config: JsonObject = dict(DEFAULT_CONFIG)
        self.open_event: JsonObject | None = None
        self.problems: list[Problem] = []
        self.hidden: list[MemoryRecord] = []  # stores hidden by a tombstone written before them
        self.forgets: list[JsonObject] = []  # forget events (for display)
        self.event_count = 0
        self.last_event_at: str | None = None

    # -- lazy state (restored from the state cache) ----------------------------
    # A namespace restored from the cache starts with its summary only; the
    # record-level state below is built on first access by `_loader`.
    _LAZY = frozenset({"active", "_by_id", "forgotten", "hidden", "forgets"})

    @classmethod
    def restored(cls, namespace: str, path: str, summary: JsonObject, problems: list[Problem],
                 loader: Callable[[MemoryNamespace], None]) -> MemoryNamespace:
        """A namespace whose records are built by `loader(ns)` when first needed (it sets
        active, _by_id, forgotten, hidden and forgets); `summary` holds the rest."""
        self = cls.__new__(cls)
        self.namespace = namespace
        self.path = path
        self.seq = summary["seq"]
        self.config = summary["config"]
        self.open_event = summary["open_event"]
        self.problems = problems
        self.event_count = summary["event_count"]
        self.last_event_at = summary["last_event_at"]
        self._sizes = tuple(summary["sizes"])
        self._loader = loader
        return self

    def __getattr__(self, name: str) -> object:
        if name in MemoryNamespace._LAZY:
            loader = self.__dict__.pop("_loader", None)
            if loader is not None:
                loader(self)
                ident = get_ident()
                _BUILDS[ident] = _BUILDS.get(ident, 0) + 1
                return self.__dict__[name]
        raise AttributeError(name)

    @property
    def materialized(self) -> bool:
        return "_loader" not in self.__dict__

    def sizes(self) -> tuple[int, int, int]:
        """(active records, forgotten ids, stores hidden by a tombstone), without building records."""
        if not self.materialized:
            return self._sizes
        return len(self.active), len(self.forgotten), len(self.hidden)

    # -- queries -------------------------------------------------------------
    def records(self) -> list[MemoryRecord]:
        return list(self.active.values())

    def by_key(self, key: str) -> list[MemoryRecord]:
        return [r for r in self.active.values() if r.key == key]

    def get(self, record_id: str) -> MemoryRecord | None:
        seqs = self._by_id.get(record_id)
        if seqs is None:
            return None
        return self.active[seqs if type(seqs) is int else seqs[-1]]  # type: ignore[index]  # (not an int: a list)

    # -- mutation ------------------------------------------------------------
    def apply_lines(self, lines: Iterable[JsonlLine]) -> MemoryDelta:
        delta = MemoryDelta()
        store = self._store
        for line in lines:
            if line.problem is not None:
                self.problems.append(line.problem)
                continue
            event: JsonObject = line.value  # type: ignore[assignment]  # a line without a problem holds its object
            if event.get("type") == "store":  # most events: _apply_event's dispatch, inlined
                seq = self.seq
                self.seq = seq + 1
                self.event_count += 1
                store(event, seq, line.line_no, delta)
            else:
                self._apply_event(event, line.line_no, delta)
        delta.compact()
        return delta

    def _problem(self, line_no: int, code: str, message: str, severity: Severity = Severity.WARNING) -> None:
        self.problems.append(Problem(self.path, line_no, code, message, severity))

    def _apply_event(self, event: JsonObject, line_no: int, delta: MemoryDelta) -> None:
        kind = event.get("type")
        if kind not in EVENT_TYPES:
            self._problem(line_no, CODE_UNKNOWN_TYPE,
                f"unknown event type {kind!r}; Harn rejects the whole namespace until this line is removed", Severity.ERROR)
            return
        seq = self.seq
        self.seq += 1
        self.event_count += 1
        if kind == "store":
            self._store(event, seq, line_no, delta)
        elif kind == "forget":
            self._forget(event, line_no, delta)
        elif kind == "update":
            self._update(event, line_no, delta)
        else:
            self._open(event, line_no, delta)

    def _store(self, event: JsonObject, seq: int, line_no: int, delta: MemoryDelta) -> None:
        get = event.get
        try:  # the fields Harn writes in every store, in one call
            rid, key, stored_at, text, tags = _STORE_FIELDS(event)
        except KeyError:
            rid, key, stored_at = get("id"), get("key"), get("stored_at")
            text = get("text", "")
            tags = get("tags", _NO_TAGS)
        flags = get("flags", _NO_FLAGS)
        # Every well-formed store passes these exact-type checks (orjson gives plain str/list/dict;
        # joining the tags raises on any that is not a string); anything else takes the
        # field-by-field path that names what is wrong.
        well_formed = (type(rid) is str and type(key) is str and type(stored_at) is str and type(text) is str
                       and type(tags) is list and type(flags) is dict and "value" in event)
        if well_formed and tags:
            try:
                "".join(tags)
            except TypeError:
                well_formed = False
        if not well_formed:
            rid, key, stored_at = _str(event, "id"), _str(event, "key"), _str(event, "stored_at")
            bad = [n for n, ok in (("id", rid is not None), ("key", key is not None), ("stored_at", stored_at is not None),
                                   ("value", "value" in event), ("text", isinstance(text, str)),
                                   ("tags", isinstance(tags, list) and all(isinstance(t, str) for t in tags)),
                                   ("flags", isinstance(flags, dict))) if not ok]
            if bad:
                self._problem(line_no, CODE_BAD_FIELD,
                    f"store event has missing or wrong-typed field(s): {', '.join(bad)}; "
                    "Harn rejects the whole namespace until fixed",
                    Severity.ERROR)
                return
        self.last_event_at = stored_at
        value = event["value"]
        seq, line_no = shared(seq), shared(line_no)  # (one object per number across records and namespaces)
        if text == value:
            text = value  # a string value is its own text (§C.2): keep one copy, not two
        status, scope = get("status"), get("scope")
        record = MemoryRecord(
            rid, self.namespace, key, value, text, shared_tags(tags), stored_at, seq, line_no, pack_json(get("provenance")),
            status if isinstance(status, str) else None, scope if isinstance(scope, str) else None,
            dict(flags) if flags else EMPTY_FLAGS,
        )
        if rid in self.forgotten:
            self.hidden.append(record)
            self._problem(line_no, CODE_HIDDEN_BY_TOMBSTONE,
                f"record {rid} is stored after an earlier forget of the same id; "
                "Harn hides it forever (tombstones are permanent per id)",
                Severity.WARNING)
            return
        self.active[seq] = record
        add_seq(self._by_id, rid, seq)
        delta.added.append(record)  # delta.add(record), inlined: one per store of a cold load
        delta._added_ids.add(id(record))

    def _forget(self, event: JsonObject, line_no: int, delta: MemoryDelta) -> None:
        ids = event.get("forgotten_ids", [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            self._problem(line_no, CODE_BAD_FIELD,
                "forget event has a wrong-typed forgotten_ids; Harn rejects the whole namespace until fixed", Severity.ERROR)
            return
        self.forgets.append({**event, "_line": line_no})
        self.last_event_at = _str(event, "forgotten_at") or self.last_event_at
        for rid in ids:
            if rid in self.forgotten:
                continue
            self.forgotten.add(rid)
            self._drop_id(rid, delta)

    def _drop_id(self, rid: str, delta: MemoryDelta) -> None:
        """Remove every active record of a newly forgotten id (cache/tail's lazy namespace also
        removes the cached records it has not built)."""
        seqs = self._by_id.pop(rid, ())
        for seq in (seqs,) if type(seqs) is int else seqs:  # type: ignore[union-attr]  # (not an int: a list, or none)
            delta.remove(self.active.pop(seq))

    def _update(self, event: JsonObject, line_no: int, delta: MemoryDelta) -> None:
        rid = _str(event, "id")
        if rid is None:
            self._problem(line_no, CODE_BAD_FIELD,
                "update event without a string id; Harn rejects the whole namespace until fixed", Severity.ERROR)
            return
        if rid in self.forgotten:
            return
        old = self.get(rid)
        if old is None:
            self._problem(line_no, CODE_UPDATE_UNKNOWN, f"update for unknown record {rid}; Harn ignores it", Severity.INFO)
            return
        changes: dict[str, Any] = {}
        if "value" in event:
            changes["value"] = event["value"]
            changes["text"] = value_text(event["value"])
        if isinstance(event.get("text"), str):
            changes["text"] = event["text"]
        if isinstance(event.get("tags"), list):
            changes["tags"] = shared_tags(t for t in event["tags"] if isinstance(t, str))
        for name in ("status", "scope"):
            if isinstance(event.get(name), str):
                changes[name] = event[name]
        if "provenance" in event:
            changes["provenance"] = pack_json(event["provenance"])
        if isinstance(event.get("flags"), dict):
            changes["flags"] = {**old.flags, **event["flags"]}
        changes["updated_at"] = _str(event, "updated_at")
        new = old.with_changes(**changes)
        self._replace(old, new)
        self.last_event_at = changes["updated_at"] or self.last_event_at
        delta.remove(old)
        delta.add(new)

    def _replace(self, old: MemoryRecord, new: MemoryRecord) -> None:
        """Put an updated record where the record it updates was (cache/tail's lazy namespace
        keeps the updates of cached records it has not built aside)."""
        self.active[old.seq] = new

    def _open(self, event: JsonObject, line_no: int, delta: MemoryDelta) -> None:
        backend = event.get("backend")
        if backend not in ("bm25", "vector", "hybrid"):
            self._problem(line_no, CODE_BAD_FIELD, f"open event with unknown backend {backend!r}; Harn rejects it",
                          Severity.ERROR)
            return
        config = dict(DEFAULT_CONFIG)
        for name in ("backend", "embed_model_hint", "embed_dim", "bm25_weight", "cosine_weight", "opened_at"):
            if name in event and event[name] is not None:
                config[name] = event[name]
        self.config = config
        self.open_event = event
        delta.config_changed = True


def namespace_of(memory_root: str, events_path: str) -> str:
    rel = os.path.relpath(os.path.dirname(events_path), memory_root)
    return "/".join(p for p in rel.split(os.sep) if p not in ("", "."))
