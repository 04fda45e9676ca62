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

import os
from _thread import get_ident
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any

from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory_record import EMPTY_FLAGS, MemoryRecord, memory_record, pack_json, shared_tags, value_text
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.json_types import JsonObject
from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.shared_ints import shared

EVENT_TYPES = ("store", "forget", "open", "update")

CODE_UNKNOWN_TYPE = "HL-MEM-001"
CODE_BAD_FIELD = "HL-MEM-002"
CODE_HIDDEN_BY_TOMBSTONE = "HL-MEM-003"
CODE_UPDATE_UNKNOWN = "HL-MEM-004"

# Shared defaults of an absent `tags` / `flags` (a literal default would build one per store); never
# modified: a record gets tuple(tags) and dict(flags).
_NO_TAGS: list[str] = []
_NO_FLAGS: JsonObject = {}


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
        for line in lines:
            if line.problem is not None:
                self.problems.append(line.problem)
                continue
            decoded = line.decoded
            if decoded is not None:  # a store line decoded into its record (decode_store_line): most events
                seq = self.seq
                self.seq = seq + 1
                self.event_count += 1
                self._store_decoded(decoded, seq, line.line_no, delta)  # type: ignore[arg-type]  # (what it decodes)
            else:  # (a line without a problem holds its object)
                self._apply_event(line.value, line.line_no, delta)  # type: ignore[arg-type]
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
        """A store line the decoder left (`decode_store_line`), checked field by field."""
        get = event.get
        rid, key, stored_at = _str(event, "id"), _str(event, "key"), _str(event, "stored_at")
        text, tags, flags = get("text", ""), get("tags", _NO_TAGS), get("flags", _NO_FLAGS)
        bad = [n for n, ok in (("id", rid is not None), ("key", key is not None), ("stored_at", stored_at is not None),
                               ("value", "value" in event), ("text", isinstance(text, str)),
                               ("tags", isinstance(tags, list) and all(isinstance(t, str) for t in tags)),
                               ("flags", isinstance(flags, dict))) if not ok]
        if bad or rid is None or key is None or stored_at is None:  # (`bad` names any of the three that is)
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
        record = memory_record(
            rid, self.namespace, key, value, text, shared_tags(tags), stored_at, seq, line_no, pack_json(get("provenance")),
            status if isinstance(status, str) else None, scope if isinstance(scope, str) else None,
            dict(flags) if flags else EMPTY_FLAGS,
        )
        self._keep(record, delta)

    def _store_decoded(self, record: MemoryRecord, seq: int, line_no: int, delta: MemoryDelta) -> None:
        """A store line's record as decoded (every field checked in C, value and provenance in the
        forms `_store` gives them), placed as `_store` places the record it builds."""
        record.namespace = self.namespace
        record.seq, record.line_no = shared(seq), shared(line_no)
        record.updated_at = None  # (a store event's own updated_at is not the record's)
        record.tags = shared_tags(record.tags)
        self.last_event_at = record.stored_at
        self._keep(record, delta)

    def _keep(self, record: MemoryRecord, delta: MemoryDelta) -> None:
        rid, line_no, seq = record.id, record.line_no, record.seq
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
