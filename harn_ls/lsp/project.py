"""One workspace folder: its Workspace model, its watcher, and the single thread that touches both.

Every read and write of the model runs on the project's own worker thread,
so the event loop never blocks on file I/O and the model never sees two
writers at once. Other threads may only test whether it is loaded
(`proj.ws is None`) and read `proj.root`.

With HARN_LS_THREAD_CHECK=1 (the test suite sets it) that is enforced: any
attribute of the loaded Workspace read from another thread logs an error and
raises `ModelThreadError`.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harn_ls.cache.spans import SpanStore
from harn_ls.formats.memory import builds_here
from harn_ls.formats.problems import Problem
from harn_ls.lsp import heap
from harn_ls.model.change_kinds import ChangeSet, K
from harn_ls.model.checkpoint_versions import keep_history
from harn_ls.model.fact_spans import FactSpanCache
from harn_ls.model.workspace import Workspace
from harn_ls.recall import RecallEngine
from harn_ls.util.progress import WorkProgress
from harn_ls.watch.observer import StateWatcher

log = logging.getLogger(__name__)
THREAD_CHECK_ENV = "HARN_LS_THREAD_CHECK"
# Settle steps (upkeep after recall is ready) run once the client has been quiet this long, but
# wait no longer than the second figure for it.
SETTLE_QUIET_S = 0.05
SETTLE_MAX_WAIT_S = 0.5


class ModelThreadError(RuntimeError):
    """The model was read off its project's worker thread (only raised with HARN_LS_THREAD_CHECK=1)."""


def guard_thread(ws: Workspace, owner: int) -> None:
    """Make every attribute read of `ws` outside thread `owner` fail (debug/test mode). The object
    stays a Workspace (a per-project subclass), so nothing else about it changes."""
    def __getattribute__(self, name: str) -> Any:
        if threading.get_ident() != owner and not name.startswith("__"):
            message = f"Workspace.{name} read on thread {threading.current_thread().name!r}, not its project thread"
            log.error("model touched off its thread: %s", message)
            raise ModelThreadError(message)
        return object.__getattribute__(self, name)

    ws.__class__ = type("ThreadCheckedWorkspace", (type(ws),), {"__getattribute__": __getattribute__})


