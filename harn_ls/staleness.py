"""Does a fact's `file_range` evidence still point at the code it was about?

When the evidence carries a snippet and the range no longer contains it, the
snippet is searched for nearby and the fact re-anchored; otherwise the fact
may be stale. Source files are read from disk (the last saved version), and
cached by (mtime, size) so hovers and lenses stay cheap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SEARCH_RADIUS = 200  # lines around the recorded range searched for a moved snippet
MAX_SOURCE_BYTES = 8 * 1024 * 1024

_cache: dict[str, tuple[tuple[int, int], list[str]]] = {}


@dataclass(frozen=True)
class Anchor:
    state: str  # ok | moved | stale | missing | unchecked
    start: int  # 1-based inclusive, where the fact applies now
    end: int

    @property
    def label(self) -> str:
        return {
            "ok": "matches the code",
            "moved": f"re-anchored to lines {self.start}-{self.end}",
            "stale": "may be stale: the snippet is no longer in this range",
            "missing": "file not found",
            "unchecked": "no snippet to check",
        }[self.state]


def source_lines(path: str) -> list[str] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (int(st.st_mtime_ns), st.st_size)
    hit = _cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    if st.st_size > MAX_SOURCE_BYTES:
        return None
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = text.splitlines()
    if len(_cache) > 2048:
        _cache.clear()
    _cache[path] = (key, lines)
    return lines


def _norm(lines: list[str]) -> str:
    return "\n".join(" ".join(line.split()) for line in lines).strip()


def anchor(lines: list[str] | None, start: int, end: int, snippet: str | None) -> Anchor:
    if lines is None:
        return Anchor("missing", start, end)
    if not snippet or not snippet.strip():
        return Anchor("unchecked", start, end)
    want = _norm(snippet.splitlines())
    span = max(1, end - start + 1)
    if want in _norm(lines[max(0, start - 1):end]):
        return Anchor("ok", start, end)
    want_lines = max(1, len([s for s in snippet.splitlines()]))
    height = max(span, want_lines)
    best: tuple[int, int] | None = None
    lo = max(1, start - SEARCH_RADIUS)
    hi = min(len(lines), end + SEARCH_RADIUS)
    for s in range(lo, hi + 1):
        window = _norm(lines[s - 1:s - 1 + height])
        if want and want in window:
            dist = abs(s - start)
            if best is None or dist < best[0]:
                best = (dist, s)
    if best is not None:
        s = best[1]
        return Anchor("moved", s, min(len(lines), s + height - 1))
    return Anchor("stale", start, end)


def fact_staleness(project_root: str, evidence) -> Anchor:
    rng = evidence.range
    lines = source_lines(os.path.join(project_root, rng.path))
    return anchor(lines, rng.start, rng.end, evidence.snippet)
