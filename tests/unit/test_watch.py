"""harn_ls.watch.observer: StateWatcher against real files and the real watchdog
observer (the debouncer it drives is tested in test_debounce.py).

Arrival waits are generous (loaded CI boxes); coalescing is asserted exactly
where the timing makes it deterministic.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import statistics
import threading
import time

import pytest

from harn_ls.formats.paths import resolve
from harn_ls.watch.observer import StateWatcher, is_ignored_name
from tests.helpers.watch import roots_watched

ARRIVE = 10.0  # seconds to wait for something that must arrive


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


class Recorder:
    """Collects on_batch calls with arrival times."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, set[str], bool]] = []
        self._cond = threading.Condition()

    def __call__(self, paths: set[str], rescan: bool) -> None:
        with self._cond:
            self.batches.append((time.monotonic(), set(paths), rescan))
            self._cond.notify_all()

    def wait_for(self, pred, timeout: float = ARRIVE) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def seen(self) -> set[str]:
        with self._cond:
            return set().union(*(b[1] for b in self.batches)) if self.batches else set()

    def wait_path(self, path: str, timeout: float = ARRIVE) -> bool:
        return self.wait_for(lambda: any(path in b[1] for b in self.batches), timeout)

    def full_rescans(self) -> int:
        with self._cond:
            return sum(1 for _, p, r in self.batches if r and not p)

    def count(self) -> int:
        with self._cond:
            return len(self.batches)

    def clear(self) -> None:
        with self._cond:
            self.batches.clear()

    def quiet(self, seconds: float) -> None:
        """Wait until no batch arrived for `seconds`."""
        last = -1
        while True:
            time.sleep(seconds)
            n = self.count()
            if n == last:
                return
            last = n


def project(tmp_path, *, harn: bool = True):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "harn.toml").write_text("[package]\nname='p'\n")
    if harn:
        (root / ".harn" / "memory" / "ns").mkdir(parents=True)
        (root / ".harn" / "checkpoints").mkdir()
    return root, resolve(str(root), env={}, home=str(tmp_path / "home"))


def append(path, text="x\n") -> None:
    with open(path, "a") as fh:
        fh.write(text)


@pytest.fixture
def watcher_factory():
    made: list[StateWatcher] = []

    def make(paths, rec, **kw) -> StateWatcher:
        w = StateWatcher(paths, rec, **kw)
        made.append(w)
        w.start()
        return w

    yield make
    for w in made:
        w.stop()


# ---------------------------------------------------------------------------
# StateWatcher — real files, real observer
# ---------------------------------------------------------------------------


def test_ignore_names():
    for name in ["r.json.tmp", "x.agent_state_tmp.1", ".agent_state_meta", "s.sqlite.harn-init.lock", "s.sqlite-shm"]:
        assert is_ignored_name(name), name
    for name in ["r.json", "events.jsonl", "session-store.sqlite", "session-store.sqlite-wal", "SKILL.md"]:
        assert not is_ignored_name(name), name


def test_single_write_and_atomic_rename(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec)
    assert w.watching and str(root / ".harn") in roots_watched(w)
    ev = root / ".harn" / "memory" / "ns" / "events.jsonl"
    append(ev)
    assert rec.wait_path(str(ev))
    ck_tmp = root / ".harn" / "checkpoints" / "pipe.json.tmp"
    ck = root / ".harn" / "checkpoints" / "pipe.json"
    ck_tmp.write_text("{}")
    os.rename(ck_tmp, ck)
    assert rec.wait_path(str(ck))
    rec.quiet(0.4)
    assert str(ck_tmp) not in rec.seen()
    ck.unlink()
    rec.clear()
    assert rec.wait_path(str(ck))  # deletions are reported too


