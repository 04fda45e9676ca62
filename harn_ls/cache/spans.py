"""Fact spans kept between server runs: the anchors computed on each source file (issue 14 item 1).

Anchoring the facts of the busiest file (normalising it, searching each snippet around its
range) costs ~15 ms of CPU at 100k events and ~30-40 ms at 1M (in the server: its first hover
took 40 ms of CPU, 109 ms of wall time); the span cache (model/fact_spans.py) keeps the result
for one process only. This store keeps it across runs, in the project's state folder
(`<cache root>/<project key>/state/spans/`, never inside the project). Taking a file's anchors
from it still costs about two thirds of computing them at 1M (the time goes into reaching a
thousand facts spread over a 3 GB heap, which both do), so the server brings the stored files
back during its settle after start (FactSpanCache.restore): the first hover or code lens on
one of them is then served as a warm one is.

What an entry holds, per source file (its project-relative POSIX path):
  - the file as it was read: (st_dev, st_ino, st_size, st_mtime_ns) and a sha256 of the lines
    the anchors were computed from (`lines_digest`);
  - one anchor per distinct anchor input: (recorded start, recorded end, snippet) -> (state,
    current start, current end), stored as columns (one list per field) so that a file's entry
    is checked and indexed by a few passes in C rather than item by item.

An anchor is a pure function of the file's lines and those inputs (`staleness.anchor`, whose
constants are part of FORMAT), so the facts are validated input by input: a fact added, edited
or forgotten simply looks its own inputs up, and one not found is anchored afresh. The file is
validated by both its stat and the digest of its current lines: a file edited (even at the same
size with a new mtime), replaced by a rename, or deleted is anchored afresh, never served from
the store. A refused or missing file (no lines) is never stored: its anchors cost nothing.

The store is one file written atomically (cache/dirs.write_cache_file) with a header line naming
the format, the body's length and CRC-32; the body names the project's real path and root. A
truncated, corrupt, foreign-version or foreign-project file is ignored (and rewritten on the
next save), an entry of the wrong shape is dropped, never trusted. A stored path is only ever a
key compared with the path of the file asked about, which the span cache has already confined
to the project (`source_lines(path, root)`): the store never opens a path it read. Bounded:
the least recently used files go first (MAX_FILES, MAX_ANCHORS).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Mapping

import orjson

from harn_ls.cache.dirs import cache_enabled, project_cache_dir, write_cache_file
from harn_ls.formats.fact_anchors import MAX_MATCHES, SEARCH_RADIUS, Anchor

FORMAT = f"harn-ls-spans/1 r{SEARCH_RADIUS} m{MAX_MATCHES}"  # anchor()'s constants: other ones, other anchors
FOLDER = os.path.join("state", "spans")  # under the project's cache folder (swept and evicted with the state cache)
FILE = "spans.bin"
MAX_FILES = 512  # source files kept
MAX_ANCHORS = 100_000  # anchors kept over all files (~120 bytes each on disk: at most ~12 MB)
STORED_STATES = frozenset({"ok", "moved", "stale", "unchecked"})  # missing / refused are never stored

_MAX_LINE = 1 << 62  # a range beyond this (a hostile `f.py:99999...`) is anchored each time, not stored (JSON ints)
InputKey = tuple  # (recorded start, recorded end, snippet or None): what an anchor depends on besides the lines
_COLUMNS = 6  # starts, ends, snippets, states, current starts, current ends


def lines_digest(lines: list[str]) -> str:
    """sha256 of the lines anchors are computed from (their count first: [] and [""] join alike)."""
    h = hashlib.sha256(b"%d\n" % len(lines))
    h.update("\n".join(lines).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def input_key(evidence) -> InputKey:
    rng = evidence.range
    return (rng.start, rng.end, evidence.snippet)


def _stat_key(path: str) -> list | None:
    try:
        st = os.stat(path)  # followed like source_lines does; confinement is source_lines' job
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _safe_rel(rel: object) -> bool:
    """A project-relative POSIX path as the workspace makes them: no absolute path, no `..`."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


def _encodable(snippet: str | None) -> bool:
    """A snippet the store can write as JSON (a lone surrogate cannot be; such an anchor is just not stored)."""
    return snippet is None or snippet.isascii() or not any("\ud800" <= c <= "\udfff" for c in snippet)


def _ints(values: list) -> bool:
    return all(type(v) is int for v in values)


class _FileAnchors:
    """One file's stored anchors, indexed by input; an `Anchor` is made for an input when asked."""

    __slots__ = ("index", "states", "starts", "ends")

    def __init__(self, index: dict, states: list, starts: list, ends: list) -> None:
        self.index, self.states, self.starts, self.ends = index, states, starts, ends

    def __len__(self) -> int:
        return len(self.index)

    def get(self, key: InputKey) -> Anchor | None:
        i = self.index.get(key)
        return None if i is None else Anchor(self.states[i], self.starts[i], self.ends[i])

    @classmethod
    def decode(cls, raw: object) -> _FileAnchors | None:
        """From the stored columns; None if any column or value is not of the stored shape."""
        if not (isinstance(raw, list) and len(raw) == _COLUMNS and all(isinstance(c, list) for c in raw)):
            return None
        starts, ends, snippets, states, a_starts, a_ends = raw
        n = len(starts)
        if any(len(c) != n for c in raw) or not (_ints(starts) and _ints(ends) and _ints(a_starts) and _ints(a_ends)):
            return None
        if not all(s is None or type(s) is str for s in snippets) or not all(type(s) is str for s in states) \
                or not STORED_STATES.issuperset(states) \
                or not all(1 <= a <= b for a, b in zip(a_starts, a_ends, strict=True)):
            return None
        return cls(dict(zip(zip(starts, ends, snippets, strict=True), range(n), strict=True)), states, a_starts, a_ends)

    @classmethod
    def of(cls, anchors: dict[InputKey, Anchor]) -> _FileAnchors:
        keys = list(anchors)
        values = list(anchors.values())
        return cls(dict(zip(keys, range(len(keys)), strict=True)), [a.state for a in values], [a.start for a in values],
                   [a.end for a in values])

    def columns(self) -> list:
        keys = list(self.index)
        return [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], self.states, self.starts, self.ends]


