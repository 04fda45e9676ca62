"""The state cache's record rows: one memory record per line (an orjson array), a row index of
(seq, end offset, CRC-32) per row, and `RowReader`, which decodes single rows on demand and falls
back to projecting the log again whenever a row does not check out."""

from __future__ import annotations

import os
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping

import orjson

from harn_ls.formats.jsonl import JsonlLine, JsonlTail
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import (
    EMPTY_FLAGS,
    IN_TEXT,
    MemoryRecord,
    decode_store_line,
    memory_record,
    pack_json,
    shared_tags,
)
from harn_ls.util.shared_ints import shared


class CacheInvalid(Exception):
    """A payload that does not match its manifest entry (or does not decode)."""


# In a row's text slot: the value slot holds the record's text, and the value is that text's JSON
# (a record keeping its value as its text, `MemoryRecord.value_in_text`): the prose is stored once.
_VALUE_IN_TEXT = 1


def record_row(r: MemoryRecord) -> list:
    """The record as a row, for orjson.dumps (a packed provenance goes in as an orjson.Fragment of
    its bytes: the same output as its dict, without parsing it to write it)."""
    if r.value_in_text:
        return [r.id, r.key, r.text, _VALUE_IN_TEXT, list(r.tags), r.stored_at, r.seq, r.line_no, r.provenance_json(),
                r.status, r.scope, r.flags, r.updated_at]
    text = None if r.text is r.value or (isinstance(r.value, str) and r.text == r.value) else r.text
    return [r.id, r.key, r.value, text, list(r.tags), r.stored_at, r.seq, r.line_no, r.provenance_json(), r.status, r.scope,
            r.flags, r.updated_at]


def record_from_row(row: list, namespace: str) -> MemoryRecord:
    rid, key, value, text, tags, stored_at, seq, line_no, prov, status, scope, flags, updated_at = row
    if type(flags) is dict and not flags:
        flags = EMPTY_FLAGS  # (shared, like a freshly projected record's)
    if text is None:
        text = value
    elif type(text) is int:
        if text != _VALUE_IN_TEXT or type(value) is not str:
            raise TypeError("a row's text slot is a string, null or the value-in-text mark")
        text, value = value, IN_TEXT
    return memory_record(rid, namespace, key, value, text, shared_tags(tags), stored_at,
                        shared(seq), shared(line_no), pack_json(prov), status, scope, flags, updated_at)


def decode_rows(rows: bytes) -> list:
    """Every row of a rows payload (orjson never writes a raw newline inside a document). One parse
    per row: ~35% faster than joining the rows into one array first (no copies of the payload)."""
    if not rows:
        return []
    if not rows.endswith(b"\n"):
        raise CacheInvalid("rows do not end with a newline")
    loads = orjson.loads
    return [loads(row) for row in rows.split(b"\n")[:-1]]


def _checked(data: bytes, desc: Mapping) -> bytes:
    if len(data) != desc["size"] or zlib.crc32(data) != desc["crc"]:
        raise CacheInvalid("payload changed")
    return data


def _pread_all(fh) -> bytes:
    """The whole of an open payload file, whatever its read position (several readers share it)."""
    size = os.fstat(fh.fileno()).st_size
    return os.pread(fh.fileno(), size, 0)


