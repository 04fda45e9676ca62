"""Live watching of a Harn project's on-disk state (harn-formats §K.1).

No pygls here: the language server and `harn-ls watch` both drive this.

`StateWatcher` is a watchdog observer over `ProjectPaths.watch_roots()`,
mapping events to file paths, dropping the files Harn rewrites as scratch
(§K.1 ignore list), re-arming roots that appear, vanish or get replaced, and
turning observer trouble (inotify queue overflow, a crashed emitter) into a
full rescan. Events are coalesced by `harn_ls.watch.debounce.KeyedDebouncer`.

`on_batch(paths, rescan)` contract:
  * `(paths, False)` — these files changed (created, modified, deleted or
    renamed to/from); re-read them.
  * `(paths, True)` with paths non-empty — as above, plus some entries are
    directories that were created, deleted or renamed (or a root appeared or
    vanished): rescan those directories.
  * `(set(), True)` — events were lost; rescan everything.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Callable

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    EventsLostEvent,  # public since watchdog 7.1.1 (the floor in pyproject.toml)
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

from harn_ls.formats.paths import ProjectPaths
from harn_ls.formats.problems import Problem, Severity
from harn_ls.util.portable import linux_facility
from harn_ls.util.safe_read import is_under
from harn_ls.watch.debounce import KeyedDebouncer

try:  # inotify exists on Linux only; elsewhere we poll.
    from watchdog.observers.inotify import InotifyObserver
except Exception:  # pragma: no cover - non-Linux
    InotifyObserver = None  # type: ignore[assignment,misc]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# Ignore rules (§K.1)
# ---------------------------------------------------------------------------


def is_ignored_name(name: str) -> bool:
    """Scratch files Harn writes next to real state; never worth a refresh."""
    return (
        name.endswith(".tmp")  # run records (§G) and other atomic-rename temps
        or ".agent_state_tmp" in name
        or name == ".agent_state_meta"
        or name.endswith(".harn-init.lock")
        or name.endswith("-shm")  # SQLite shared memory: changes on every read
    )


# Marker keys for the debouncer (tuples never collide with str paths).
_RESCAN = ("<rescan>",)
_FULL = ("<full-rescan>",)

# Events we ask the kernel for. No open/close/access/attrib: reading state
# files ourselves must not feed back into the watcher, and a smaller mask
# keeps the inotify queue from overflowing.
_ROOT_FILTER = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    EventsLostEvent,  # listed, or the emitter drops it
]
_WALK_CAP = 20000  # files reported one by one when a root appears; beyond, rescan only
# Total directories the recursive watches of one project may cover (one inotify watch each). Harn state is
# a few hundred directories; a project over budget gets a problem and its biggest roots are not watched live.
WATCH_BUDGET = 4096
CODE_WATCH_BUDGET = "HL-WATCH-002"  # the watch budget is exhausted: this root is not watched live


def _count_dirs(root: str, limit: int) -> int:
    """Directories at and below `root` (links not followed), counting stops past `limit`."""
    n = 0
    for _dirpath, dirnames, _files in os.walk(root, followlinks=False):
        n += 1
        if n > limit:
            return n
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(_dirpath, d))]
    return n


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _event_paths(event: FileSystemEvent) -> list[str]:
    """The event's source and (a move's) destination, the ones it has."""
    return [p for p in (os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or "")) if p]


def _is_watch_limit(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EMFILE)


class _Handler(FileSystemEventHandler):
    """Hands each event to `fn`; `EventsLostEvent` (watchdog's public signal for an inotify queue
    overflow, after it has re-armed its own recursive watches) to `on_lost` instead."""

    def __init__(self, fn: Callable[[FileSystemEvent], None], on_lost: Callable[[], None]) -> None:
        self._fn = fn
        self._on_lost = on_lost

    def dispatch(self, event: FileSystemEvent) -> None:
        try:
            if isinstance(event, EventsLostEvent):
                self._on_lost()
            else:
                self._fn(event)
        except Exception:  # never kill the observer thread
            log.exception("watch handler failed on %r", event)


# ---------------------------------------------------------------------------
# StateWatcher
# ---------------------------------------------------------------------------


class StateWatcher:
    """Watch a project's state roots and report coalesced changes.

    * Each existing root of `paths.watch_roots()` gets a recursive watch.
    * The project root, and the nearest existing ancestor of each missing
      root, get a non-recursive "anchor" watch so a root that appears later
      (`.harn/` from a first run, `.harn-runs/`) is picked up: it is then
      watched recursively and reported with `rescan=True` together with the
      files already in it.
    * A root that is deleted or replaced (`rm -rf .harn`, `mv .harn x`) is
      reported with `rescan=True` and re-armed when it comes back.
    * `harn.toml` in the project root is reported (roots may have changed).
    * Inotify queue overflow or a crashed emitter → `on_batch(set(), True)`.
    * If inotify cannot be used (watch/instance limit), fall back to polling
      when `poll_fallback` (the default), with a warning.

    `on_batch` runs on the debouncer thread; keep it short or hand off.
    """

    def __init__(
        self,
        paths: ProjectPaths,
        on_batch: Callable[[set[str], bool], None],
        debounce: float = 0.15,
        max_wait: float = 1.0,
        *,
        poll_fallback: bool = True,
        poll_interval: float = 1.0,
        health_interval: float = 1.0,
        watch_budget: int | None = None,
    ) -> None:
        self.paths = paths
        self.watch_budget = WATCH_BUDGET if watch_budget is None else watch_budget
        self._dirs: dict[str, int] = {}  # root -> directories its recursive watch covers
        self._skipped: dict[str, tuple[tuple[int, int] | None, Problem | None]] = {}  # root -> (identity, why)
        # Problems about watching (a root out of the project, the budget); the list object stays the same.
        self.problems: list[Problem] = []
        self._on_batch = on_batch
        self._poll_fallback = poll_fallback
        self._force_polling = InotifyObserver is None or not linux_facility("inotify")
        self._poll_interval = poll_interval
        self._health_interval = health_interval
        self._project_root = os.path.abspath(paths.project_root)
        self._harn_toml = os.path.join(self._project_root, "harn.toml")
        # Every candidate root; each is checked (inside the project? within budget?) when armed.
        self._roots: tuple[str, ...] = tuple(os.path.abspath(r) for r in paths.watch_roots(confined=False))
        # Longest first, so a path maps to its innermost root.
        self._roots_by_len = sorted(self._roots, key=len, reverse=True)
        self._memory_roots = tuple(
            {os.path.abspath(paths.memory_root), os.path.abspath(paths.pattern_memory_root)}
        )
        self._debouncer = KeyedDebouncer(self._flush, debounce, max_wait, start=False)
        self._lock = threading.Lock()  # guards watch bookkeeping; never taken in event handlers
        self._observer: BaseObserver | None = None
        self._root_watches: dict[str, tuple[ObservedWatch, tuple[int, int] | None]] = {}
        self._anchor_watches: dict[str, tuple[ObservedWatch, tuple[int, int] | None]] = {}
        # Roots without a live watch; replaced wholesale so handlers read it lock-free.
        self._missing: frozenset[str] = frozenset(self._roots)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._started = False
        self._stopped = False
        self.polling = False
        self.overflows = 0  # how many overflow/error signals were seen (diagnostics)
        self._last_overflow_warning = 0.0

    # -- public -----------------------------------------------------------

    @property
    def watching(self) -> bool:
        obs = self._observer
        return self._started and not self._stopped and obs is not None and obs.is_alive()

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._debouncer = KeyedDebouncer(self._flush, self._debouncer.debounce, self._debouncer.max_wait)
        try:
            with self._lock:
                self._observer = self._new_observer()
                self._observer.start()
                self._reconcile_locked(initial=True)
        except BaseException:
            self.stop()  # don't leave the observer / debouncer threads behind
            raise
        self._supervisor = threading.Thread(target=self._supervise, name="harn-ls-watch", daemon=True)
        self._supervisor.start()

    def stop(self) -> None:
        if not self._started or self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        self._wake.set()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join()
        with self._lock:
            obs, self._observer = self._observer, None
            self._root_watches.clear()
            self._anchor_watches.clear()
        if obs is not None:
            obs.stop()
            if obs is not threading.current_thread():
                obs.join(timeout=5)
        self._debouncer.close()

    # -- event side (observer / inotify threads; must not take self._lock) --

    def _root_of(self, path: str) -> str | None:
        for r in self._roots_by_len:
            if is_under(path, r):
                return r
        return None

    def _ignored(self, path: str) -> bool:
        if is_ignored_name(os.path.basename(path)):
            return True
        root = self._root_of(path)
        if root is None:
            return False
        rel = path[len(root) + 1 :].split(os.sep) if path != root else []
        if any(".agent_state_tmp" in p or p == ".agent_state_meta" for p in rel[:-1]):
            return True
        wt = os.path.join(os.path.abspath(self.paths.state_root), "worktrees")
        if is_under(path, wt) and len(path[len(wt):].split(os.sep)) > 4:
            return True  # inside an agent worktree checkout (§O.4): only its top levels matter
        for mem in self._memory_roots:
            if path != mem and is_under(path, mem):
                if "vectors" in path[len(mem) + 1 :].split(os.sep):
                    return True  # embedding cache (§C.6): bulky, not shown
        return False

    def _affects_roots(self, path: str) -> bool:
        """Is `path` a root or an ancestor of one (so it may make roots appear/vanish)?"""
        return any(is_under(r, path) for r in self._roots)

    def _on_root_event(self, event: FileSystemEvent) -> None:
        paths = _event_paths(event)
        if event.is_directory:
            if not isinstance(event, (DirCreatedEvent, DirDeletedEvent, DirMovedEvent)):
                return
            touched = [p for p in paths if not self._ignored(p)]
            if touched:
                self._debouncer.touch_many([*touched, _RESCAN])
            if any(self._affects_roots(p) or any(is_under(m, p) for m in self._missing) for p in paths):
                self._wake.set()  # a root (or a missing root's ancestor) changed
            return
        if isinstance(event, (FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent)):
            touched = [p for p in paths if not self._ignored(p)]
            if touched:
                self._debouncer.touch_many(touched)

    def _on_anchor_event(self, event: FileSystemEvent) -> None:
        for p in _event_paths(event):
            if event.is_directory:
                if self._affects_roots(p):
                    self._wake.set()
            elif p == self._harn_toml:
                self._debouncer.touch(p)

    def _on_overflow(self) -> None:
        # Every watch group hears about one overflow; warn once per burst.
        self.overflows += 1
        now = time.monotonic()
        if now - self._last_overflow_warning > 1.0:
            self._last_overflow_warning = now
            log.warning("file events were lost (inotify queue overflow); requesting a full rescan")
        self._debouncer.touch(_FULL)

    def _flush(self, keys: set) -> None:
        if _FULL in keys:
            self._on_batch(set(), True)
            return
        rescan = _RESCAN in keys
        paths = {k for k in keys if isinstance(k, str)}
        if paths or rescan:
            self._on_batch(paths, rescan)

    # -- supervisor side ----------------------------------------------------

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._health_interval)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                with self._lock:
                    if self._observer is None:
                        return
                    self._reconcile_locked(initial=False)
            except Exception:
                log.exception("watch supervisor failed; retrying")
                self._debouncer.touch(_FULL)

    def _new_observer(self) -> BaseObserver:
        if not (self._force_polling or self.polling):
            try:
                return InotifyObserver()
            except OSError as exc:
                if not (self._poll_fallback and _is_watch_limit(exc)):
                    raise
                log.warning("inotify unavailable (%s); falling back to polling every %.1fs", exc, self._poll_interval)
        self.polling = True
        return PollingObserver(timeout=self._poll_interval)

    def _switch_to_polling_locked(self, exc: OSError) -> None:
        log.warning(
            "inotify watch limit reached (%s); falling back to polling every %.1fs "
            "(raise fs.inotify.max_user_watches to avoid this)",
            exc,
            self._poll_interval,
        )
        old = self._observer
        self.polling = True
        self._restart_observer_locked()
        if old is not None:
            old.stop()
            old.join(timeout=5)

    def _restart_observer_locked(self) -> None:
        """A new observer with no watches (the reconcile re-arms them); anything between the two observers is lost."""
        self._root_watches.clear()
        self._anchor_watches.clear()
        self._observer = self._new_observer()
        self._observer.start()
        self._debouncer.touch(_FULL)

    def _schedule_locked(self, path: str, recursive: bool) -> ObservedWatch | None:
        """Schedule a watch; None if the path vanished meanwhile."""
        assert self._observer is not None
        handler = _Handler(self._on_root_event if recursive else self._on_anchor_event, self._on_overflow)
        for _attempt in range(2):
            try:
                return self._observer.schedule(handler, path, recursive=recursive, event_filter=_ROOT_FILTER)
            except OSError as exc:
                if _is_watch_limit(exc) and self._poll_fallback and not self.polling:
                    self._switch_to_polling_locked(exc)
                    continue
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    return None
                raise
        return None

    def _unschedule_locked(self, watch: ObservedWatch) -> None:
        if self._observer is None:
            return
        with contextlib.suppress(KeyError, RuntimeError):  # already gone (emitter stopped itself, observer replaced)
            self._observer.unschedule(watch)

    def _watch_healthy_locked(self, path: str, watch: ObservedWatch, ident) -> bool:
        obs = self._observer
        if obs is None:
            return False
        alive = any(
            e.watch == watch and e.is_alive() and not e.stopped_event.is_set() for e in list(obs.emitters)
        )
        # Same inode: a renamed-away root keeps its watch but reports old paths.
        return alive and ident is not None and _identity(path) == ident

    def _emitter_crashed_locked(self, watch: ObservedWatch) -> bool:
        """An emitter of `watch` ended by an exception: not alive, yet never asked to stop (a
        deleted root's emitter stops itself, which sets its stopped event)."""
        obs = self._observer
        return obs is not None and any(
            e.watch == watch and not e.is_alive() and not e.stopped_event.is_set() for e in list(obs.emitters))

    def _reconcile_locked(self, initial: bool) -> None:
        """Bring watches in line with what exists on disk, reporting changes."""
        if self._observer is None:
            return
        if not self._observer.is_alive():
            log.warning("watch observer died; restarting it")
            self._restart_observer_locked()

        lost: set[str] = set()
        appeared: set[str] = set()
        for path, (watch, ident) in list(self._root_watches.items()):
            if not self._watch_healthy_locked(path, watch, ident):
                if self._emitter_crashed_locked(watch):
                    # its emitter thread ended without being stopped (an exception in watchdog's
                    # reader): what it would have reported since is lost
                    log.warning("watch of %s failed; re-arming it and rescanning", path)
                    self.overflows += 1
                    self._debouncer.touch(_FULL)
                self._unschedule_locked(watch)
                del self._root_watches[path]
                lost.add(path)
        for path, (watch, ident) in list(self._anchor_watches.items()):
            if not self._watch_healthy_locked(path, watch, ident):
                self._unschedule_locked(watch)
                del self._anchor_watches[path]

        # Loop until stable: a directory may appear between our check and the
        # anchor watch that would have reported it.
        for path in lost:
            self._dirs.pop(path, None)
        for _round in range(8):
            changed = False
            for root in self._roots:
                if root in self._root_watches or self._covered_locked(root):
                    continue
                if os.path.isdir(root):
                    ident = _identity(root)
                    if not self._admit_locked(root, ident):
                        continue
                    scheduled = self._schedule_locked(root, recursive=True)
                    if scheduled is not None:
                        self._root_watches[root] = (scheduled, ident)
                        changed = True
                        if not initial or _round > 0:
                            appeared.add(root)
            wanted = self._wanted_anchors_locked()
            for path in list(self._anchor_watches):
                if path not in wanted:
                    self._unschedule_locked(self._anchor_watches.pop(path)[0])
            for path in wanted:
                if path not in self._anchor_watches:
                    ident = _identity(path)
                    scheduled = self._schedule_locked(path, recursive=False)
                    if scheduled is not None:
                        self._anchor_watches[path] = (scheduled, ident)
                        changed = True
            if not changed:
                break
        self._missing = frozenset(r for r in self._roots if r not in self._root_watches and not self._covered_locked(r))

        for root in sorted(lost - appeared):
            log.info("watched root went away: %s", root)
        for root in sorted(lost | appeared):
            self._debouncer.touch_many([root, _RESCAN])
        for root in sorted(appeared):
            self._report_tree(root)

    def _admit_locked(self, root: str, ident) -> bool:
        """May `root` get a recursive watch? Not when it leads out of the project (a symlink that
        appeared: `.harn-runs -> /usr`), nor when it would take the project over its watch budget.
        A refusal is a problem, decided once per identity of the root (no re-walk every second)."""
        skipped = self._skipped.get(root)
        if skipped is not None and skipped[0] == ident:
            return False
        if skipped is not None:
            self._skipped.pop(root)
            if skipped[1] is not None and skipped[1] in self.problems:
                self.problems.remove(skipped[1])
        why = self.paths.root_allowed(root)
        if why is None:
            left = self.watch_budget - sum(self._dirs.values())
            n = _count_dirs(root, max(0, left))
            if n <= left:
                self._dirs[root] = n
                return True
            problem = Problem(root, 0, CODE_WATCH_BUDGET,
                              f"watch budget exceeded: {root} holds more than {left} directories (budget "
                              f"{self.watch_budget} for the whole project); not watched live — changes there "
                              "show up on the next refresh", Severity.WARNING)
            log.warning("%s", problem.message)
        else:
            # Reported by the workspace (ProjectPaths.watch_refusals), which also does not read it.
            log.warning("not watching %s", why)
            self._skipped[root] = (ident, None)
            return False
        if problem not in self.problems:
            self.problems.append(problem)
        self._skipped[root] = (ident, problem)
        return False

    def _covered_locked(self, root: str) -> bool:
        """Inside another root that already has a recursive watch."""
        return any(w != root and is_under(root, w) for w in self._root_watches)

    def _wanted_anchors_locked(self) -> set[str]:
        wanted: set[str] = set()
        if os.path.isdir(self._project_root) and not any(
            is_under(self._project_root, w) for w in self._root_watches
        ):
            wanted.add(self._project_root)
        for root in self._roots:
            if root in self._root_watches or self._covered_locked(root):
                continue
            anc = os.path.dirname(root)
            while anc and not os.path.isdir(anc):
                parent = os.path.dirname(anc)
                if parent == anc:
                    break
                anc = parent
            if anc and os.path.isdir(anc) and not any(is_under(anc, w) for w in self._root_watches):
                wanted.add(anc)
        return wanted

    def _report_tree(self, root: str) -> None:
        """Report files already inside a root that just appeared (written before our watch)."""
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not self._ignored(os.path.join(dirpath, d))]
            for name in filenames:
                p = os.path.join(dirpath, name)
                if not self._ignored(p):
                    found.append(p)
            if len(found) > _WALK_CAP:
                return  # the root + rescan flag already cover it
        self._debouncer.touch_many(found)
