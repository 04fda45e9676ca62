"""How far a long piece of work is (a project load, a recall index build, the settle before a cache
save), told by the code doing it and shown by whoever watches: the language server as LSP work-done
progress (`lsp/progress.py`), the CLI as a bar on a terminal (`render/progress_bar.py`).

The worker only assigns a few attributes (one thread writes, others read a snapshot): no lock, no
call out, nothing that can slow the load. Watchers poll `snapshot()` at their own pace, so a load
that reads 400 batches a second still sends at most a few reports a second.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple


class ProgressSnapshot(NamedTuple):
    title: str
    percentage: int | None  # 0..100, never lower than an earlier snapshot's; None: no measure yet
    message: str
    done_bytes: int  # bytes read so far (0 for work counted in steps)
    elapsed: float  # seconds since the work began
    finished: bool


BYTE_UNITS = ("B", "KB", "MB", "GB")


def seconds_from_env(name: str, default: float) -> float:
    """A delay or interval of progress shown, from the environment (`HARN_LS_PROGRESS_AFTER` /
    `_EVERY`: tests shorten them): never negative, `default` when unset or not a number."""
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


def scaled_bytes(n: float) -> tuple[float, str]:
    """`n` bytes in the unit that keeps the number under 1024 (binary units, as `du -h`); GB at most."""
    for unit in BYTE_UNITS[:-1]:
        if n < 1024:
            return n, unit
        n /= 1024
    return n, BYTE_UNITS[-1]


def format_bytes(n: float) -> str:
    """A size as people read it, short: '412 MB', '1.5 KB', '512 B'."""
    value, unit = scaled_bytes(n)
    return f"{value:.0f} {unit}" if unit == "B" or value >= 100 else f"{value:.1f} {unit}".replace(".0 ", " ")


def format_of(done: float, total: float) -> str:
    """'412 of 888 MB': both in the total's unit, so the two numbers compare at a glance."""
    unit_total = format_bytes(total)
    value, unit = unit_total.rsplit(" ", 1)
    scale = 1024 ** BYTE_UNITS.index(unit)
    shown = done / scale
    done_text = f"{shown:.0f}" if unit == "B" or shown >= 100 or shown == 0 or "." not in value else f"{shown:.1f}"
    return f"{done_text} of {value} {unit}"


class WorkProgress:
    """One piece of work, in phases: the bytes of a phase measured by reading (`read_bytes`), or its
    steps counted (`step`); `weight` is the share of the whole a phase stands for."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.started = time.monotonic()
        self._base = 0.0  # share of the whole done by finished phases (0..1)
        self._weight = 0.0  # share the current phase stands for
        self._label = ""
        self._total = 0.0  # the current phase's size: bytes or steps
        self._done = 0.0
        self._bytes_phase = False
        self._counted = True
        self.read_total = 0  # bytes read in all phases so far
        self._read_before = 0  # ... before the current phase
        self._high = -1  # the highest percentage handed out: reports never go back
        self._span = (0.0, 1.0)  # the part of the whole the phases from here on share (`within`)
        self.finished = False
        self.summary = ""

    # ------------------------------------------------------------- the worker's side
    def within(self, start: float, end: float) -> None:
        """The phases from here on share [start, end] of the whole (a command that loads, then
        builds an index: each part its share, each part's phases weighted as if it were alone)."""
        self._span = (start, end)
        self._base, self._weight, self._total, self._done, self._label = 0.0, 0.0, 0.0, 0.0, ""

    def phase(self, label: str, total: float, weight: float, in_bytes: bool = False, counted: bool = True) -> None:
        """Start the next phase (the previous one counts as done); `counted`: its message says
        'i of n' steps (a recall index's slices), else only the step's label."""
        self._counted = counted
        self._base = min(1.0, self._base + self._weight) if self._label else 0.0
        self._read_before = self.read_total
        self._label, self._total, self._done, self._weight, self._bytes_phase = label, float(total), 0.0, weight, in_bytes

    def read_bytes(self, n: int) -> None:
        """`n` more bytes of the current (byte-measured) phase read."""
        self._done += n
        self.read_total = self._read_before + int(self._done)

    def step(self, n: int = 1, label: str | None = None) -> None:
        self._done += n
        if label is not None:
            self._label = label

    def finish(self, summary: str = "") -> None:
        self.summary = summary
        self.finished = True

    # ------------------------------------------------------------- the watchers' side
    def snapshot(self) -> ProgressSnapshot:
        label, total, done, base, weight = self._label, self._total, self._done, self._base, self._weight
        inner = min(1.0, base + (weight * min(1.0, done / total) if total > 0 else 0.0))
        fraction = 1.0 if self.finished else self._span[0] + (self._span[1] - self._span[0]) * inner
        pct = min(100, int(fraction * 100))
        if pct < self._high:
            pct = self._high
        self._high = pct
        if self._bytes_phase and total > 0:
            message = f"{label} {format_of(min(done, total), total)}"
        elif total > 1 and self._counted:
            message = f"{label} {min(int(done), int(total))} of {int(total)}"
        else:
            message = label
        return ProgressSnapshot(self.title, pct if (label or self.finished) else None, message,
                                self.read_total, time.monotonic() - self.started, self.finished)