class RowReader:
    """Single active records of a restored namespace, read from its cached rows on demand.

    Each row is checked against its CRC-32 from the row index (itself checked against the manifest)
    and must carry the sequence asked for; anything else - a short read, a changed byte, a row index
    that does not fit - makes the reader give up on the cache and project the log again up to the
    cached offset (the bytes the validator showed unchanged), which is what the rows held."""

    def __init__(self, space: MemoryNamespace, offset: int, rows, rows_desc: Mapping, rowidx, rowidx_desc: Mapping):
        self.space, self.offset = space, offset
        self._rows, self._rows_desc, self._rowidx, self._rowidx_desc = rows, rows_desc, rowidx, rowidx_desc
        self._pos: dict[int, int] | None = None
        # the row index (set together by `seqs()`, dropped together): row ends, row CRC-32s
        self._ends: list[int] | None = None
        self._crcs: array[int] | None = None
        self._fallback: dict[int, MemoryRecord] | None = None
        self.seqs_cached: list[int] | None = None
        # every row decoded once, shared by the index and the namespace (see `all`), and the
        # progress of decoding them in steps (`decode_some`): next row, rows so far, running CRC
        self._all: dict[int, MemoryRecord] | None = None
        self._step: tuple[int, dict[int, MemoryRecord], int] | None = (0, {}, 0)

    def seqs(self) -> list[int] | None:
        """The row sequences in row order, None when the row index is not usable."""
        try:
            data = _checked(_pread_all(self._rowidx), self._rowidx_desc)
            idx = array("q")
            if len(data) % (3 * idx.itemsize):
                raise CacheInvalid("row index size")
            idx.frombytes(data)
        except (OSError, CacheInvalid, KeyError, TypeError, ValueError):
            return None
        seqs, ends = idx[0::3].tolist(), idx[1::3].tolist()
        if ends and (ends[-1] != self._rows_desc.get("size") or ends[0] <= 0 or ends != sorted(ends)):
            return None  # (each row is still checked by its CRC and sequence when read)
        self._pos = dict(zip(seqs, range(len(seqs)), strict=True))
        self._ends, self._crcs = ends, idx[2::3]
        self.seqs_cached = seqs if len(self._pos) == len(seqs) else None
        return self.seqs_cached

    def rowidx_crc(self) -> int | None:
        """The CRC-32 of the row index, as the manifest describes it."""
        return self._rowidx_desc.get("crc")

    def positions(self) -> dict[int, int] | None:
        """seq -> row position (after `seqs()`); not to be modified."""
        return self._pos

    def record(self, seq: int) -> MemoryRecord:
        pos, ends, crcs = self._pos, self._ends, self._crcs
        if self._fallback is None and pos is not None and ends is not None and crcs is not None:  # (set together)
            i = pos.get(seq)
            if i is not None:
                start = ends[i - 1] if i else 0
                try:
                    row = os.pread(self._rows.fileno(), ends[i] - start - 1, start)
                    if zlib.crc32(row) == crcs[i]:
                        r = record_from_row(orjson.loads(row), self.space.namespace)
                        if r.seq == seq:
                            return r
                except (OSError, orjson.JSONDecodeError, TypeError, ValueError):
                    pass
        return self.all()[seq]

    def all(self) -> dict[int, MemoryRecord]:
        """seq -> record of every row (one read, checked as a whole; decoded once: the index and
        the namespace get the same record objects). Not to be modified."""
        if self._fallback is not None:
            return self._fallback
        try:
            return self.decoded()
        except (OSError, CacheInvalid, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self._fallback = _projected(self.space.namespace, self.space.path, self.offset).active
            return self._fallback

    def decoded(self) -> dict[int, MemoryRecord]:
        """seq -> record of every row, from the rows alone: raises when they do not check out."""
        while not self.decode_some(50_000):  # finish what the steps began (checked as a whole at the end)
            pass
        if self._all is None:
            out = {}
            ns = self.space.namespace
            for row in decode_rows(_checked(_pread_all(self._rows), self._rows_desc)):
                r = record_from_row(row, ns)
                out[r.seq] = r
            self._all, self._step = out, None
            self._drop_row_index()
        return self._all

    def _drop_row_index(self) -> None:
        """Every row is decoded (`_all`): single-row reads answer from it, so the per-row index
        (Python ints and a seq -> row dict: ~100 bytes a row) is no longer needed."""
        self._pos = self._ends = self._crcs = None
        self.seqs_cached = None

    def decode_some(self, max_rows: int) -> bool:
        """Decode up to `max_rows` more rows towards `all()`, so a server can spread the work over
        short steps; True once there is nothing left to do this way. The rows decoded in steps are
        only used when the CRC over all of them and the total size match the manifest; anything
        else drops them and leaves `all()` to do it in one go (and check it) as before."""
        if self._step is None or self._fallback is not None:
            return True
        if self._ends is None and self.seqs() is None:
            self._step = None
            return True
        ends = self._ends
        assert ends is not None  # (set before, or by the seqs() just above)
        start, out, crc = self._step
        stop = min(len(ends), start + max(1, max_rows))
        if start >= stop:
            self._step = None
            return True
        first = ends[start - 1] if start else 0
        try:
            data = os.pread(self._rows.fileno(), ends[stop - 1] - first, first)
            if len(data) != ends[stop - 1] - first:
                raise CacheInvalid("short read")
            crc = zlib.crc32(data, crc)
            ns = self.space.namespace
            for row in decode_rows(data):
                r = record_from_row(row, ns)
                out[r.seq] = r
            if stop == len(ends):
                if crc != self._rows_desc["crc"] or ends[-1] != self._rows_desc["size"] \
                        or os.fstat(self._rows.fileno()).st_size != ends[-1] or len(out) != len(ends):
                    raise CacheInvalid("rows changed")
                self._all, self._step = out, None
                self._drop_row_index()
                return True
        except (OSError, CacheInvalid, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self._step = None
            return True
        self._step = (stop, out, crc)
        return False


def _lines_until(path: str, offset: int) -> Iterator[list[JsonlLine]]:
    """A log's lines before the cached offset (the validator showed those bytes unchanged), a batch at a time."""
    tail = JsonlTail(path, decode=decode_store_line)
    for batch in tail.iter_batches():
        yield [ln for ln in batch.lines if ln.offset < offset]
        if tail.offset >= offset:
            break


def _projected(ns: str, path: str, offset: int) -> MemoryNamespace:
    """The namespace projected again from its log up to the cached offset."""
    fresh = MemoryNamespace(ns, path)
    for lines in _lines_until(path, offset):
        fresh.apply_lines(lines)
    return fresh


def _replay(space: MemoryNamespace, offset: int) -> None:
    """Fallback when a checked records document still does not decode: the log re-read up to the
    cached offset."""
    fresh = _projected(space.namespace, space.path, offset)
    d = space.__dict__
    for name in ("active", "_by_id", "forgotten", "hidden", "forgets"):
        d[name] = getattr(fresh, name)


def facts_from_log(ns: str, path: str, offset: int, root: str) -> list:
    """[(seq, Fact or None, problems)] of a namespace's log up to the cached offset, in the order a
    load reading the log gives them (as Workspace._apply_delta keeps them): the fallback when a
    cached facts payload checked late (ProjectCache.lazy_facts) turns out not intact."""
    # start-up: formats.facts (~14 ms) loads only when cached facts could not be used
    from harn_ls.formats import facts as facts_fmt

    fresh = MemoryNamespace(ns, path)
    found: dict[int, tuple] = {}  # seq -> entry, in the order they were added
    for lines in _lines_until(path, offset):
        delta = fresh.apply_lines(lines)
        for record in delta.removed:
            found.pop(record.seq, None)
        for record in delta.added:
            value = record.value
            if not (isinstance(value, dict) and value.get("schema") == facts_fmt.FACT_SCHEMA):
                continue
            fact, problems = facts_fmt.fact_from_record(record, root, path)
            if fact is not None or problems:
                found[record.seq] = (record.seq, fact, problems)
    return list(found.values())


# ----------------------------------------------------------------------------- inspect fact entries
# `inspect --json` prints every fact; a warm one-shot inspect takes the printed form of an unchanged
# namespace's facts from the cache instead of decoding ~10k Fact objects only to print them again.
INSPECT_JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
FACT_ENTRY_INDENT = b"\n    "  # an entry of the top-level "facts" list sits two levels deep
FACT_SEPARATOR = b"," + FACT_ENTRY_INDENT


def fact_inspect_entry(f) -> dict:
    """One fact as `inspect --json` lists it."""
    return {"id": f.id, "kind": f.kind, "claim": f.claim, "confidence": f.confidence, "namespace": f.namespace,
            "ranges": [f"{e.range.path}:{e.range.start}-{e.range.end}" for e in f.evidence if e.range is not None]}


def fact_inspect_fragment(f) -> bytes:
    """`fact_inspect_entry` serialized exactly as orjson writes it inside the indented "facts" list
    (orjson escapes every newline inside a string, so each raw newline is indentation)."""
    return orjson.dumps(fact_inspect_entry(f), default=str, option=INSPECT_JSON_OPTIONS).replace(b"\n", FACT_ENTRY_INDENT)


def join_fact_fragments(body: bytes | memoryview) -> bytes:
    """The "facts" list around its entries (joined by FACT_SEPARATOR), as orjson writes it at that depth
    (one copy of the body: `+` made two)."""
    return b"".join((b"[", FACT_ENTRY_INDENT, body, b"\n  ]")) if body else b"[]"


def fact_inspect_payload(facts: list) -> bytes:
    """The cached inspect form of a namespace's facts (given in entry order): one JSON line
    {"ids": [...], "ends": [...]} then the fragments sorted by id (stably, as `inspect` sorts them)
    and joined by FACT_SEPARATOR; fragment i ends at ends[i] of that body."""
    return b"".join(fact_inspect_chunks(facts))


def fact_inspect_chunks(facts: list) -> Iterator[bytes]:
    """`fact_inspect_payload` in chunks (see `gathered`). The head needs every fragment's end, so
    the body is encoded first and held as its chunks until the head is out (then each chunk goes
    once written): a list of fragments, their join and the head added to it held the body three
    times over (~10 MB of a cold start's save at 100k)."""
    ordered = sorted(facts, key=lambda f: f.id)
    ends: list[int] = []
    body = list(gathered(_fragments(ordered, ends)))
    yield orjson.dumps({"ids": [f.id for f in ordered], "ends": ends})
    yield b"\n"
    body.reverse()
    while body:
        yield body.pop()


def _fragments(ordered: list, ends: list[int]) -> Iterator[bytes]:
    """Each fact's fragment after FACT_SEPARATOR (none before the first); its end in `ends`."""
    sep, n = FACT_SEPARATOR, len(FACT_SEPARATOR)
    end = -n
    for f in ordered:
        frag = fact_inspect_fragment(f)
        if ends:
            yield sep
        yield frag
        end += n + len(frag)
        ends.append(end)


def read_fact_inspect_payload(data: bytes, count: int) -> tuple[list[str], list[int], bytes]:
    """(ids, ends, body) of `fact_inspect_payload`; CacheInvalid unless it holds `count` facts
    whose fragments tile the body."""
    head, sep, body = data.partition(b"\n")
    try:
        doc = orjson.loads(head)
        ids, ends = doc["ids"], doc["ends"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise CacheInvalid(str(exc)) from None
    if not sep or not isinstance(ids, list) or not isinstance(ends, list) or len(ids) != count or len(ends) != count \
            or not _all_of_type(ids, str) or not _all_of_type(ends, int) \
            or (ends[-1] if ends else 0) != len(body) or not _tiles(body, ends):
        raise CacheInvalid("inspect facts do not fit together")
    return ids, ends, body


# Where one entry ends and the next begins. No entry holds these bytes: orjson escapes every newline
# inside a string, so a raw newline is indentation, and inside an entry it is followed by six spaces
# or more (its fields, its ranges) or by four and the entry's closing brace, never by four and "{".
_ENTRY_BOUNDARY = b"}" + FACT_SEPARATOR + b"{"


def read_fact_inspect_body(data: bytes, count: int) -> memoryview:
    """The body of `fact_inspect_payload` for printing it whole (one namespace holds every fact
    printed); CacheInvalid unless it is exactly `count` entries: it opens with "{", closes with "}"
    and holds count - 1 entry boundaries, which no entry holds (above), so it splits into exactly
    `count` objects joined by FACT_SEPARATOR, what `read_fact_inspect_payload` checks the body
    for. The header (ids and ends: for merging several namespaces' entries) is not decoded: printed
    whole, the body does not depend on it. One count in C against a loop over every entry; the body
    is a view of `data` (not a copy: it is copied once, into the printed list)."""
    start = data.find(b"\n") + 1
    if not start:
        raise CacheInvalid("no header line")
    if not count:
        if len(data) > start:
            raise CacheInvalid("entries where none are counted")
        return memoryview(data)[start:]
    if data[start:start + 1] != b"{" or data[-1:] != b"}" or data.count(_ENTRY_BOUNDARY, start) != count - 1:
        raise CacheInvalid("inspect facts are not the counted entries")
    return memoryview(data)[start:]


def _all_of_type(items: list, cls: type) -> bool:
    """Every item exactly a `cls` (a bool is no int): one pass in C (a generator took ~1 ms over 10k facts)."""
    return not items or set(map(type, items)) == {cls}


def _tiles(body: bytes, ends: list[int]) -> bool:
    """Each fragment one JSON object, the separator exactly between each two."""
    sep, n = FACT_SEPARATOR, len(FACT_SEPARATOR)
    start = 0
    for end in ends:
        if end <= start or body[start] != 0x7B or body[end - 1] != 0x7D or (end < len(body) and body[end:end + n] != sep):
            return False  # 0x7B, 0x7D: "{", "}"
        start = end + n
    return True


def split_fact_body(body: bytes, ends: list[int]) -> list[bytes]:
    """The fragments of a body `read_fact_inspect_payload` checked."""
    starts = [0] + [end + len(FACT_SEPARATOR) for end in ends[:-1]]
    return [body[a:b] for a, b in zip(starts, ends, strict=False)]  # (no ends: one start, no fragment)


# The size of the chunks a payload is written in. Each is gathered in one fixed buffer and handed
# out as a copy: a buffer grown piece by piece to 1 MB was moved by realloc again and again, and the
# pages of every place it had been stayed in the RSS until the heap was trimmed (~8 MB of a cold
# start's save at 100k for the largest rows payload; chunks of this size: under 1 MB).
ROW_CHUNK_BYTES = 64 * 1024


def gathered(pieces: Iterable) -> Iterator[bytes]:
    """`pieces` (bytes-like) joined and cut into chunks of at most ROW_CHUNK_BYTES (a piece longer
    than that is a chunk of its own); the last chunk is handed out even when empty. Each chunk is a
    new bytes object, so the chunks can be kept (`joined`)."""
    cap = ROW_CHUNK_BYTES
    view = memoryview(bytearray(cap))
    pos = 0
    for piece in pieces:
        n = len(piece)
        if pos + n > cap:
            if pos:
                yield bytes(view[:pos])
                pos = 0
            if n > cap:
                yield piece
                continue
        view[pos:pos + n] = piece
        pos += n
    yield bytes(view[:pos])


def new_row_index(space: MemoryNamespace) -> array:
    """The row index `row_chunks` fills for `space`: (seq, end offset, CRC-32) per active record,
    allocated at its full size at once (grown a row at a time, realloc moved it around the heap:
    ~3 MB of RSS for the 570 KB index of a 24k-record namespace)."""
    return array("q", [0]) * (3 * len(space.active))


def row_chunks(space: MemoryNamespace, cached_rows: dict | None, index: array) -> Iterator[bytes]:
    """The rows payload in chunks (see `gathered`), each written and dropped before the next is
    built. Fills `index` (`new_row_index`; one of another size is made so first) with (seq, end
    offset, CRC-32) per row as it goes."""
    if len(index) != 3 * len(space.active):
        index[:] = new_row_index(space)
    return gathered(_row_pieces(space, cached_rows, index))


def _row_pieces(space: MemoryNamespace, cached_rows: dict | None, index: array) -> Iterator[bytes]:
    """Each record's row and its newline, one piece; its entry of `index` once it is out."""
    dumps, crc32 = orjson.dumps, zlib.crc32
    end = i = 0
    for r in space.active.values():
        got = cached_rows.get(r.seq) if cached_rows else None
        # records are treated as immutable (an update makes a new one): the same object, the same row
        row = got[1] if got is not None and got[0] is r else dumps(record_row(r))
        yield row + b"\n"
        end += len(row) + 1
        index[i], index[i + 1], index[i + 2] = r.seq, end, crc32(row)
        i += 3


def json_array_chunks(items: Iterator, option: int = 0) -> Iterator[bytes]:
    """The bytes of `orjson.dumps(list(items), option=option)` in chunks (see `gathered`), each item
    encoded alone (compact JSON: the same bytes): the facts payload's rows were ~14 MB of objects and
    bytes at once at 100k."""
    return gathered(_json_array_pieces(items, option))


def _json_array_pieces(items: Iterator, option: int) -> Iterator[bytes]:
    dumps = orjson.dumps
    yield b"["
    sep = b""
    for item in items:
        if sep:
            yield sep
        yield dumps(item, option=option)
        sep = b","
    yield b"]"


def json_object_chunks(doc: Mapping) -> Iterator[bytes]:
    """The bytes of `orjson.dumps(doc)` (string keys only, no option) in chunks (see `gathered`),
    one key and value encoded at a time: orjson's whole output is grown by realloc, like any buffer."""
    return gathered(_json_object_pieces(doc))


def _json_object_pieces(doc: Mapping) -> Iterator[bytes]:
    dumps = orjson.dumps
    yield b"{"
    sep = b""
    for key, value in doc.items():
        if type(key) is not str:
            raise TypeError("a JSON object key is a string")  # (as orjson.dumps raises without OPT_NON_STR_KEYS)
        if sep:
            yield sep
        yield dumps(key)
        yield b":"
        yield dumps(value)
        sep = b","
    yield b"}"


def joined(data) -> bytes:
    """A payload as one bytes object, whether it came whole or in chunks (`row_chunks`)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return b"".join(data)