class Project:
    def __init__(self, folder_path: str, on_changes: Callable[[Project, ChangeSet], Any],
                 env_spec: tuple | None = None, workspace_folder: str | None = None) -> None:
        self.folder_path: str = folder_path  # the project's root as found (its key in server.projects)
        # the workspace folder whose search found it: whose harnState.* settings it follows (lsp/folders.py
        # settings_for); None for a project made outside a session (tests, tools)
        self.workspace_folder: str | None = workspace_folder
        # (env, env_sources, untrusted names) Harn's locations are resolved from (server.harn_env)
        self.env_spec = env_spec
        self.ws: Workspace | None = None  # set once, on the worker thread
        self._release_files: Callable[[], None] | None = None  # the model's open cache files closed (close())
        self.root: str = folder_path  # the model's root once loaded: readable from any thread
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="harn-ws")
        self._on_changes = on_changes
        self._loop: asyncio.AbstractEventLoop | None = None
        self.watcher: StateWatcher | None = None
        self.load_seconds: float = 0.0
        self.last_batch_at: float = 0.0
        # Project thread only: each file's problems as last handed to the diagnostics registry.
        self.published_problems: dict[str, tuple[Problem, ...]] = {}
        self.closed = False  # set by close(): long background work stops at its next step
        self.fact_spans = FactSpanCache()  # hover / lens spans per source file; used on the worker thread only
        self._quiet_for: Callable[[], float] | None = None  # settle_recall's: seconds since the last request
        # how far the long pieces of work are (lsp/progress.py shows them): made here, so a load started
        # before the client's `initialized` (preload) is told from its first byte
        name = os.path.basename(os.path.normpath(folder_path)) or folder_path
        self.loaded_summary = ""  # what the load found, in a line (the end of its progress)
        self.load_progress = WorkProgress(f"Harn: loading {name}")
        self.recall_progress = WorkProgress(f"Harn: recall index of {name}")
        self.settle_progress = WorkProgress(f"Harn: saving the state cache of {name}")

    @property
    def loaded(self) -> Workspace:
        """The model, for the work that only runs once the load set it (the recall warm-up, the settle,
        applying a batch): reached earlier it is a bug, named here rather than as None's missing attribute."""
        ws = self.ws
        if ws is None:
            raise RuntimeError(f"{self.folder_path}: the project's model is used before it loaded")
        return ws

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn` on the project thread, with every fact decoded (see `run_before_facts`)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._with_facts, fn, args)

    async def run_before_facts(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn` on the project thread as the model is, facts restored from the state cache
        possibly still undecoded: only for what reads no fact but their counts and problems (the
        status, the problems list, the recall index), so that start-up reaches recall-ready first."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, _keeping_builds, fn, args)

    def _with_facts(self, fn: Callable[..., Any], args: tuple) -> Any:
        if self.ws is not None:
            self._decode_facts_if_deferred()
        return _keeping_builds(fn, args)

    def _decode_facts(self) -> None:
        """Project thread: decode the facts the load left in the state cache's form (a rescan may
        leave them so again); then they live as long as the model: out of the collector's view."""
        paused_gc(self.loaded.materialize_facts)()
        gc.freeze()

    def submit(self, fn: Callable[..., Any], *args: Any):
        return self._pool.submit(self._with_facts, fn, args)

    async def load(self) -> ChangeSet:
        self._loop = asyncio.get_running_loop()

        @paused_gc
        def _load() -> ChangeSet:
            start = time.perf_counter()
            # The state cache (outside the project; off with HARN_LS_CACHE=off) spares re-reading
            # unchanged logs and rebuilding their recall index.
            # Facts of namespaces restored unchanged stay in the cache's form until the first request
            # that may read them (`run`) or the first settle step: recall is ready ~0.15 s sooner at 100k.
            env, sources, untrusted = self.env_spec or (None, None, ())
            ws = Workspace.load(self.folder_path, env=env, cache=True, defer_facts=True, keep_rows=False,
                                fold_values=True, env_sources=sources, untrusted_env=untrusted,
                                progress=self.load_progress)
            if os.environ.get(THREAD_CHECK_ENV) == "1":
                guard_thread(ws, threading.get_ident())
            self.root = ws.root
            self.ws = ws
            self._release_files = ws.file_releaser()  # (taken here: close() runs off this thread)
            self.fact_spans.store = SpanStore.open(ws.root)  # anchors of earlier runs: a first hover as fast as a warm one
            self.load_seconds = time.perf_counter() - start
            self.loaded_summary = _loaded_summary(ws, self.load_seconds)
            # The model lives as long as the server: move it out of the cyclic GC's
            # reach, or every full collection walks millions of objects (~1 s on a
            # 100k-event project) in the middle of some hover or watcher batch.
            gc.freeze()
            self._keep_checkpoint_history(None)
            heap.trim()  # the load's transient parses leave holes all over the heap
            return ChangeSet(rescanned=True, kinds={K.ROOTS})

        return await self.run(_load)

    def _keep_checkpoint_history(self, changes) -> None:
        """Record each checkpoint file's current version in the history kept outside the project (project
        thread), by the code path `harn-ls watch` uses too."""
        try:
            keep_history(self.loaded, changes)
        except Exception:  # history is a convenience: never let it break loading or a batch
            log.exception("keeping checkpoint history failed")

    async def start_watching(self) -> None:
        await self.run_before_facts(self._start_watching)

    def _start_watching(self) -> None:
        """Project thread: the watcher reads the model's paths and reports its problems into it."""
        assert self.ws is not None
        try:
            self.watcher = StateWatcher(self.ws.paths, self._on_batch_from_thread)
            self.ws.watch_problems = self.watcher.problems  # roots refused / over the watch budget, as diagnostics
            self.watcher.start()
        except Exception:  # a project without a watcher still serves everything on demand
            log.exception("cannot watch %s", self.folder_path)
            self.watcher = None

    @property
    def watching(self) -> bool:
        return bool(self.watcher is not None and getattr(self.watcher, "watching", False))

    def _on_batch_from_thread(self, paths: set[str], rescan: bool) -> None:
        """Called on the watcher's thread: apply on the project thread, then notify on the loop."""
        loop = self._loop
        if loop is None or self.ws is None:
            return

        @paused_gc
        def _apply() -> ChangeSet:
            ws = self.loaded
            try:
                # With paths, apply() itself rescans what lives below a changed directory.
                changes = ws.rescan() if rescan and not paths else ws.apply_changes(paths)
            except Exception:
                log.exception("applying changes failed; rescanning the project")
                changes = ws.rescan()
            self.last_batch_at = time.time()
            self._keep_checkpoint_history(changes)
            return changes

        fut = self._pool.submit(_keeping_builds, _apply, ())

        def _done(f) -> None:
            try:
                changes = f.result()
            except Exception:
                log.exception("rescan failed")
                changes = None
            if changes:
                asyncio.run_coroutine_threadsafe(self._notify(changes), loop)

        fut.add_done_callback(_done)

    async def _notify(self, changes: ChangeSet) -> None:
        try:
            await self._on_changes(self, changes)
        except Exception:
            log.exception("publishing changes failed")

    async def warm_recall(self, attempts: int = 3) -> None:
        """Build the recall index in short steps on the project thread, so hovers and lenses
        are served in between; restart if the memory changed meanwhile, and after a few
        restarts just build it in one go. Returns as soon as recall answers: what is left to
        do (the cache write, decoding cached records) is `settle_recall`'s."""
        progress = self.recall_progress
        for _ in range(attempts):
            generation, steps = await self.run_before_facts(lambda: (self.loaded.generation, self.loaded.recall_build_steps()))
            progress.within(0.0, 1.0)
            progress.phase("recall index", len(steps), 1.0)
            engine = RecallEngine()
            aborted = False
            for step in steps:
                def _step(step=step, engine=engine, generation=generation) -> bool:
                    if self.loaded.generation != generation:
                        return False
                    step(engine)
                    # what a step built lives as long as the index: out of the collector's view at once,
                    # or the first collection after the step walks it (~6 ms at 100k, before recallReady)
                    gc.freeze()
                    return True
                # the index is over records, not facts
                if not await self.run_before_facts(paused_gc(_step)):
                    aborted = True
                    break
                progress.step()
            if not aborted and await self.run_before_facts(lambda e=engine, g=generation: self.loaded.adopt_recall(e, g)):
                return
            await asyncio.sleep(0.3)
        await self.run_before_facts(lambda: self.loaded.recall)

    async def settle_recall(self, quiet_for: Callable[[], float] | None = None) -> None:
        """After recall is ready: write the state cache, then decode the records a cached index
        left undecoded, and move the model out of the collector's view. None of it changes an
        answer; it spares the first append batch (and a later full collection) the work.
        `quiet_for()` (seconds since the client's last request) lets every step wait for a pause
        in the client's requests: a hover behind a step also waits for the GIL, up to a switch
        interval (5 ms) per hand-over, so steps that interleave with a burst of hovers cost each
        of them several ms."""
        self._quiet_for = quiet_for
        progress = self.settle_progress
        progress.phase("decoding facts", 5, 1.0, counted=False)
        # facts the load left in the state cache's form are decoded first, as a step of their own
        if not self.closed:
            await self._wait_for_quiet()
            await self.run(self._decode_facts_if_deferred)
        progress.step(1, "restoring fact anchors")
        # the spans of the files shown in earlier runs come back next (in ~10 ms steps), before the
        # heap is frozen: the first hover or lens on one of them is then served as a warm one
        while not self.closed:
            await self._wait_for_quiet()
            if await self.run(self._restore_spans):
                break
        progress.step(1, "folding the recall index")
        if not await self._fold_recall():
            return  # the folder left the workspace meanwhile: nothing left to settle
        progress.step(1, "writing the state cache")
        for work in (_freeze_heap, self._save_cache):
            if self.closed:
                return
            await self._wait_for_quiet()
            await self.run(work)
        progress.step(1, "decoding cached records")
        await self._materialize_recall()
        progress.step(1)

    async def _wait_for_quiet(self) -> None:
        """Wait until the client has been quiet (no request, no batch applied) for SETTLE_QUIET_S,
        but at most SETTLE_MAX_WAIT_S:
        a client that never pauses still gets its settle done, a step at a time."""
        quiet_for = self._quiet_for
        if quiet_for is None:
            return
        waited = 0.0
        while waited < SETTLE_MAX_WAIT_S and not self.closed:
            # a batch just applied is followed by its notifications and, often, the client's
            # requests about it (a hover, the lenses): that counts as activity too
            gap = SETTLE_QUIET_S - min(quiet_for(), time.time() - self.last_batch_at)
            if gap <= 0:
                return
            await asyncio.sleep(gap)
            waited += gap

    async def _materialize_recall(self) -> None:
        """A cached recall index comes back lazily (records decoded on demand) and decodes all its
        records on its first change. In the server, do that now, in short steps on the project
        thread (`Workspace.recall_settle_steps`), so the first append batch after start does not
        wait for it (1M events: seconds) and requests and batches are served between the steps."""
        @paused_gc
        def _step(step) -> bool:
            done = step()
            # what it decoded lives as long as the model: out of the collector's view at once, or
            # the next full collection walks it (and the one after that, every few steps)
            gc.freeze()
            return done

        if self.closed:
            return
        for step in await self.run(lambda: self.loaded.recall_settle_steps()):
            while not self.closed:
                await self._wait_for_quiet()
                if await self.run(_step, step):
                    break
            if self.closed:
                return
        await self.run(heap.trim)  # (the decoded rows' buffers are gone)

    def _decode_facts_if_deferred(self) -> None:
        if self.loaded.deferred_fact_namespaces():
            self._decode_facts()

    def _restore_spans(self) -> bool:
        """One step of bringing back the stored fact spans (FactSpanCache.restore); True when done."""
        try:
            return self.fact_spans.restore(self.loaded)
        except Exception:  # the spans are a convenience: never let them stop the settle
            log.exception("restoring fact spans failed")
            return True

    async def _fold_recall(self) -> bool:
        """Before the save: compact each index a stepped build left with overflow postings, fold the
        deltas it left queued (a cold start at 100k: ~9k records), then compact those namespaces too,
        the heap trimmed after each index and each delta. The save did all of it at its first index
        and its own buffers came on top: ~5 MiB more peak RSS on a cold start at 100k. Results never
        depend on it. The overflow of the namespaces without a queue goes first: the fold's growth
        takes its place. Each index and each delta is a task of its own on the project thread, after
        a pause in the client's requests (as one task, ~0.8 s at 100k, a hover could wait behind it
        all). False when the project closed meanwhile."""
        if not await self._compact_recall():
            return False
        while did := await self._settle_step(lambda: self.loaded.fold_recall_delta()):
            pass
        return did is not None and await self._compact_recall()

    async def _compact_recall(self) -> bool:
        """Each index's compaction (`Workspace.recall_compact_steps`) as a settle step of its own;
        False when the project closed meanwhile."""
        if self.closed:  # (its thread is stopped: nothing more may be scheduled on it)
            return False
        for step in await self.run(lambda: self.loaded.recall_compact_steps()):
            if await self._settle_step(step) is None:
                return False
        return not self.closed

    async def _settle_step(self, step: Callable[[], bool]) -> bool | None:
        """Run one step of the settle on the project thread once the client is quiet, the collector
        paused, the heap trimmed after it when it did something. What the step returned; None when
        the project closed first."""
        if self.closed:
            return None
        await self._wait_for_quiet()
        if self.closed:
            return None
        return await self.run(_trimmed, step)

    def _save_cache(self) -> None:
        """Write the state cache once the model is complete (only what it does not hold yet)."""
        try:
            self.loaded.save_cache()
            self.fact_spans.save_store()
        except Exception:
            log.exception("writing the state cache failed")
        finally:
            gc.freeze()  # what the save allocated stays out of the collector's view too
            heap.trim()  # (its row and index buffers are gone: their pages go back to the system)

    async def apply_now(self, paths) -> ChangeSet:
        """Apply changes we made ourselves (an action wrote files) without waiting for the watcher."""
        changes = await self.run(lambda: self.loaded.apply_changes(paths))
        if changes:
            await self._notify(changes)
        return changes

    async def rescan(self, progress: WorkProgress | None = None) -> ChangeSet:
        def _rescan() -> ChangeSet:
            self.loaded.progress = progress
            try:
                return self.loaded.rescan()
            finally:
                self.loaded.progress = None

        changes = await self.run(_rescan)
        await self._notify(changes)
        return changes

    def close(self) -> None:
        self.closed = True
        if self.watcher is not None:
            try:
                self.watcher.stop()
            except Exception:
                log.exception("stopping watcher")
        self._pool.shutdown(wait=False, cancel_futures=True)
        # (the thread holds the project weakly: while it waits, the server lets go of the project)
        threading.Thread(target=_release_after_close, args=(weakref.ref(self), self._pool), name="harn-ws-close",
                         daemon=True).start()


