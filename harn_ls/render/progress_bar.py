"""The CLI's progress bar: one line on stderr, redrawn in place while a long command works.

Written here rather than taken from a library: the bar needs ~60 lines, and the libraries that draw
one (tqdm, rich) cost a one-shot command 25-120 ms of imports before it reads a byte. It draws only
on a terminal, only once the work has taken longer than `after` seconds (a warm `inspect` never
shows it), and clears its line when the work ends, so what stays on the screen is the command's
own output. stdout is never touched.
"""

from __future__ import annotations

import os
import threading
from typing import TextIO

from harn_ls.util.progress import ProgressSnapshot, WorkProgress, format_bytes, seconds_from_env

SHOW_AFTER_S = 1.0  # work shorter than this shows no bar
REDRAW_S = 0.2  # at most five redraws a second
AFTER_ENV = "HARN_LS_PROGRESS_AFTER"  # seconds before the bar shows (tests set 0)
# seconds between redraws (tests set a few ms: a phase shorter than REDRAW_S, the memory logs of a
# test project read in 0.2 s, would otherwise be drawn or not as the clock falls)
REDRAW_ENV = "HARN_LS_PROGRESS_EVERY"  # (the name the server's reports use too)


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def bar_line(snap: ProgressSnapshot, width: int, unicode_ok: bool = True) -> str:
    """The bar's text for one snapshot, at most `width` characters: what it is doing, the bar, the
    percentage, the read rate and the time left (once there is a measure of both)."""
    pct = snap.percentage
    parts = [f"{snap.title}: {snap.message}" if snap.message else snap.title]
    tail = []
    if pct is not None:
        tail.append(f"{pct:3d}%")
    if snap.done_bytes and snap.elapsed > 0.2:
        tail.append(f"{format_bytes(snap.done_bytes / snap.elapsed)}/s")
    if pct is not None and 0 < pct < 100 and snap.elapsed > 0.5:
        tail.append(f"{_clock(snap.elapsed * (100 - pct) / pct)} left")
    text, after = parts[0], "  ".join(tail)
    # the bar and the numbers keep their place from one redraw to the next; the text gives way
    cells = min(20, width // 4) if pct is not None else 0
    room = width - len(after) - (cells + 2 if cells else 0) - 2
    if len(text) > room:
        text = text[: max(0, room - 1)] + ("\u2026" if unicode_ok else ".")
    if cells and pct is not None:  # (cells only with a percentage)
        full = cells * pct // 100
        fill, empty = ("\u2588", "\u2591") if unicode_ok else ("#", "-")
        line = f"{text.ljust(room)}  {fill * full}{empty * (cells - full)} {after}"
    else:
        line = f"{text}  {after}" if after else text
    return line[:width]


class TerminalBar:
    """Draws `progress` on `stream` from a thread of its own until `close()`."""

    def __init__(self, progress: WorkProgress, stream: TextIO, after: float | None = None) -> None:
        self.progress = progress
        self.stream = stream
        self.after = seconds_from_env(AFTER_ENV, SHOW_AFTER_S) if after is None else after
        self.redraw = seconds_from_env(REDRAW_ENV, REDRAW_S)
        self.drawn = False
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        self._unicode = encoding in ("utf8", "utf_8")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress bar", daemon=True)

    def __enter__(self) -> TerminalBar:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        return max(20, columns - 1) if columns else 79  # (a terminal that tells no size: 0)

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while True:
            self.draw()
            if self._stop.wait(self.redraw):
                return

    def draw(self) -> None:
        line = bar_line(self.progress.snapshot(), self._width(), self._unicode)
        try:
            self.stream.write("\r" + line + "\x1b[K")
            self.stream.flush()
            self.drawn = True
        except (OSError, ValueError):
            self._stop.set()

    def close(self) -> None:
        """Stop drawing and take the bar's line away (the cursor back at its start)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.drawn:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.drawn = False
