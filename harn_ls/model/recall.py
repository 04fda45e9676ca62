"""The workspace's recall index: built on first use, from the state cache when it holds a valid
index for a namespace (plus the deltas applied since), else from the records in short steps."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harn_ls.cache.index_restore import restore_index
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace

if TYPE_CHECKING:  # numpy (via recall) is imported only when recall is used: `inspect` never needs it
    from collections.abc import Callable, Iterator
    from typing import TypeAlias

    from harn_ls.cache.rows import RowReader
    from harn_ls.cache.store import ProjectCache
    from harn_ls.formats.memory_record import MemoryRecord
    from harn_ls.recall import RecallEngine
    from harn_ls.util.progress import WorkProgress

    # a step of the recall build: does its part on the engine being built
    BuildStep: TypeAlias = Callable[[RecallEngine], None]
    # a step a server runs in a quiet moment: True when done, False to be called again
    WorkStep: TypeAlias = Callable[[], bool]


class RecallPart:
    """Recall build and adoption (mixed into `Workspace`)."""

    # Set by `Workspace.__init__` (harn_ls/model/workspace.py), declared here for the methods below.
    memory: dict[str, MemoryNamespace]
    generation: int
    _recall: RecallEngine | None
    _project_cache: ProjectCache | None
    # namespaces restored from the state cache: the records their cached recall index was built over
    # (seq -> record), and the deltas applied since (replayed onto that index)
    _index_base: dict[str, dict[int, MemoryRecord]]
    _index_deltas: dict[str, list[MemoryDelta]]

    @property
    def recall(self) -> RecallEngine:
        """The recall index, built on first use (inspect and hovers never need it) and
        kept up to date incrementally from then on."""
        if self._recall is None:
            self.build_recall()
        return self._recall  # type: ignore[return-value]  # (build_recall has set it)

    def build_recall(self, progress: WorkProgress | None = None) -> None:
        """Build the recall index now, in one go (a one-shot `recall`); `progress` is told each step
        (then the records go in slices of a few thousand, the same index: the server's steps are smaller)."""
        # numpy (via recall) is imported only when recall is used: `inspect` never needs it
        from harn_ls.recall import RecallEngine

        engine = RecallEngine()
        steps = self.recall_build_steps(chunk=0 if progress is None else 5000)
        if progress is not None:
            progress.phase("recall index", len(steps), 1.0)
        for step in steps:
            step(engine)
            if progress is not None:
                progress.step()
        self._recall = engine
        self._index_base.clear()
        self._index_deltas.clear()

    @property
    def recall_ready(self) -> bool:
        return self._recall is not None

    def recall_build_steps(self, chunk: int = 500) -> list[BuildStep]:
        """The recall build cut into short steps (chunk=0: one step per namespace), so a server
        can interleave hovers with it. Each step takes the engine being built; `adopt_recall`
        installs it if nothing changed meanwhile."""
        steps: list[BuildStep] = []
        for ns, space in self.memory.items():
            if self._project_cache is not None and ns in self._index_deltas and self._project_cache.index_entry(ns):
                def cached(e: RecallEngine, ns: str = ns, space: MemoryNamespace = space) -> None:
                    self._cached_index_step(e, ns, space)

                steps.append(cached)
            else:
                steps += self._build_steps(ns, space, chunk)
        return steps

    def _cached_index_step(self, engine: RecallEngine, ns: str, space: MemoryNamespace) -> None:
        """One namespace's index from the state cache (plus the deltas applied since it was
        written); built from the records when the cached one does not check out."""
        cache = self._project_cache
        assert cache is not None  # (a step made only while there is a cache: recall_build_steps)
        base = self._index_base.get(ns)
        if base is None and space.materialized:  # (built since the restore: without the stores appended)
            base = cache.index_base(ns, space)
        idx = restore_index(cache, ns, space, base)
        if idx is None:
            for step in self._build_steps(ns, space, 0):
                step(engine)
            return
        engine.indexes[ns] = idx
        for delta in self._index_deltas.get(ns, ()):
            idx.apply_delta(delta)

    def _build_steps(self, ns: str, space: MemoryNamespace, chunk: int) -> list[BuildStep]:
        steps: list[BuildStep] = []
        records = space.records()
        if not records:
            def configure(e: RecallEngine, ns: str = ns, space: MemoryNamespace = space) -> None:
                e.set_config(ns, space.config, os.path.dirname(space.path))

            steps.append(configure)
        size = chunk or len(records) or 1
        for i in range(0, len(records), size):
            part = records[i:i + size]

            def add(e: RecallEngine, space: MemoryNamespace = space, part: list[MemoryRecord] = part) -> None:
                e.sync_namespace(space, MemoryDelta(added=part))

            steps.append(add)
        return steps

    def recall_settle_steps(self, rows_per_step: int = 100) -> list[WorkStep]:
        """What a cached index leaves for later once recall answers: the records it did not decode.
        Each step is short (100 rows, or a slice of one index taking them: about a ms at
        1M events) and returns True when done, False to be called again, so a server serves
        requests and append batches in between. The namespace, when it is first needed, takes the
        same decoded records (`RowReader.decoded`): one copy of each. Each step looks its namespace
        up again: a rescan or reset meanwhile only leaves it less to do."""
        if self._recall is None:
            return []
        steps: list[WorkStep] = []
        readers = self._project_cache.readers if self._project_cache is not None else {}
        for ns in self._recall.namespaces():
            reader = readers.get(ns)
            if reader is not None:
                def decode(reader: RowReader = reader) -> bool:
                    return reader.decode_some(rows_per_step)

                steps.append(decode)
            steps.append(self._settle_index_step(ns))
        return steps

    def _settle_index_step(self, ns: str) -> WorkStep:
        """A step that hands a lazily restored index its decoded records, a slice per call."""
        pending: Iterator[None] | None = None

        def step() -> bool:
            nonlocal pending
            if pending is None:
                if self._recall is None:
                    return True
                pending = self._recall.materialize_steps(ns)
            return next(pending, StopIteration) is StopIteration

        return step

    def fold_recall_queue(self) -> bool:
        """Fold the deltas the recall index queued (`RecallEngine.apply`) into it now: a server's
        work for a quiet moment after a batch. True when there was something to fold."""
        if self._recall is None or not self._recall.pending:
            return False
        self._recall.settle()
        return True

    def fold_recall_delta(self) -> bool:
        """`fold_recall_queue` a delta at a time (`RecallEngine.settle_one`); False when none is left."""
        return self._recall is not None and self._recall.settle_one()

    def recall_compact_steps(self) -> list[WorkStep]:
        """`RecallEngine.compact_steps` of the recall index (none without one)."""
        return self._recall.compact_steps() if self._recall is not None else []

    def adopt_recall(self, engine: RecallEngine, generation: int) -> bool:
        if self._recall is not None:
            return True
        if generation != self.generation:
            return False
        self._recall = engine
        self._index_base.clear()
        self._index_deltas.clear()
        return True
