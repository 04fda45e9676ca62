"""harn_ls.watch.debounce.KeyedDebouncer: per-key coalescing, max wait, flush and close,
on a fake clock (exact) and on its real background thread (generous waits).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from harn_ls.watch.debounce import KeyedDebouncer

ARRIVE = 10.0  # seconds to wait for something that must arrive


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


# ---------------------------------------------------------------------------
# KeyedDebouncer — fake clock
# ---------------------------------------------------------------------------


def _fake(debounce=0.15, max_wait=1.0):
    clock = FakeClock()
    out: list[set] = []
    d = KeyedDebouncer(out.append, debounce, max_wait, clock=clock, start=False)
    return clock, out, d


def test_debouncer_trailing_coalesces_one_key():
    clock, out, d = _fake()
    for _ in range(50):
        d.touch("a")
        clock.advance(0.001)
    assert d.pump() is not None and out == []
    clock.advance(0.10)  # last touch + 0.101 < debounce - slack
    d.pump()
    assert out == []
    clock.advance(0.05)
    assert d.pump() is None
    assert out == [{"a"}]


def test_debouncer_max_wait_bounds_continuous_touches():
    clock, out, d = _fake(debounce=0.15, max_wait=1.0)
    flush_times = []
    for _ in range(300):  # 3 s of touches every 10 ms: debounce never expires
        d.touch("f")
        clock.advance(0.01)
        n = len(out)
        d.pump()
        if len(out) > n:
            flush_times.append(clock())
    assert len(out) == 3
    gaps = [b - a for a, b in zip([1000.0] + flush_times, flush_times, strict=False)]
    assert all(0.95 <= g <= 1.02 for g in gaps), gaps


def test_debouncer_keys_are_independent():
    clock, out, d = _fake()
    d.touch("a")
    clock.advance(0.1)
    d.touch("b")
    clock.advance(0.05)
    d.pump()
    assert out == [{"a"}]  # b is pending only 50 ms: not due, too young to ride along
    clock.advance(0.1)
    d.pump()
    assert out == [{"a"}, {"b"}]


def test_debouncer_batches_all_due_keys_and_long_pending_ones():
    clock, out, d = _fake(debounce=0.15, max_wait=1.0)
    # a: appended to for ever from t=0; b: from t=0.5. At t=1.0 a hits max
    # wait; b (pending 0.5 s >= debounce) rides along: one callback, not two.
    for i in range(100):
        d.touch("a")
        if i >= 50:
            d.touch("b")
        clock.advance(0.01)
        d.pump()
    assert out == [{"a", "b"}]
    for k in "xyz":  # touched in the same instant -> one batch
        d.touch(k)
    clock.advance(0.2)
    d.pump()
    assert out[-1] == {"a", "b", "x", "y", "z"}


def test_debouncer_min_interval_merges_staggered_deadlines():
    clock, out, d = _fake(debounce=0.15, max_wait=1.0)
    assert d.min_interval == 0.075
    # A slow writer touches 40 files once each, 10 ms apart: 40 distinct
    # deadlines. Without a floor that is ~1 callback per slack window.
    times = []
    for i in range(40):
        d.touch(f"f{i}")
        clock.advance(0.01)
        n = len(out)
        d.pump()
        if len(out) > n:
            times.append(clock())
    for _ in range(100):
        clock.advance(0.01)
        n = len(out)
        d.pump()
        if len(out) > n:
            times.append(clock())
    assert set().union(*out) == {f"f{i}" for i in range(40)}
    assert all(b - a >= 0.075 - 0.02 - 1e-9 for a, b in zip(times, times[1:], strict=False)), times
    assert len(out) <= 8, [len(b) for b in out]  # ~ span / min_interval; ~15 without the floor
    # a lone touch long after the last flush is not delayed by the floor
    clock.advance(5)
    d.touch("late")
    clock.advance(0.15)
    d.pump()
    assert out[-1] == {"late"}


def test_debouncer_flush_now_close_and_callback_errors(caplog):
    clock = FakeClock()
    calls: list[set] = []

    def cb(keys):
        calls.append(keys)
        if len(calls) == 1:
            raise RuntimeError("boom")

    d = KeyedDebouncer(cb, 0.15, 1.0, clock=clock, start=False)
    d.touch("a")
    with caplog.at_level(logging.ERROR):
        d.flush_now()
    assert calls == [{"a"}] and "debounced callback failed" in caplog.text
    d.touch("b")
    d.flush_now()  # still alive after a failing callback
    assert calls[-1] == {"b"}
    d.touch("c")
    d.close()  # drops pending
    d.touch("d")  # ignored after close
    clock.advance(5)
    d.pump()
    assert calls == [{"a"}, {"b"}] and d.pending == 0


def test_debouncer_rejects_bad_timings():
    with pytest.raises(ValueError):
        KeyedDebouncer(lambda k: None, debounce=1.0, max_wait=0.5, start=False)


# ---------------------------------------------------------------------------
# KeyedDebouncer — real thread
# ---------------------------------------------------------------------------


def test_debouncer_thread_many_touches_one_batch():
    got: list[tuple[float, set]] = []
    done = threading.Event()

    def cb(keys):
        got.append((time.monotonic(), keys))
        done.set()

    d = KeyedDebouncer(cb, debounce=0.3, max_wait=5.0)
    try:
        t0 = time.monotonic()
        keys = [f"k{i}" for i in range(100)]
        for _ in range(50):  # 5000 touches, round robin: every key's last touch is in the last round
            for k in keys:
                d.touch(k)
        t_last = time.monotonic()
        assert done.wait(ARRIVE)
        time.sleep(0.5)  # nothing else may follow
        assert len(got) == 1
        assert got[0][1] == set(keys)
        assert got[0][0] - t_last >= 0.3 - 0.02 - 0.005  # trailing debounce (minus slack)
        assert t_last - t0 < 0.3, "touch loop too slow for this assertion"
    finally:
        d.close()


def test_debouncer_thread_max_wait_under_continuous_touches():
    got: list[float] = []
    touched: list[float] = []  # the clock as each touch read it: when the debouncer saw the touch
    toucher = threading.get_ident()

    def clock() -> float:
        now = time.monotonic()
        if threading.get_ident() == toucher:
            touched.append(now)
        return now

    d = KeyedDebouncer(lambda keys: got.append(time.monotonic()), debounce=0.15, max_wait=0.5, clock=clock)
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.6:
            d.touch("grow.jsonl")
            time.sleep(0.02)
        end = time.monotonic()
        time.sleep(0.4)
        during = [t for t in got if t <= end]
        assert len(during) >= 4, got
        gaps = [b - a for a, b in zip([t0] + during, during, strict=False)]
        assert max(gaps) <= 0.5 + 0.35, gaps
        # Not flushing early/more often than max_wait: each flush came max_wait after the one before, or
        # after a pause in the touches longer than the debounce (a busy machine can hold the toucher
        # up that long; then the trailing debounce is due, and the flush is right).
        for before, flush in zip([t0] + during, during, strict=False):
            pause = flush - max(t for t in touched if t <= flush)
            assert flush - before >= 0.5 - 0.05 or pause >= 0.15 - 0.02 - 0.005, (gaps, round(pause, 3))
    finally:
        d.close()


def test_debouncer_thread_flush_now_while_idle_and_close_joins():
    got: list[set] = []
    d = KeyedDebouncer(got.append, debounce=5.0, max_wait=10.0)
    d.flush_now()  # idle: must not deadlock against the waiting thread
    d.touch("a")
    d.flush_now()
    assert got == [{"a"}]
    d.touch("b")
    t = d._thread
    d.close()
    assert t is not None and not t.is_alive()
    assert got == [{"a"}]


def test_debouncer_touch_many_shares_deadline_and_close_flush_delivers():
    clock, out, d = _fake(debounce=0.15, max_wait=1.0)
    d.touch_many(["a", "b", "a"])
    assert d.pending == 2
    deadline = d.pump()
    assert out == [] and deadline is not None and abs(deadline - (clock() + 0.15)) < 1e-9
    clock.advance(0.1)
    d.touch("b")  # b's trailing deadline moves (but b rides along once pending longer than debounce)
    clock.advance(0.06)
    d.pump()
    assert out == [{"a", "b"}] and d.pending == 0
    d.touch_many([])  # nothing new: no-op
    assert d.pump() is None
    clock.advance(1.0)
    d.touch_many(["c", "d"])
    d.close(flush=True)  # pending keys are delivered, not dropped
    assert out == [{"a", "b"}, {"c", "d"}] and d.pending == 0
    d.touch_many(["e"])  # after close: ignored
    assert d.pending == 0