def test_ignore_rules(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    watcher_factory(paths, rec)
    h = root / ".harn"
    ignored = [
        h / "run.json.tmp",
        h / "store.agent_state_tmp",
        h / "sess" / ".agent_state_meta" / "m.json",
        h / "sess" / "x.agent_state_tmp.d" / "f.json",
        h / "session-store.sqlite.harn-init.lock",
        h / "session-store.sqlite-shm",
        h / "memory" / "ns" / "vectors" / "model" / "ab12.json",
    ]
    kept = [h / "session-store.sqlite", h / "session-store.sqlite-wal", h / "memory" / "ns" / "events.jsonl"]
    for p in ignored + kept:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("data")
    sentinel = h / "checkpoints" / "zz.json"
    sentinel.write_text("{}")
    assert rec.wait_path(str(sentinel))
    rec.quiet(0.4)
    seen = rec.seen()
    for p in kept:
        assert str(p) in seen, p
    for p in ignored:
        assert str(p) not in seen, p
    assert not any("/vectors" in s for s in seen), seen  # not even the directories


def test_real_watcher_coalesces_appends(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    watcher_factory(paths, rec, debounce=0.3, max_wait=5.0)
    ev = root / ".harn" / "memory" / "ns" / "events.jsonl"
    with open(ev, "a") as fh:
        for i in range(500):
            fh.write(f'{{"i": {i}}}\n')
            fh.flush()
    assert rec.wait_path(str(ev))
    rec.quiet(0.6)
    assert rec.count() == 1, rec.batches
    assert rec.batches[0][1] == {str(ev)} and rec.batches[0][2] is False


def test_max_wait_under_continuous_appends(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    max_wait = 0.6
    watcher_factory(paths, rec, debounce=0.15, max_wait=max_wait)
    ev = root / ".harn" / "memory" / "ns" / "events.jsonl"
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.2:
        append(ev)
        time.sleep(0.02)
    end = time.monotonic()
    rec.quiet(0.5)
    arrivals = [t for t, p, _ in rec.batches if str(ev) in p and t <= end + 0.05]
    assert len(arrivals) >= 4, arrivals
    gaps = [b - a for a, b in zip([t0] + arrivals, arrivals, strict=False)]
    print(f"\nmax-wait gaps (max_wait={max_wait}s): {[round(g, 3) for g in gaps]}")
    assert max(gaps) <= max_wait + 0.4, gaps


def test_root_appearing_after_start(tmp_path, watcher_factory):
    root, paths = project(tmp_path, harn=False)
    rec = Recorder()
    w = watcher_factory(paths, rec, health_interval=5.0)  # must not rely on the periodic check
    assert w.watching and roots_watched(w) == []
    ev = root / ".harn" / "memory" / "ns" / "events.jsonl"
    ev.parent.mkdir(parents=True)
    append(ev)  # written before (or while) the new watch is armed
    assert rec.wait_path(str(ev))
    assert any(r and str(root / ".harn") in p for _, p, r in rec.batches)  # root reported with rescan
    assert str(root / ".harn") in roots_watched(w)
    rec.clear()
    append(ev)
    assert rec.wait_path(str(ev))  # and now watched normally
    # .harn-runs appears too; run records land via .tmp + rename (§G)
    runs = root / ".harn-runs"
    runs.mkdir()
    assert rec.wait_for(lambda: str(runs) in roots_watched(w))
    rec.clear()
    tmp = runs / "run_1.json.tmp"
    tmp.write_text("{}")
    os.rename(tmp, runs / "run_1.json")
    llm = runs / "run_1-llm" / "llm_transcript.jsonl"
    llm.parent.mkdir()
    append(llm)
    assert rec.wait_path(str(runs / "run_1.json"))
    assert rec.wait_path(str(llm))
    rec.quiet(0.4)
    assert str(tmp) not in rec.seen()


def test_deep_root_appearing(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec, health_interval=5.0)
    skill = root / ".claude" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\n---\n")
    assert rec.wait_path(str(skill))
    assert str(root / ".claude" / "skills") in roots_watched(w)


def test_root_deleted_and_recreated(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec)
    h = root / ".harn"
    append(h / "memory" / "ns" / "events.jsonl")
    assert rec.wait_path(str(h / "memory" / "ns" / "events.jsonl"))
    rec.clear()
    shutil.rmtree(h)
    assert rec.wait_for(lambda: any(r and str(h) in p for _, p, r in rec.batches))
    assert rec.wait_for(lambda: str(h) not in roots_watched(w))
    rec.clear()
    ck = h / "checkpoints" / "a.json"
    ck.parent.mkdir(parents=True)
    ck.write_text("{}")
    assert rec.wait_path(str(ck))
    assert str(h) in roots_watched(w)
    rec.clear()
    ck.write_text('{"a": 1}')  # the non-atomic rewrite of §B.3
    assert rec.wait_path(str(ck))
    # again, quickly: delete and recreate in one go
    rec.clear()
    shutil.rmtree(h)
    ev = h / "memory" / "ns2" / "events.jsonl"
    ev.parent.mkdir(parents=True)
    append(ev)
    assert rec.wait_path(str(ev))
    rec.clear()
    append(ev)
    assert rec.wait_path(str(ev))


def test_root_renamed_away_is_rearmed(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec)
    h = root / ".harn"
    os.rename(h, root / ".harn.old")
    assert rec.wait_for(lambda: str(h) not in roots_watched(w))
    ev = h / "memory" / "ns" / "events.jsonl"
    ev.parent.mkdir(parents=True)
    append(ev)
    assert rec.wait_path(str(ev))
    rec.clear()
    append(root / ".harn.old" / "memory" / "ns" / "stale.jsonl")  # no longer ours
    append(ev)
    assert rec.wait_path(str(ev))
    rec.quiet(0.4)
    assert not any(".harn/memory/ns/stale.jsonl" in s or ".harn.old" in s for s in rec.seen()), rec.seen()


def test_directory_rename_flags_rescan(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    ev = root / ".harn" / "memory" / "ns" / "events.jsonl"
    append(ev)
    rec = Recorder()
    watcher_factory(paths, rec)
    new = root / ".harn" / "memory" / "renamed"
    os.rename(ev.parent, new)
    assert rec.wait_for(lambda: any(r and str(new) in p for _, p, r in rec.batches))
    seen = rec.seen()
    assert str(ev.parent) in seen and str(new / "events.jsonl") in seen
    rec.clear()
    append(new / "events.jsonl")  # the renamed namespace is still watched
    assert rec.wait_path(str(new / "events.jsonl"))
    rec.clear()
    (root / ".harn" / "memory" / "fresh").mkdir()
    assert rec.wait_for(lambda: any(r and str(root / ".harn" / "memory" / "fresh") in p for _, p, r in rec.batches))


def test_harn_toml_change_reported(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    watcher_factory(paths, rec)
    (root / "README.md").write_text("not state")
    append(root / "harn.toml", "[skills]\n")
    assert rec.wait_path(str(root / "harn.toml"))
    rec.quiet(0.3)
    assert str(root / "README.md") not in rec.seen()


def test_burst_of_twenty_thousand_appends(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec)
    mem = root / ".harn" / "memory"
    files = [mem / f"ns{i % 25}" / f"f{i}.jsonl" for i in range(500)]
    for d in {f.parent for f in files}:
        d.mkdir(exist_ok=True)
    t0 = time.monotonic()
    for n in range(20000):
        with open(files[n % 500], "a") as fh:
            fh.write('{"n": %d}\n' % n)  # noqa: UP031 (a JSON template: % keeps its braces as they are)
    burst = time.monotonic() - t0
    want = {str(f) for f in files}
    ok = rec.wait_for(lambda: want <= rec.seen() or rec.full_rescans() > 0, timeout=30)
    rec.quiet(1.2)
    assert ok, f"missing {len(want - rec.seen())} paths"
    n_cb = rec.count()
    span = rec.batches[-1][0] - t0
    print(f"\nburst: 20000 appends / 500 files written in {burst:.2f}s, delivered over {span:.2f}s -> "
          f"{n_cb} callbacks, full rescans={rec.full_rescans()}, overflow signals={w.overflows}")
    # Unloaded: ~1 per max_wait plus a trailing one. Loaded (slow writer, each
    # file touched once per > debounce): bounded by the min_interval floor.
    assert n_cb <= 3 + span / (0.15 / 2), n_cb
    assert n_cb <= 40, n_cb


def test_inotify_overflow_requests_full_rescan(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec)
    if w.polling:
        pytest.skip("inotify unavailable")
    fd = getattr(w._observer, "_inotify_fd", None)
    if fd is None or not hasattr(fd, "_lock"):
        pytest.skip("watchdog internals changed: cannot stall the inotify reader")
    try:
        queued = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    except OSError:
        queued = 16384
    a = root / ".harn" / "checkpoints" / "a.json"
    b = root / ".harn" / "checkpoints" / "b.json"
    fa = os.open(a, os.O_WRONLY | os.O_CREAT)
    fb = os.open(b, os.O_WRONLY | os.O_CREAT)
    # Stall watchdog's reader thread, then queue more (distinct, so the kernel
    # cannot merge them) events than the kernel keeps.
    with fd._lock:
        for _ in range(queued // 2 + 4096):
            os.write(fa, b"x")
            os.write(fb, b"y")
    os.close(fa)
    os.close(fb)
    assert rec.wait_for(lambda: rec.full_rescans() > 0, timeout=20), rec.batches[-3:]
    assert w.overflows >= 1
    # still watching afterwards. Each watch hears of the overflow (watchdog's EventsLostEvent, queued
    # behind the flood), so more full rescans may follow the first, and a write that falls into the
    # same debounce window is covered by that rescan rather than named: write until it is named.
    c = root / ".harn" / "checkpoints" / "c.json"
    deadline = time.monotonic() + ARRIVE
    seen = False
    while not seen and time.monotonic() < deadline:
        rec.clear()
        c.write_text(f"{{\"t\": {time.monotonic()}}}")
        seen = rec.wait_path(str(c), timeout=1.0)
    assert seen


def test_emitter_crash_rescans_and_rearms(tmp_path, watcher_factory, monkeypatch):
    from watchdog.observers import inotify

    root, paths = project(tmp_path)
    rec = Recorder()
    w = watcher_factory(paths, rec, health_interval=0.2)
    if w.polling:
        pytest.skip("inotify unavailable")
    real = inotify.InotifyEmitter.build_and_queue_event
    fired = []

    def boom(self, event, **kw):
        if not fired:
            fired.append(1)
            raise RuntimeError("emitter bug")
        return real(self, event, **kw)

    monkeypatch.setattr(inotify.InotifyEmitter, "build_and_queue_event", boom)
    append(root / ".harn" / "memory" / "ns" / "events.jsonl")
    assert rec.wait_for(lambda: rec.full_rescans() > 0)
    monkeypatch.setattr(inotify.InotifyEmitter, "build_and_queue_event", real)
    ck = root / ".harn" / "checkpoints" / "after.json"

    def rearmed():
        ck.write_text("{}")  # keep writing: the new watch may not be armed yet
        return str(ck) in rec.seen()

    deadline = time.monotonic() + ARRIVE
    while not rearmed() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert str(ck) in rec.seen()


def test_watch_limit_falls_back_to_polling(tmp_path, watcher_factory, monkeypatch, caplog):
    from watchdog.observers.inotify import InotifyObserver

    def no_watches(self, *a, **kw):
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(InotifyObserver, "schedule", no_watches)
    root, paths = project(tmp_path)
    rec = Recorder()
    with caplog.at_level(logging.WARNING, logger="harn_ls.watch.observer"):
        w = watcher_factory(paths, rec, poll_interval=0.2)
    assert w.polling and w.watching and "falling back to polling" in caplog.text
    assert str(root / ".harn") in roots_watched(w)
    ev = root / ".harn" / "memory" / "ns" / "events.jsonl"
    append(ev)
    assert rec.wait_path(str(ev))
    (root / ".harn-runs").mkdir()  # new roots are picked up while polling too
    rr = root / ".harn-runs" / "run_2.json"
    rr.write_text("{}")
    assert rec.wait_path(str(rr))


def test_watch_limit_without_fallback_raises(tmp_path, monkeypatch):
    from watchdog.observers.inotify import InotifyObserver

    def no_watches(self, *a, **kw):
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(InotifyObserver, "schedule", no_watches)
    _, paths = project(tmp_path)
    w = StateWatcher(paths, Recorder(), poll_fallback=False)
    with pytest.raises(OSError):
        w.start()
    w.stop()


def test_start_stop_idempotent_and_threads_joined(tmp_path):
    _, paths = project(tmp_path)
    before = set(threading.enumerate())
    w = StateWatcher(paths, Recorder())
    assert not w.watching
    w.start()
    w.start()
    assert w.watching
    w.stop()
    w.stop()
    assert not w.watching
    time.sleep(0.1)
    leftover = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert leftover == [], leftover


def test_latency_single_write(tmp_path, watcher_factory):
    root, paths = project(tmp_path)
    got: dict[str, float] = {}
    cond = threading.Condition()

    def on_batch(ps, rescan):
        now = time.monotonic()
        with cond:
            for p in ps:
                got.setdefault(p, now)
            cond.notify_all()

    debounce = 0.15
    watcher_factory(paths, on_batch, debounce=debounce)
    lat = []
    for i in range(30):
        p = str(root / ".harn" / "checkpoints" / f"lat{i}.json")
        t = time.monotonic()
        with open(p, "w") as fh:
            fh.write('{"k": 1}')
        with cond:
            assert cond.wait_for(lambda p=p: p in got, ARRIVE)
        lat.append(got[p] - t)
        time.sleep(0.05)
    lat.sort()
    p50 = statistics.median(lat) * 1000
    p95 = lat[int(0.95 * (len(lat) - 1))] * 1000
    print(f"\nwrite -> on_batch latency over {len(lat)} writes (debounce {debounce * 1000:.0f} ms): "
          f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {lat[-1] * 1000:.1f} ms")
    assert debounce * 1000 - 25 <= p50 <= debounce * 1000 + 100