# How long a closed project's model is left before it is collected: the server drops what it still
# holds of it (documents served from it, its cancelled tasks) right after close() returns.
COLLECT_AFTER_CLOSE_S = 2.0


def _release_after_close(project: weakref.ref[Project], pool: ThreadPoolExecutor) -> None:
    """Close a closed project's cache files once its thread has finished its last task (a load too),
    then free its model. The model is frozen out of the cyclic collector's view (`keep_out_of_collector`)
    and holds reference cycles, so nothing would ever free it: every folder removed, or loaded again
    for new settings, kept its whole model (+142 MB a time at 100k events)."""
    pool.shutdown(wait=True)  # (nothing runs on the project thread from here on: the model is ours)
    proj = project()
    release = proj._release_files if proj is not None else None  # (read now: a load running at close() sets it)
    del proj
    try:
        if release is not None:
            release()
    except Exception:
        log.exception("closing the cache files of a closed project")
    del release
    time.sleep(COLLECT_AFTER_CLOSE_S)
    started = time.perf_counter()
    gc.unfreeze()  # (the dropped model is frozen with everything else: one full pass finds it, 23-37 ms at 100k)
    keep_out_of_collector()
    log.info("collected a closed project's model in %.2f s", time.perf_counter() - started)


def _loaded_summary(ws: Workspace, seconds: float) -> str:
    """'102,400 records in 12 namespaces, 3 runs, 2 checkpoints (4.1 s)': what a load found."""
    n_records = sum(space.sizes()[0] for space in ws.memory.values())
    parts = [f"{n_records:,} records in {len(ws.memory):,} namespaces"]
    for n, word in ((len(ws.runs), "run"), (len(ws.checkpoints), "checkpoint")):
        if n:
            parts.append(f"{n:,} {word}{'s' if n != 1 else ''}")
    return ", ".join(parts) + f" ({seconds:.1f} s)"


