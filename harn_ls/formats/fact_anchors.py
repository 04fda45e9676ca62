"""Does a fact's `file_range` evidence still point at the code it was about?

When the evidence carries a snippet and the range no longer contains it, the
snippet is searched for nearby and the fact re-anchored; otherwise the fact
may be stale. Source files are read from disk (the last saved version), and
cached by the file's own lstat (inode, mtime, ctime, size) so hovers and lenses stay cheap.
"""

from __future__ import annotations

import os
import stat
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from harn_ls.util.safe_read import SOURCE_FILE_CAP, ReadRefused, read_confined

if TYPE_CHECKING:
    from harn_ls.formats.fact_types import Evidence, FileRange

SEARCH_RADIUS = 200  # lines around the recorded range searched for a moved snippet
MAX_SOURCE_BYTES = SOURCE_FILE_CAP
MAX_MATCHES = 10_000  # snippet occurrences examined per anchor (a one-character snippet in a huge file)

_cache: dict[str, tuple[tuple[int, ...], list[str]]] = {}
_refused: dict[str, tuple[tuple[int, ...], str]] = {}


@dataclass(frozen=True)
class Anchor:
    """Where a fact's evidence applies in the current file, and how sure that is."""

    state: str  # ok | moved | stale | missing | refused | unchecked
    start: int  # 1-based inclusive, where the fact applies now (never past the end of the file)
    end: int
    reason: str = ""  # why a file was refused (symlink out of the project, not a regular file, too large)

    @property
    def label(self) -> str:
        return {
            "ok": "matches the code",
            "moved": f"re-anchored to lines {self.start}-{self.end}",
            "stale": "may be stale: the snippet is no longer in this range",
            "missing": "file not found",
            "refused": f"file not read: {self.reason}",
            "unchecked": "no snippet to check",
        }[self.state]


def refusal(path: str) -> str | None:
    """Why the last `source_lines(path, root)` refused the file (None if it did not)."""
    hit = _refused.get(path)
    return hit[1] if hit is not None else None


def source_lines(path: str, root: str | None = None) -> list[str] | None:
    """Lines of a regular source file (inside `root` when given, at most SOURCE_FILE_CAP bytes).

    None when absent or refused (`refusal(path)` says why). Never follows a link out of the
    project, never opens a device or FIFO, never reads more than the cap."""
    try:
        st = os.lstat(path)
    except OSError:
        _refused.pop(path, None)
        return None
    # The path's own identity, not its target's: a file swapped for a link (to a sibling project, or to
    # another file of the same size and mtime) gets a new inode and mode, so it misses and is read (and
    # confined) again. A link is never served from the cache: what it points at can change unseen.
    key = (st.st_dev, st.st_ino, st.st_mode, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
    hit = None if stat.S_ISLNK(st.st_mode) else _cache.get(path)
    if hit is not None and hit[0] == key and (root is None or path not in _refused):
        return hit[1]
    try:
        data = read_confined(path, root, MAX_SOURCE_BYTES)
    except ReadRefused as exc:
        if len(_refused) > 2048:
            _refused.clear()
        _refused[path] = (key, exc.reason)
        _cache.pop(path, None)
        return None
    except OSError:
        return None
    _refused.pop(path, None)
    lines = data.decode("utf-8", errors="replace").splitlines()
    if len(_cache) > 2048:
        _cache.clear()
    _cache[path] = (key, lines)
    return lines


def _norm_line(line: str) -> str:
    return " ".join(line.split())


def normalized_lines(lines: list[str]) -> list[str]:
    """Each line with its whitespace runs collapsed, as `anchor` compares them: computed once per
    file and handed to every `anchor` call on it (hundreds of facts on one file each searched
    the same 400 lines around their range)."""
    return [_norm_line(line) for line in lines]


def anchor(lines: list[str] | None, start: int, end: int, snippet: str | None, reason: str = "",
           normed_lines: list[str] | None = None) -> Anchor:
    """Where the evidence applies now. Linear in the size of the file, whatever the range says.

    `ok` when the recorded range (clamped to the file) still contains the snippet; `moved` to the
    occurrence nearest the recorded start within SEARCH_RADIUS lines; otherwise `stale`.
    `normed_lines`, when given, is `normalized_lines(lines)`."""
    if lines is None:
        return Anchor("refused", start, end, reason) if reason else Anchor("missing", start, end)
    n = len(lines)
    last = max(1, n)
    start = max(1, start)
    end = max(start, end)
    shown = (min(start, last), min(end, last))  # `1-999999999` is shown as the whole file, not a billion lines
    if not snippet or not snippet.strip():
        return Anchor("unchecked", *shown)
    want = "\n".join(normalized_lines(snippet.splitlines())).strip()
    if not want:
        return Anchor("unchecked", *shown)
    span = end - start + 1
    want_lines = max(1, len(snippet.splitlines()))
    height = max(span, want_lines, 1)
    lo = max(1, start - SEARCH_RADIUS)
    hi = min(n, end + SEARCH_RADIUS)
    region_end = min(n, max(hi + height - 1, end))
    if normed_lines is not None and len(normed_lines) == n:
        normed = normed_lines[lo - 1:region_end]
    else:
        normed = [_norm_line(line) for line in lines[lo - 1:region_end]]  # each line normalised once
    if start <= n and want in "\n".join(normed[start - lo:min(end, n) - lo + 1]).strip():
        return Anchor("ok", *shown)
    # A window of `height` lines starting at line s contains the snippet iff some occurrence of it
    # in the normalised text spans lines [a, b] with s <= a and b <= s + height - 1. So: find the
    # occurrences once (one pass over the region), and for each the valid s nearest the recorded start.
    text = "\n".join(normed)
    offsets = []  # offset of each region line in `text`
    pos = 0
    for line in normed:
        offsets.append(pos)
        pos += len(line) + 1
    best: tuple[int, int] | None = None
    found = text.find(want)
    examined = 0
    while found != -1 and examined < MAX_MATCHES:
        examined += 1
        a = lo + bisect_right(offsets, found) - 1
        b = lo + bisect_right(offsets, found + len(want) - 1) - 1
        s_min = max(lo, b - height + 1)
        s_max = min(hi, a)
        if s_min <= s_max:
            s = min(max(start, s_min), s_max)
            dist = abs(s - start)
            if best is None or (dist, s) < best:
                best = (dist, s)
                if dist == 0:
                    break
        if a - height + 1 > hi:
            break  # later occurrences start even further below the searched range
        found = text.find(want, found + 1)
    if best is not None:
        s = best[1]
        return Anchor("moved", s, min(n, s + height - 1))
    return Anchor("stale", *shown)


def fact_staleness(project_root: str, evidence: Evidence) -> Anchor:
    rng = cast("FileRange", evidence.range)  # callers ask only for evidence that has a range
    path = os.path.join(project_root, rng.path)
    lines = source_lines(path, project_root)
    return anchor(lines, rng.start, rng.end, evidence.snippet, refusal(path) or "")