class SpanStore:
    """The stored anchors of one project, used on its worker thread only (like the span cache)."""

    def __init__(self, folder: str, project_root: str) -> None:
        self.path = os.path.join(folder, FILE)
        self.project = os.path.realpath(project_root)
        self.root = os.path.abspath(project_root)
        # rel -> [stat key, lines digest, anchors as stored (columns) or decoded (_FileAnchors)]; least recently used first
        self._files: dict[str, list] = {}
        self._anchors = 0  # anchors held in total (for MAX_ANCHORS)
        self.unsaved = False
        self.save_requested = False  # a delayed save is on its way (set and cleared by the caller's scheduler)
        self.restored = 0  # files served from the store this run (for tests and logs)

    @classmethod
    def open(cls, project_root: str, env: Mapping[str, str] | None = None) -> SpanStore | None:
        """The project's store, loaded; None when the cache is off (HARN_LS_CACHE=off) or has no folder."""
        if not cache_enabled(env):
            return None
        try:
            store = cls(os.path.join(project_cache_dir(project_root, env), FOLDER), project_root)
        except (OSError, ValueError):
            return None
        store.load()
        return store

    def __len__(self) -> int:
        return len(self._files)

    def load(self) -> bool:
        """Read the stored file; anything unusable leaves the store empty (False)."""
        self._files.clear()
        self._anchors = 0
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
            header, _, body = data.partition(b"\n")
            fmt, length, crc = header.decode("ascii").rsplit(" ", 2)
            if fmt != FORMAT or int(length) != len(body) or int(crc) != zlib.crc32(body):
                return False
            doc = orjson.loads(body)
        except (OSError, ValueError, UnicodeDecodeError):  # (orjson.JSONDecodeError is a ValueError)
            return False
        if not isinstance(doc, dict) or doc.get("project") != self.project or doc.get("root") != self.root \
                or not isinstance(doc.get("files"), list):
            return False
        for item in doc["files"]:
            if not (isinstance(item, list) and len(item) == 4 and _safe_rel(item[0]) and isinstance(item[1], list)
                    and len(item[1]) == 4 and all(type(x) is int for x in item[1]) and isinstance(item[2], str)
                    and isinstance(item[3], list)):
                continue  # an entry of another shape: dropped, the file is anchored afresh
            self._files[item[0]] = [item[1], item[2], item[3]]
            self._anchors += _count(item[3])
        return True

    def recent(self, n: int) -> list[str]:
        """The `n` most recently used files, least recent first."""
        return list(self._files)[-n:] if n > 0 else []

    def anchors(self, rel: str, full_path: str, digest: str) -> _FileAnchors | None:
        """The stored anchors of `rel`, if the file on disk is still the one they were computed on:
        same stat and same lines (`digest` = lines_digest of the lines just read). Else None (and
        the entry is dropped)."""
        entry = self._files.pop(rel, None)
        if entry is None:
            return None
        decoded = entry[2] if isinstance(entry[2], _FileAnchors) else _FileAnchors.decode(entry[2])
        if decoded is None or entry[1] != digest or _stat_key(full_path) != entry[0]:
            self._files[rel] = entry
            self.drop(rel)
            return None
        entry[2] = decoded
        self._files[rel] = entry  # put back last: most recently used
        self.restored += 1
        return decoded

    def drop(self, rel: str) -> None:
        old = self._files.pop(rel, None)
        if old is not None:
            self._anchors -= _count(old[2])
            self.unsaved = True

    def remember(self, rel: str, full_path: str, digest: str, anchors: dict[InputKey, Anchor]) -> None:
        """Keep the anchors just computed on `rel` (for lines with this digest), evicting the least
        recently used files beyond the bounds."""
        stat = _stat_key(full_path)
        self.drop(rel)
        self.unsaved = True
        if stat is None or len(anchors) > MAX_ANCHORS:
            return
        kept = _FileAnchors.of({k: a for k, a in anchors.items() if k[1] < _MAX_LINE and _encodable(k[2])})
        self._files[rel] = [stat, digest, kept]
        self._anchors += len(kept)
        while len(self._files) > MAX_FILES or self._anchors > MAX_ANCHORS:
            oldest = next(iter(self._files))
            self._anchors -= _count(self._files.pop(oldest)[2])

    def save(self) -> bool:
        """Write the store if it changed (atomically; never raises). False when nothing was written."""
        if not self.unsaved:
            return False
        files = [[rel, stat, digest, anchors.columns() if isinstance(anchors, _FileAnchors) else anchors]
                 for rel, (stat, digest, anchors) in self._files.items()]
        try:
            body = orjson.dumps({"project": self.project, "root": self.root, "files": files})
            write_cache_file(self.path, f"{FORMAT} {len(body)} {zlib.crc32(body)}\n".encode("ascii") + body)
        except (OSError, TypeError):  # (orjson.JSONEncodeError is a TypeError: `remember` keeps none such)
            return False
        self.unsaved = False
        return True


def _count(anchors: object) -> int:
    """Anchors in an entry, decoded or as stored (columns)."""
    if isinstance(anchors, _FileAnchors):
        return len(anchors)
    return len(anchors[0]) if isinstance(anchors, list) and anchors and isinstance(anchors[0], list) else 0