def paused_gc(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run `fn` (a step on the project thread) with the cyclic collector paused. Decoding or
    applying a large batch allocates millions of container objects; with the model frozen
    (gc.freeze) the collector counts almost nothing as old, so it would run a full collection
    over the growing batch every few thousand allocations. Paused, the new objects are walked
    once, by the first collections after the step. What the step frees by reference counting is
    freed as before; only cyclic garbage waits for those collections."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()
    return wrapper


def _trimmed(step: Callable[[], bool]) -> bool:
    """A settle step with the collector paused; when it did something (True), what it freed goes back."""
    did = paused_gc(step)()
    if did:
        heap.trim()  # (a merge's old arrays and temporaries: the next step's merge does not fit in them)
    return did


def _keeping_builds(fn: Callable[..., Any], args: tuple) -> Any:
    """Run a project-thread task; if it built a restored namespace's records (a request or a batch
    that needed them, long after the load's freeze), collect once and freeze, as after the load:
    left in the collector's view, a 262k-entry dict cost every later pass ~20 ms (1M events), and
    such passes land in hovers and batches for as long as the server runs."""
    builds = builds_here()
    try:
        return fn(*args)
    finally:
        if builds_here() != builds:
            keep_out_of_collector()


def keep_out_of_collector() -> None:
    """Collect what is garbage now, then move everything left (the model) out of the cyclic
    collector's view: no later pass walks it again."""
    gc.collect()
    gc.freeze()


def _freeze_heap() -> None:
    """Move the long-lived model out of the collector's view, so no full collection
    (about a second on a big project) lands in the middle of a hover later."""
    keep_out_of_collector()
    heap.trim()  # what the recall build and the facts' decoding freed goes back before the save
