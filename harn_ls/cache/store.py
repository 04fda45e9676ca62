"""The state cache: what is expensive to rebuild, kept outside the project between runs.

Lives in `<cache root>/<project key>/state/` (harn_ls/cache/dirs.py; never inside
the project). Per memory namespace it keeps the projection (active records,
tombstones, stores hidden by a tombstone, forget events, problems, config), the
fact records, and the recall index arrays, together with what validates them
against the source log:

    st_dev, st_ino, size, mtime_ns, the byte offset read so far, the line count,
    the first 64 bytes and a sha256 of the (up to) 4 KiB before the offset.

A log with the same device/inode whose size equals the cached size and whose
mtime is unchanged is taken as it was; one that grew (same inode, the 4 KiB
before the old offset and the head unchanged) is an append: the cached state
plus the new bytes from the offset gives the current state. Anything else
(shrunk, same size with a new mtime, another inode, head or tail bytes
changed) is read from scratch.

Files: payload files have unique names and are never rewritten; `manifest.json`
is written last (temp + os.replace) and names each payload file with its size
and CRC-32, plus a format version and the project's real path. A payload whose
size or checksum differs, a manifest of another version or project, or one that
does not parse, is ignored (and rebuilt on the next save) — never trusted.
Payloads are data only: orjson documents and `.npy` arrays loaded with
`allow_pickle=False`. The whole cache root is capped (`HARN_LS_CACHE_MAX_MB`,
default 2048): the state folders of the least recently used other projects are
dropped first.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import time
import zlib
from collections.abc import Callable, Mapping
from hashlib import sha256
from typing import IO, TYPE_CHECKING, Any, TypeVar

import orjson

from harn_ls.cache.dirs import MANIFEST, STATE_DIR, _tree_bytes, cache_enabled, evict_projects, project_cache_dir
from harn_ls.cache.index_payloads import index_payloads
from harn_ls.cache.log_stamps import compare_log, stamp_log
from harn_ls.cache.parts import (
    CheckpointRows,
    FileRows,
    _fact_row,
    _facts_from_rows,
    _problem_from_row,
    _problem_row,
    _run_from_row,
    _run_row,
    save_pattern,
)
from harn_ls.cache.rows import (
    CacheInvalid,
    RowReader,
    _checked,
    _pread_all,
    _replay,
    fact_inspect_chunks,
    facts_from_log,
    joined,
    json_array_chunks,
    json_object_chunks,
    new_row_index,
    read_fact_inspect_body,
    read_fact_inspect_payload,
    record_from_row,
    record_row,
    row_chunks,
)
from harn_ls.cache.tail import (
    TailOverlay,
    apply_tail_lines,
    id_index_payload,
    index_base,
    keeps_entry,
    merge_tail,
    read_tombstones,
    stores_only,
)
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import MemoryRecord
from harn_ls.formats.pattern_learning import NAMESPACE as PATTERN_NS  # (its projection is cached per entry)
from harn_ls.formats.problems import Problem
from harn_ls.util.safe_read import file_stamp, stat_stamp

if TYPE_CHECKING:
    from harn_ls.formats.jsonl import JsonlTail

_T = TypeVar("_T")

FORMAT = "harn-ls-state/8"
STALE_TEMP_SECONDS = 300  # unreferenced payload files younger than this may belong to a concurrent writer

_INDEX_ARRAYS = ("dl", "df", "off", "pslot", "pcode", "seqs")
_INDEX_DTYPES = {"dl": "i4", "df": "i8", "off": "i8", "pslot": ("u2", "i4"), "pcode": ("u2", "u4", "i8"), "seqs": "i8"}


PAYLOADS = {"meta": ".meta.json", "facts": ".facts.json", "records": ".records.json", "rows": ".rows.jsonl",
            "rowidx": ".rowidx.bin", "ifacts": ".ifacts.txt", "tombs": ".tombs.json",
            "ids": ".ids.bin"}


def namespace_payloads(space: MemoryNamespace, fact_entries: list, cached_rows: dict | None = None) -> dict[str, bytes]:
    """The payloads (PAYLOADS) of one materialized namespace, all at once (see iter_namespace_payloads)."""
    return {part: joined(data) for part, data in iter_namespace_payloads(space, fact_entries, cached_rows)}


def iter_namespace_payloads(space: MemoryNamespace, fact_entries: list, cached_rows: dict | None = None):
    """(part, bytes-like) for each payload (PAYLOADS) of one materialized namespace, built one at a
    time so a save writes each and drops it before building the next (the peak RSS of a cold start
    is this save: holding every payload at once, plus a bytes copy of the rows, cost ~50 MB at 100k).
    The facts are a payload of their own (a one-shot recall does not decode them); the active
    records are rows (one orjson array a line) so one can be decoded alone; the row index holds, per
    row, (seq, end offset, CRC-32 of the row) as native int64 triples. `ifacts` holds the facts as
    `inspect --json` prints them (cache/rows.fact_inspect_payload); the meta counts the facts and
    lists their problems, so a one-shot inspect decodes neither. `cached_rows` (seq -> (record, row
    bytes) as restored): a record still the very object restored from a row keeps that row's bytes
    instead of being encoded again. The rows come as the bytearray they were built in (no copy)."""
    active, forgotten, hidden = len(space.active), len(space.forgotten), len(space.hidden)
    dumps = orjson.dumps
    opt = orjson.OPT_NON_STR_KEYS
    meta = {
        "seq": space.seq, "event_count": space.event_count, "last_event_at": space.last_event_at,
        "config": space.config, "open_event": space.open_event, "sizes": [active, forgotten, hidden],
        "problems": [_problem_row(p) for p in space.problems],
        "fact_count": sum(1 for _seq, f, _probs in fact_entries if f is not None),
        "fact_problems": [[seq, [_problem_row(p) for p in probs]] for seq, _f, probs in fact_entries if probs],
    }
    yield "meta", dumps(meta, option=opt)
    yield "facts", json_array_chunks(([seq, None if f is None else _fact_row(f), [_problem_row(p) for p in probs]]
                                      for seq, f, probs in fact_entries), opt)
    forgotten_ids = sorted(space.forgotten)
    records = {"forgotten": forgotten_ids, "hidden": [record_row(r) for r in space.hidden], "forgets": space.forgets}
    yield "records", dumps(records, option=opt)
    del records
    yield "tombs", dumps(forgotten_ids)  # the forgotten ids alone: what appended stores read (cache/tail.py)
    index = new_row_index(space)
    yield "rows", row_chunks(space, cached_rows, index)
    rowidx = memoryview(index).cast("B")  # (complete once the rows' chunks have all been taken; not copied)
    yield "rowidx", rowidx
    yield "ids", id_index_payload(space.active.values(), zlib.crc32(rowidx))  # each row's id (cache/tail.py)
    rowidx.release()
    del rowidx, index
    yield "ifacts", fact_inspect_chunks([f for _seq, f, _probs in fact_entries if f is not None])


def fill_namespace(space: MemoryNamespace, data: bytes, rows: Mapping[int, MemoryRecord]) -> None:
    """Set the record-level state of a restored namespace from its records document and its
    decoded rows (`RowReader.decoded`: the same record objects the restored index holds)."""
    doc = orjson.loads(data)
    ns = space.namespace
    active: dict[int, MemoryRecord] = {}
    by_id: dict[str, int | list[int]] = {}  # (as MemoryNamespace._by_id: an int, a list when several)
    for r in rows.values():
        active[r.seq] = r
        seqs = by_id.get(r.id)
        if seqs is None:
            by_id[r.id] = r.seq
        elif isinstance(seqs, int):
            by_id[r.id] = [seqs, r.seq]
        else:
            seqs.append(r.seq)
    d = space.__dict__
    d["active"] = active
    d["_by_id"] = by_id
    d["forgotten"] = set(doc["forgotten"])
    d["hidden"] = [record_from_row(row, ns) for row in doc["hidden"]]
    d["forgets"] = doc["forgets"]


# ----------------------------------------------------------------------------- the cache
class ProjectCache:
    """One project's state cache folder. Reading never raises: a bad cache is a miss."""

    def __init__(self, project_root: str, env: Mapping[str, str] | None = None) -> None:
        self.project_root = os.path.realpath(project_root)
        self.root = os.path.abspath(project_root)  # fact ranges are relative to the root as given
        self.env = env
        self.folder = os.path.join(project_cache_dir(project_root, env), STATE_DIR)
        self.manifest: dict = self._read_manifest()
        self.hits: dict[str, str] = {}  # namespace -> "same" / "appended" (restored this run)
        self.run_rows = FileRows("runs")  # path -> [validator, values, details] (parts._run_row)
        self.keep_runs = False  # the run records were not scanned this time: keep their entry as it is
        self.checkpoint_rows = CheckpointRows("checkpoints")  # (like the runs: kept as they are when keep_runs)
        self.readers: dict[str, RowReader] = {}  # namespace -> single records of its restored rows
        # namespace -> (fact count, [(seq, [Problem])], ifacts payload description) as restored
        self.fact_summaries: dict[str, tuple[int, list, Any]] = {}
        self.damaged: set[str] = set()  # namespaces whose entry turned out unusable after restore: rewritten
        # a one-shot run (Workspace.load memory_only / defer_facts) keeps the rows it decodes, so that a
        # namespace changed by an append is saved without encoding its unchanged records again
        self.keep_row_bytes = False
        # a one-shot run that may never decode the cached facts (Workspace.load memory_only / defer_facts)
        # checks their payload only when it decodes it (reading and checking it took ~6 ms at 10k facts)
        self.lazy_facts = False
        self._row_bytes: dict[str, tuple[MemoryNamespace, list, bytes]] = {}  # ns -> (space, records, rows)
        # stores appended to restored namespaces, not decoded (cache/tail.py), and where their tombstones are
        self.overlays: dict[str, TailOverlay] = {}
        self._tombstones: dict[str, tuple] = {}  # ns -> (tombs description, open records payload, its description)
        self._id_index: dict[str, Any] = {}  # ns -> the description of its cached id index (None: an older entry)
        # ns -> the payload files its restored namespace holds open until it decodes them. Closed here when
        # the namespace is dropped or restored again: a restored namespace and its reader refer to each
        # other, so only the cyclic collector would free them, and a server freezes it (gc.freeze): every
        # rescan would leave one namespace's files open for good.
        self._open_payloads: dict[str, list[IO[bytes]]] = {}

    @classmethod
    def open(cls, project_root: str, env: Mapping[str, str] | None = None) -> ProjectCache | None:
        if not cache_enabled(env):
            return None
        try:
            return cls(project_root, env)
        except (OSError, ValueError):
            return None

    def _read_manifest(self) -> dict:
        try:
            with open(os.path.join(self.folder, MANIFEST), "rb") as fh:
                doc = orjson.loads(fh.read())
        except (OSError, orjson.JSONDecodeError):
            return {}
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("project") != self.project_root \
                or doc.get("root") != self.root \
                or not isinstance(doc.get("namespaces"), dict):
            return {}
        return doc

    # -- reading ---------------------------------------------------------------
    def entry(self, ns: str, path: str) -> dict | None:
        e = self.manifest.get("namespaces", {}).get(ns)
        if not isinstance(e, dict) or e.get("path") != path or not isinstance(e.get("validator"), dict):
            return None
        return e

    def _payload_path(self, desc: Any) -> str:
        """The file a payload description names: a plain name in the state folder, else CacheInvalid."""
        if not isinstance(desc, dict) or not isinstance(desc.get("name"), str) or os.sep in desc["name"] \
                or desc["name"].startswith("."):
            raise CacheInvalid("bad payload description")
        return os.path.join(self.folder, desc["name"])

    def read_payload(self, desc: Any) -> bytes:
        """A payload file's bytes, checked against its manifest description."""
        path = self._payload_path(desc)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise CacheInvalid(str(exc)) from None
        if len(data) != desc.get("size") or zlib.crc32(data) != desc.get("crc"):
            raise CacheInvalid(f"{desc['name']}: size or checksum differs")
        return data

    def open_payload(self, desc: Any):
        """An open payload file (checked later, when read); still readable if the folder is removed."""
        path = self._payload_path(desc)
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise CacheInvalid(str(exc)) from None
        if os.fstat(fh.fileno()).st_size != desc.get("size"):
            fh.close()
            raise CacheInvalid(f"{desc['name']}: size differs")
        return fh

    def restore_namespace(self, ns: str, path: str, tail: JsonlTail) -> tuple[MemoryNamespace, Any] | None:
        """The cached namespace (records built lazily) and a function giving its facts
        [(seq, Fact or None, problems)], with `tail` set to continue after the cached offset; None
        when there is no valid entry."""
        self.release(ns)  # (an earlier restore of `ns`: its namespace is being replaced)
        e = self.entry(ns, path)
        if e is None:
            return None
        v = e["validator"]
        state = compare_log(path, v)
        if state == "changed":
            return None
        try:
            meta = orjson.loads(self.read_payload(e.get("meta")))
            problems = [_problem_from_row(r) for r in meta["problems"]]
            fact_count = meta["fact_count"]
            if not isinstance(fact_count, int):
                raise CacheInvalid("bad fact count")
            fact_problems = [(seq, [_problem_from_row(p) for p in probs]) for seq, probs in meta["fact_problems"]]
            # checked now, decoded when asked for; with lazy_facts only its size now (an open file)
            facts_src = self.open_payload(e.get("facts")) if self.lazy_facts else self.read_payload(e.get("facts"))
            summary = {k: meta[k] for k in ("seq", "event_count", "last_event_at", "config", "open_event", "sizes")}
            # open now: the folder may vanish before they are read
            records, rows, rowidx = (self.open_payload(e.get(part)) for part in ("records", "rows", "rowidx"))
        except (CacheInvalid, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None

        def load(space: MemoryNamespace) -> None:
            try:
                with records as fh:
                    data = _checked(fh.read(), e["records"])
                decoded = reader.decoded()  # (row order: the same record objects the index holds)
                fill_namespace(space, data, decoded)
                if self.keep_row_bytes:
                    rows_data = _checked(_pread_all(rows), e["rows"])
                    self._row_bytes[ns] = (space, list(decoded.values()), rows_data)
            except (OSError, CacheInvalid, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                _replay(space, v["offset"])  # the log's bytes up to the offset were checked unchanged
            merge_tail(self.overlays.get(ns), space)  # stores appended since the restore, if any

        space = MemoryNamespace.restored(ns, path, summary, problems, load)
        self._open_payloads[ns] = [records, rows, rowidx] + ([] if type(facts_src) is bytes else [facts_src])
        self._tombstones[ns] = (e.get("tombs"), records, e["records"])
        self._id_index[ns] = e.get("ids")
        self.overlays.pop(ns, None)
        reader = self.readers[ns] = RowReader(space, v["offset"], rows, e["rows"], rowidx, e["rowidx"])
        tail.offset = v["offset"]
        tail.line_no = v["line_no"]
        tail._ino = v["ino"]
        tail._head = bytes.fromhex(v["head"])
        tail.torn_bytes = v["torn"]
        self.hits[ns] = state
        self.fact_summaries[ns] = (fact_count, fact_problems, e.get("ifacts"))
        return space, lambda: self._restored_facts(ns, path, v["offset"], e["facts"], facts_src)

    def release(self, ns: str) -> None:
        """Close the payload files of the namespace restored as `ns`, now dropped or replaced (a
        rescan, a reset or vanished log); what still held it reads nothing from the cache again."""
        for fh in self._open_payloads.pop(ns, ()):
            fh.close()
        self.readers.pop(ns, None)
        self._tombstones.pop(ns, None)
        self.overlays.pop(ns, None)  # (it holds the dropped namespace and its reader)
        self._row_bytes.pop(ns, None)

    def release_all(self) -> None:
        """`release` every restored namespace (a rescan starts over; a closed project)."""
        for ns in list(self._open_payloads):
            self.release(ns)

    def _restored_facts(self, ns: str, path: str, offset: int, desc: dict, src) -> list:
        """The facts of a restored namespace from its payload (bytes checked at restore, or an open
        file checked now); one that turns out not intact or not decodable is never used: the facts
        are read again from the log up to the cached offset, and the entry is rewritten on save."""
        try:
            if type(src) is not bytes:
                with src:
                    src = _checked(_pread_all(src), desc)
            return _facts_from_rows(orjson.loads(src), ns)
        except (OSError, CacheInvalid, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self.damaged.add(ns)
            return facts_from_log(ns, path, offset, self.root)

    def apply_tail(self, ns: str, space: MemoryNamespace, lines: list) -> Any:
        """The MemoryDelta of a batch read past the offset of a restored namespace whose records
        were not built, applied without building them (cache/tail.py); None when the namespace
        must apply it itself (records built, tombstones or the id index unreadable)."""
        overlay = self.overlays.get(ns)
        if overlay is not None and overlay.space is not space:
            overlay = None
        if overlay is not None and not stores_only(lines):
            overlay.needs_ids = True  # (the next load applies it lazily only with an id index)
        if space.materialized:
            return None
        if overlay is None:
            forgotten = read_tombstones(self, *self._tombstones[ns]) if ns in self._tombstones else None
            reader = self.readers.get(ns)
            if forgotten is None or reader is None:
                return None
            desc = self._id_index.get(ns)
            overlay = self.overlays[ns] = TailOverlay(space, forgotten, reader,
                                                      None if desc is None else lambda: self.read_payload(desc))
            overlay.needs_ids = not stores_only(lines)
        delta = apply_tail_lines(overlay, lines)
        if delta is None:  # the id index is missing or does not check out: the entry is written again
            overlay.lazy = False
            if self._id_index.get(ns) is not None:
                self.damaged.add(ns)
        return delta

    def index_base(self, ns: str, space: MemoryNamespace) -> dict[int, MemoryRecord]:
        """seq -> record of what a restored namespace's cached recall index was built over."""
        overlay = self.overlays.get(ns)
        if overlay is None or overlay.space is not space:
            return dict(space.active)
        return index_base(overlay, space.active)

    def fact_problems(self, ns: str) -> list[tuple[int, list[Problem]]]:
        """[(seq, problems)] of the facts of a restored namespace, in entry order (from its meta)."""
        return self.fact_summaries[ns][1]

    def inspect_facts(self, ns: str) -> tuple[list[str], list[int], bytes] | None:
        """(ids, ends, body) of a restored namespace's facts as `inspect --json` prints them
        (cache/rows.fact_inspect_payload); None when missing or not intact."""
        return self._inspect_payload(ns, read_fact_inspect_payload)

    def inspect_fact_body(self, ns: str) -> memoryview | None:
        """The body of a restored namespace's printed facts (`read_fact_inspect_body`: when it is
        printed whole); None when missing or not intact."""
        return self._inspect_payload(ns, read_fact_inspect_body)

    def _inspect_payload(self, ns: str, read: Callable[[bytes, int], _T]) -> _T | None:
        """`read(the ifacts payload, fact count)` of a restored namespace; None when it has none, or
        when it is not intact (the entry is then rewritten)."""
        summary = self.fact_summaries.get(ns)
        if summary is None:
            return None
        try:
            return read(self.read_payload(summary[2]), summary[0])
        except CacheInvalid:
            self.damaged.add(ns)
            return None

    # -- run records: the slim record lists and documents need, by (dev, ino, size, mtime, ctime) --
    def restore_run(self, path: str):
        """(slim RunRecord, transcript summaries) of an unchanged run record, else None."""
        entry = self.run_rows.load(self).get(path)
        v = file_stamp(path)
        if not isinstance(entry, list) or len(entry) != 3 or v is None or entry[0] != v:
            self.run_rows.changed = True
            return None
        try:
            run, summaries = _run_from_row(entry[1], entry[2])
        except (KeyError, TypeError, ValueError, IndexError):
            self.run_rows.changed = True
            return None
        self.run_rows.seen[path] = entry
        return run, summaries

    def restore_regular_runs(self, paths: list[str], details: bool = True) -> dict[str, tuple]:
        """path -> (slim RunRecord, transcript summaries) of the listed run records that are, by one
        lstat each, still the very regular files cached (not a symlink: a cached entry holds the
        stat of a regular file, and a link's own lstat never matches it); the others are not
        answered here (read them with `restore_run` / from the file). Without `details` the records'
        stages and usage stay empty (a one-shot `inspect --json` never shows them)."""
        runs = self.run_rows.load(self)
        out: dict[str, tuple] = {}
        if not runs:
            return out
        lstat, is_reg = os.lstat, stat.S_ISREG
        for path in paths:
            entry = runs.get(path)
            if not isinstance(entry, list) or len(entry) != 3 or type(entry[2]) is not str:
                continue
            try:
                st = lstat(path)
            except OSError:
                continue
            if not is_reg(st.st_mode) or entry[0] != stat_stamp(st):
                continue
            try:
                out[path] = _run_from_row(entry[1], entry[2] if details else None)
            except (KeyError, TypeError, ValueError, IndexError):
                continue
            self.run_rows.seen[path] = entry
        return out

    def remember_run(self, path: str, run, before: os.stat_result | None) -> None:
        """Keep a run record read from `path`, whose lstat `before` was taken before the read (FileRows.keep_read)."""
        if not run.retry:
            self.run_rows.keep_read(path, before, lambda: _run_row(run))
        self.run_rows.changed = True

    def index_entry(self, ns: str) -> dict | None:
        e = self.manifest.get("namespaces", {}).get(ns)
        idx = e.get("index") if isinstance(e, dict) else None
        return idx if isinstance(idx, dict) else None

    def load_index_arrays(self, desc: dict) -> tuple[dict, list[str], int]:
        """(arrays, terms, total_tokens) of a cached recall index; the postings memory-mapped."""
        # start-up: numpy (~0.15 s) loads only for a cached recall index; inspect and show never need it
        import numpy as np

        arrays = {}
        for name in _INDEX_ARRAYS:
            d: Any = desc.get(name)  # (untrusted: read_payload checks it)
            data = self.read_payload(d)  # checksum over the file; the big arrays are then mapped, not copied
            try:
                if name in ("pslot", "pcode", "off"):
                    arr = np.load(self._payload_path(d), mmap_mode="r", allow_pickle=False)
                else:
                    arr = np.load(io.BytesIO(data), allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise CacheInvalid(str(exc)) from None
            want = _INDEX_DTYPES[name]
            if arr.ndim != 1 or arr.dtype.str[1:] not in ((want,) if isinstance(want, str) else want):
                raise CacheInvalid(f"{name}: unexpected array {arr.dtype} {arr.shape}")
            arrays[name] = arr
        try:  # one term a line (a token never holds a newline), UTF-8
            data = self.read_payload(desc.get("terms"))
            terms = data.decode("utf-8").split("\n") if data else []
        except UnicodeDecodeError as exc:
            raise CacheInvalid(str(exc)) from None
        total = desc.get("total_tokens")
        if not isinstance(total, int) or "" in terms:
            raise CacheInvalid("bad terms")
        return arrays, terms, total

    # -- writing ---------------------------------------------------------------
    def _write_payload(self, stem: str, data, token: str) -> dict:
        """Write one payload (bytes-like, or an iterable of bytes-like chunks) atomically."""
        base, dot, ext = stem.partition(".")
        name = f"{base}-{token}{dot}{ext}"
        tmp = os.path.join(self.folder, f".{name}.tmp")
        chunks = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
        size = crc = 0
        try:
            with open(tmp, "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
                    size += len(chunk)
                    crc = zlib.crc32(chunk, crc)
                    del chunk  # (freed before the next chunk is built: its memory is the next one's)
        except BaseException:  # (a chunk that could not be built: no half-written payload is left behind)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.replace(tmp, os.path.join(self.folder, name))
        return {"name": name, "size": size, "crc": crc}

    def save(self, ws) -> bool:
        """Write what changed since the cache was read (never raises; False when nothing could be written)."""
        try:
            return self._save(ws)
        except (OSError, ValueError, TypeError):
            return False

    def _save(self, ws) -> bool:
        os.makedirs(self.folder, exist_ok=True)
        token = f"{os.getpid()}-{time.time_ns():x}"
        old = self.manifest.get("namespaces", {})
        out: dict[str, dict] = {}
        wrote = False
        for i, (ns, space) in enumerate(sorted(ws.memory.items())):
            path = ws.namespace_path(ns)
            tail = ws._tails.get(path) if path else None
            if tail is None:
                continue
            prev = old.get(ns) if self.hits.get(ns) == "same" else None
            unchanged = prev is not None and ns not in ws._cache_dirty and ns not in self.damaged
            if not unchanged and ns not in self.damaged and self.hits.get(ns) and ns != PATTERN_NS and keeps_entry(
                    self.overlays.get(ns), space, old.get(ns), tail.offset,
                    ws._recall is not None and ws._recall.has_index(ns)):
                prev, unchanged = old[ns], True  # only stores appended since, a few: applied again next time
            if unchanged and prev is not None:  # (unchanged: prev is the entry kept)
                entry = dict(prev)
            else:
                v = stamp_log(path, tail.offset, tail.line_no, tail.torn_bytes, tail._head)
                if v is None or v["ino"] != tail._ino:
                    continue
                stem = f"ns{i}-{sha256(ns.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
                entry = {"path": path, "validator": v, "index": None}
                _ = space.active  # (built first: the rows it is restored from are kept for _cached_rows)
                parts = iter_namespace_payloads(space, ws._fact_entries(ns), self._cached_rows(ns, space))
                for part, data in parts:
                    entry[part] = self._write_payload(stem + PAYLOADS[part], data, token)
                    del data  # (the payload goes before the next is built)
                wrote = True
                self.overlays.pop(ns, None)
            index = ws._recall.indexes.get(ns) if ws._recall is not None else None
            if index is not None and (not unchanged or not entry.get("index")):
                entry["index"] = self._save_index(index, f"ns{i}", token)
                wrote = True
            out[ns] = entry
        self._row_bytes.clear()  # (rows of unchanged namespaces: not needed any more)
        runs_desc = self.manifest.get("runs")
        if not self.keep_runs and not self.run_rows.unchanged(self):
            runs_desc = self._write_payload("runs.json", json_object_chunks(self.run_rows.seen), token)
            wrote = True
        pattern_desc, wrote_pattern = save_pattern(self, ws, out, token)
        ckpt_desc = self.manifest.get("checkpoints")
        ckpt_data = None if self.keep_runs else self.checkpoint_rows.payload(self)
        if ckpt_data is not None:
            ckpt_desc, wrote = self._write_payload("checkpoints.json", ckpt_data, token), True
        if not wrote and not wrote_pattern and set(out) == set(old):
            with contextlib.suppress(OSError):  # marked as recently used (eviction is by manifest mtime)
                os.utime(os.path.join(self.folder, MANIFEST))
            return True
        manifest = {"format": FORMAT, "project": self.project_root, "root": self.root, "written_at": time.time(),
                    "namespaces": out, "runs": runs_desc, "pattern": pattern_desc, "checkpoints": ckpt_desc}
        tmp = os.path.join(self.folder, f".{MANIFEST}.{token}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(orjson.dumps(manifest))
        os.replace(tmp, os.path.join(self.folder, MANIFEST))
        previous, self.manifest = self.manifest, manifest
        self._sweep(manifest, previous)
        evict_projects(self.env, keep=os.path.dirname(self.folder))
        return True

    def _cached_rows(self, ns: str, space: MemoryNamespace) -> dict | None:
        """seq -> (record, row bytes) of the rows this namespace object was restored from, if kept."""
        kept = self._row_bytes.pop(ns, None)
        if kept is None or kept[0] is not space:
            return None
        records, data = kept[1], kept[2]
        lines = data.split(b"\n")[:-1]  # (every row ends with a newline)
        if len(lines) != len(records):
            return None
        return {r.seq: (r, row) for r, row in zip(records, lines, strict=True)}

    def _save_index(self, index, stem: str, token: str) -> dict:
        desc: dict[str, Any] = {"total_tokens": int(index.total_tokens)}
        for name, ext, chunks in index_payloads(index):  # (each written before the next is built)
            desc[name] = self._write_payload(f"{stem}.{name}.{ext}", chunks, token)
        return desc

    def _sweep(self, manifest: dict, previous: dict) -> None:
        """Drop payload files the new manifest no longer names: at once those the previous manifest
        named (superseded by this save), others only when old (they may be a concurrent writer's)."""
        keep, superseded = _names(manifest), _names(previous)
        now = time.time()
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return
        for de in entries:
            if de.name in keep:
                continue
            with contextlib.suppress(OSError):
                if de.name in superseded or now - de.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                    os.unlink(de.path)

    # -- info / clear --------------------------------------------------------------
    def info(self) -> dict:
        namespaces = {}
        for ns, e in self.manifest.get("namespaces", {}).items():
            v = e.get("validator", {})
            namespaces[ns] = {"path": e.get("path"), "offset": v.get("offset"), "log": compare_log(e.get("path", ""), v),
                              "index": bool(e.get("index"))}
        return {"folder": self.folder, "exists": os.path.isdir(self.folder), "valid": bool(self.manifest),
                "bytes": _tree_bytes(self.folder), "namespaces": namespaces}

    def clear(self) -> bool:
        """Remove every file harn-ls keeps for this project (`cache clear`): the state cache, the
        checkpoint history, kept anchors, append records, snapshots — the whole project folder."""
        project_folder = os.path.dirname(self.folder)
        existed = os.path.isdir(project_folder)
        # start-up: shutil (with bz2 and lzma, ~8 ms) loads only when the cache is cleared
        import shutil

        shutil.rmtree(project_folder, ignore_errors=True)
        self.manifest = {}
        return existed


def _names(manifest: dict) -> set[str | None]:
    pattern = manifest.get("pattern")
    descs = [manifest.get("runs"), manifest.get("checkpoints"), pattern.get("payload") if isinstance(pattern, dict) else None]
    for e in (manifest.get("namespaces") or {}).values():
        descs += [e.get(part) for part in PAYLOADS]
        descs += (e.get("index") or {}).values()
    return {MANIFEST} | {d.get("name") for d in descs if isinstance(d, dict)}
