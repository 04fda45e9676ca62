"""Per-key coalescing with a trailing debounce and a max wait, flushed from one background thread.

Pure: no pygls, no watchdog. `StateWatcher` (harn_ls/watch/observer.py) feeds it file paths.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable

log = logging.getLogger(__name__)


class KeyedDebouncer:
    """Coalesce `touch(key)` calls and hand due keys to `callback` in batches.

    A key is due `debounce` seconds after its last touch, but never later than
    `max_wait` after its first touch since the previous flush (so a file that
    is appended to continuously still flushes about once per `max_wait`).

    Flushes are at least `min_interval` apart (debounce / 2): when
    many files are each touched once at staggered times (a slow writer walking
    500 files), their deadlines differ by a few ms each; the floor turns that
    trickle into a handful of batches at the cost of <= min_interval extra
    latency, and only while a previous batch was just delivered.

    Each flush makes one `callback(keys)` call with every due key, plus:
      * keys due within `slack` seconds (saves a wake-up a few ms later), and
      * keys that have already been pending for at least `debounce` — when we
        are flushing anyway, riding along keeps the callback count near
        "one per max_wait" during a burst over many files instead of one per
        file whose first touch happened a little later.

    Callbacks run one at a time (on the background thread, or on the caller of
    `flush_now`), in the order their batches were taken. A callback that raises is
    logged and does not stop the debouncer.

    With `start=False` no thread runs; call `pump()` yourself (tests with a
    fake `clock`).
    """

    def __init__(
        self,
        callback: Callable[[set], None],
        debounce: float = 0.15,
        max_wait: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        start: bool = True,
    ) -> None:
        if debounce < 0 or max_wait < debounce:
            raise ValueError("need 0 <= debounce <= max_wait")
        self._callback = callback
        self.debounce = debounce
        self.max_wait = max_wait
        self.slack = 0.02
        self.min_interval = debounce / 2
        self._last_flush = float("-inf")
        self._clock = clock
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Serialises callbacks and keeps batch order = extraction order.
        self._cb_lock = threading.Lock()
        self._first: dict[Hashable, float] = {}
        self._last: dict[Hashable, float] = {}
        self._closed = False
        self._thread: threading.Thread | None = None
        if start:
            self._thread = threading.Thread(target=self._run, name="harn-ls-debounce", daemon=True)
            self._thread.start()

    # -- public -----------------------------------------------------------

    def touch(self, key: Hashable) -> None:
        self.touch_many((key,))

    def touch_many(self, keys: Iterable[Hashable]) -> None:
        now = self._clock()
        with self._lock:
            if self._closed:
                return
            was_empty = not self._first
            for key in keys:
                self._first.setdefault(key, now)
                self._last[key] = now
            # A newly pending key is never due earlier than any key already
            # pending (its due time is now + debounce, theirs <= that), so the
            # thread only needs waking when it was idle.
            if was_empty and self._first:
                self._cond.notify()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._first)

    def pump(self) -> float | None:
        """Flush what is due now; return the next deadline (clock time) or None."""
        with self._cb_lock:
            with self._lock:
                batch, deadline = self._take_due(self._clock())
            if batch:
                self._deliver(batch)
        return deadline

    def flush_now(self) -> None:
        """Deliver everything pending immediately (in the calling thread)."""
        with self._cb_lock:
            with self._lock:
                batch = set(self._first)
                self._first.clear()
                self._last.clear()
                if batch:
                    self._last_flush = self._clock()
            if batch:
                self._deliver(batch)

    def close(self, flush: bool = False) -> None:
        """Stop the thread (joins it). Pending keys are dropped unless `flush`."""
        if flush:
            self.flush_now()
        with self._lock:
            self._closed = True
            self._first.clear()
            self._last.clear()
            self._cond.notify_all()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()

    # -- internals ----------------------------------------------------------

    def _due_at(self, key: Hashable) -> float:
        return min(self._last[key] + self.debounce, self._first[key] + self.max_wait)

    def _next_wake(self) -> float | None:
        """Under self._lock: when the next flush may happen (None if idle)."""
        if not self._first:
            return None
        earliest = min(self._due_at(k) for k in self._first)
        return max(earliest, self._last_flush + self.min_interval)

    def _take_due(self, now: float) -> tuple[set, float | None]:
        """Under self._lock: remove and return due keys, and the next deadline."""
        if not self._first:
            return set(), None
        horizon = now + self.slack
        if horizon < self._last_flush + self.min_interval:
            return set(), self._next_wake()
        batch = {k for k in self._first if self._due_at(k) <= horizon}
        if batch:
            ride = now - self.debounce
            batch.update(k for k, first in self._first.items() if first <= ride)
            for k in batch:
                del self._first[k]
                del self._last[k]
            self._last_flush = now
        return batch, self._next_wake()

    def _deliver(self, batch: set) -> None:
        try:
            self._callback(batch)
        except Exception:
            log.exception("debounced callback failed")

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._closed and not self._first:
                    self._cond.wait()
                if self._closed:
                    return
                wake = self._next_wake()
                delay = (wake if wake is not None else self._clock()) - self._clock()
                if delay > self.slack:
                    # Only close() or the first key after idle notify us, and a
                    # new key is never due before existing ones, so sleeping to
                    # the next wake-up cannot miss anything (no busy spin).
                    self._cond.wait(delay)
                    continue
            self.pump()
