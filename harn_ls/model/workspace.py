"""The in-memory model of one Harn project.

`Workspace.load(path)` reads everything once; `apply(paths)` re-reads only
what changed: new bytes of a JSONL log from its last offset, the one
checkpoint file, the skill layers, one run record. Every query the server,
the CLI and the renderers need lives here. No pygls, no writes.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from harn_ls.cache.parts import pattern_projection, read_checkpoint
from harn_ls.cache.store import ProjectCache
from harn_ls.formats import checkpoints as ckpt_fmt
from harn_ls.formats import facts as facts_fmt
from harn_ls.formats import paths as paths_mod
from harn_ls.formats import pattern_learning as pl_fmt
from harn_ls.formats import runs as runs_fmt
from harn_ls.formats.harn_time import date_now_iso
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace, namespace_of
from harn_ls.formats.memory_record import decode_store_line, fold_values
from harn_ls.formats.problems import Problem, Severity
from harn_ls.model.change_kinds import RESCAN_KINDS, ChangeKind, ChangeSet, K  # noqa: F401 (ChangeSet re-exported)
from harn_ls.model.facts import FactsPart
from harn_ls.model.recall import RecallPart
from harn_ls.model.runs import FullRunKey, RunsPart, TranscriptEntry, _json_files
from harn_ls.util import safe_read
from harn_ls.util.progress import WorkProgress
from harn_ls.util.safe_read import CODE_LINK_OUT, is_under

if TYPE_CHECKING:  # numpy (recall), sqlite3 (sessions) load only when used: `inspect` needs neither
    from harn_ls.cache.checkpoint_history import CheckpointHistory
    from harn_ls.formats import session_store as ss_fmt
    from harn_ls.formats import skills as skills_fmt
    from harn_ls.formats.facts import FactsSource
    from harn_ls.formats.memory_record import MemoryRecord
    from harn_ls.model.event_logs import EventLogState
    from harn_ls.recall import RecallEngine

PATTERN_NAMESPACE = "project/pattern-learning"
CODE_LEGACY_NOT_MIGRATED = "HL-PAT-010"
EVENTS_FILE = "events.jsonl"
CODE_ENV_REFUSED = "HL-ENV-001"  # a location variable harn-ls does not follow (issue 28)


def _holds_fact(record: MemoryRecord) -> bool:
    """Whether a record's value is a fact envelope (only those are facts, or have fact problems)."""
    if not record.might_hold_key("schema"):
        return False
    value = record.value
    return isinstance(value, dict) and value.get("schema") == facts_fmt.FACT_SCHEMA


def _size_of(path: str) -> int:
    """A log's size for the progress total (0 when it cannot be stat'ed: the reader says why)."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


class Workspace(FactsPart, RunsPart, RecallPart):
    def __init__(self, paths: paths_mod.ProjectPaths, env: Mapping[str, str] | None = None) -> None:
        self.paths = paths
        self._env = env
        self.progress: WorkProgress | None = None  # while a load or rescan runs: how far it is
        self._event_logs: EventLogState | None = None  # event logs, HITL, store, receipts, worktrees, … (issue 16)
        self.root = paths.project_root
        self.memory: dict[str, MemoryNamespace] = {}
        self._tails: dict[str, JsonlTail] = {}
        self._ns_path: dict[str, str] = {}  # namespace -> events.jsonl path
        self.checkpoints: dict[str, ckpt_fmt.CheckpointFile] = {}
        self.facts: dict[tuple[str, int], facts_fmt.Fact] = {}  # (namespace, seq) -> fact
        self.facts_by_id: dict[str, facts_fmt.Fact] = {}
        self._fact_keys_by_id: dict[str, list[tuple[str, int]]] = {}  # duplicate ids: the last one shown
        self.facts_by_file: dict[str, set[tuple[str, int]]] = {}
        self.fact_file_stamps: dict[str, int] = {}  # renewed as a file's facts change: model/fact_spans.py
        self._fact_stamp = 0
        self._fact_problems: dict[tuple[str, int], list[Problem]] = {}
        self._link_problems: dict[str, Problem] = {}  # path -> "symlink ... leaves the project; not followed"
        self.watch_problems: list[Problem] = []  # set by whoever watches the project (root refused, budget)
        self.checkpoint_history: CheckpointHistory | None = None  # kept by whoever serves the project (lsp/project.py)
        self.pattern: pl_fmt.PatternLearning | None = None
        # (namespace, its event count) `pattern` was projected from
        self._pattern_made_of: tuple[MemoryNamespace, int] | None = None
        self.legacy_streams: dict[str, str] = {}
        self.migration_needed = False
        self.skills: skills_fmt.SkillInventory | None = None
        self.runs: dict[str, runs_fmt.RunRecord] = {}
        self._run_paths: dict[str, str] = {}  # path -> run id
        self.workers: dict[str, runs_fmt.WorkerSnapshot] = {}
        self.transcripts: dict[str, TranscriptEntry] = {}
        self._transcripts_by_path: dict[str, list[str]] = {}  # run record / worker path -> ids read from it
        self._transcript_cache: dict[FullRunKey, runs_fmt.RunRecord] = {}
        self.sessions: ss_fmt.SessionStoreSnapshot | None = None
        self._recall: RecallEngine | None = None
        # state cache (harn_ls/cache/store.py): namespaces restored from it, the records their cached
        # recall index was built over, and the deltas applied since (replayed onto that index)
        self._project_cache: ProjectCache | None = None
        self._cache_dirty: set[str] = set()
        self._index_base: dict[str, dict[int, MemoryRecord]] = {}
        self._index_deltas: dict[str, list[MemoryDelta]] = {}
        self.generation = 0  # bumped on every change, used to cache rendered text
        self._memory_only = False  # Workspace.load(memory_only=True): see there
        self._real_dirs: dict[str, str] = {}  # realpath memo, emptied when a scan or an apply starts
        self._pending_facts: dict[str, FactsSource] = {}  # memory_only/defer_facts: cached facts not decoded (unless changed)
        self._defer_facts = self._fold_values = self._one_shot = False  # Workspace.load(defer_facts=True / ...): see there

    @property
    def event_logs(self) -> EventLogState:
        """Event logs, HITL, store, receipts, worktrees… (issue 16), made on first use."""
        if self._event_logs is None:
            # event_logs pulls in the HITL, event and SQLite readers (~60 ms): a one-shot recall never needs them
            from harn_ls.model.event_logs import EventLogState

            self._event_logs = EventLogState(self.paths, self._env)
        return self._event_logs

    # ------------------------------------------------------------------ load
    @classmethod
    def load(cls, path: str, env: Mapping[str, str] | None = None, home: str | None = None,
             cache: bool = False, memory_only: bool = False, defer_facts: bool = False,
             keep_rows: bool | None = None, fold_values: bool = False,
             progress: WorkProgress | None = None, env_sources: Mapping[str, str] | None = None,
             untrusted_env: Iterable[str] = (), one_shot: bool = False) -> Workspace:
        """Read the project. With `cache`, namespaces whose logs the state cache still matches are
        restored from it (plus any appended bytes) instead of re-read; `save_cache()` writes it back.
        `memory_only` (a one-shot recall): only the memory namespaces and their facts are read;
        checkpoints, skills, runs, sessions and the rest stay empty (and their cache entries kept).
        `defer_facts` (a server's start, a one-shot `inspect --json`): the facts of namespaces restored
        unchanged stay undecoded (problems, count restored); `materialize_facts()` decodes them.
        `one_shot` (`inspect --json`): run records listed from the cache have no stages or usage and
        the pattern views no link to their records (it never shows them). `keep_rows`, `fold_values`: below."""
        ws = cls(paths_mod.resolve(path, env=env, home=home, env_sources=env_sources, untrusted_env=untrusted_env), env)
        ws._memory_only, ws._defer_facts, ws._fold_values = memory_only, defer_facts, fold_values
        ws.progress = progress  # told how far the read is (a terminal bar, LSP work-done progress)
        ws._one_shot = one_shot
        if cache:
            ws._project_cache = ProjectCache.open(ws.root, env)
            if ws._project_cache is not None:
                ws._project_cache.keep_runs = memory_only
                # one-shot: until saved
                ws._project_cache.keep_row_bytes = (memory_only or defer_facts) if keep_rows is None else keep_rows
                ws._project_cache.lazy_facts = memory_only or defer_facts  # (their payload checked when decoded)
        ws.rescan()
        ws.progress = None
        return ws

    @property
    def keeps_cache(self) -> bool:
        """Whether this workspace reads and writes the state cache (off: --no-cache, HARN_LS_CACHE=off)."""
        return self._project_cache is not None

    def file_releaser(self) -> Callable[[], None]:
        """What closes the files the model holds open (the payloads of namespaces restored from the state
        cache), for whoever ends the model: callable from any thread once nothing else uses the model."""
        cache = self._project_cache
        return cache.release_all if cache is not None else _nothing_to_release

    def save_cache(self) -> bool:
        """Write what changed into the state cache (no-op without one)."""
        if self._project_cache is None:
            return False
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._project_cache.save(self)
        finally:
            if was_enabled:
                gc.enable()

    def rescan(self) -> ChangeSet:
        """Read everything from scratch (also the recovery path after watcher overflow)."""
        # A load allocates millions of long-lived objects (records, postings); the
        # cyclic GC would rescan all of them again and again while they are being
        # built (about half of the load time on 100k events). Nothing built here
        # is cyclic garbage, so collection waits until the load is done.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._rescan()
        finally:
            if was_enabled:
                gc.enable()

    def _rescan(self) -> ChangeSet:
        if self._project_cache is not None:
            self._project_cache.release_all()  # (the namespaces restored before are dropped below)
        self._real_dirs.clear()
        self.memory.clear()
        self._tails.clear()
        self._ns_path.clear()
        self.facts.clear()
        self.facts_by_id.clear()
        self._fact_keys_by_id.clear()
        self.facts_by_file.clear()
        self._fact_problems.clear()
        self._recall = None
        self._cache_dirty.clear()
        self._index_base.clear()
        self._index_deltas.clear()
        self._pending_facts.clear()
        self.checkpoints.clear()
        self._clear_runs()
        self._link_problems.clear()
        changes = ChangeSet(rescanned=True)
        changes.kinds.update(RESCAN_KINDS)
        progress = self.progress
        namespaces = self._discover_namespaces()
        if progress is not None:
            # the memory logs are nearly all of a big project's bytes and time; the rest in steps
            sizes = sum(_size_of(path) for path in namespaces.values())
            progress.phase("memory logs", sizes, 1.0 if self._memory_only else 0.9, in_bytes=True)
        for ns, path in namespaces.items():
            self._load_namespace(ns, path, changes)
        if self._memory_only:
            self.generation += 1
            return changes
        others = ((self._refresh_pattern, "pattern learning"), (self._scan_checkpoints, "checkpoints"),
                  (self._refresh_skills, "skills"), (self._scan_runs, "runs"), (self._refresh_sessions, "sessions"),
                  (lambda changes: changes.kinds.update(self.event_logs.rescan()), "event logs"))
        if progress is not None:
            progress.phase("checkpoints, skills, runs", len(others), 0.1, counted=False)
        for read, label in others:
            if progress is not None:
                progress.step(0, label)
            read(changes)
            if progress is not None:
                progress.step()
        self.generation += 1
        return changes

    def _discover_namespaces(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for root in self._memory_roots():
            if not os.path.isdir(root) or not self._root_ok(root):
                continue
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if d != "vectors")
                # os.walk never descends into a linked directory; say so when it leaves or loops (a link that
                # loops on itself is listed with the files: it is no directory)
                for d in dirnames + [f for f in filenames if f != EVENTS_FILE]:
                    full = os.path.join(dirpath, d)
                    if os.path.islink(full) and not self._leaves_project_reported(full):
                        self._loop_reported(full)
                if EVENTS_FILE in filenames:
                    ns = namespace_of(root, os.path.join(dirpath, EVENTS_FILE))
                    if root == self.paths.pattern_memory_root and root != self.paths.memory_root and ns != PATTERN_NAMESPACE:
                        continue
                    if root == self.paths.memory_root and ns == PATTERN_NAMESPACE and self._pattern_root_differs():
                        continue
                    found[ns] = os.path.join(dirpath, EVENTS_FILE)
        return found

    def _pattern_root_differs(self) -> bool:
        return os.path.normpath(self.paths.pattern_memory_root) != os.path.normpath(self.paths.memory_root)

    def _memory_roots(self) -> list[str]:
        roots = [self.paths.memory_root]
        if self._pattern_root_differs():
            roots.append(self.paths.pattern_memory_root)
        return roots

    # ---------------------------------------------------------------- memory
    def _load_namespace(self, ns: str, path: str, changes: ChangeSet) -> None:
        if self._leaves_project_reported(path):
            return  # a symlink out of the project: reported, never followed
        self._ns_path[ns] = path
        tail = self._tails[path] = JsonlTail(path, decode=decode_store_line)
        cache = self._project_cache
        restored = cache.restore_namespace(ns, path, tail) if cache is not None and self._recall is None else None
        if restored is None:
            self.memory[ns] = MemoryNamespace(ns, path)
            self._cache_dirty.add(ns)
        else:
            assert cache is not None  # (restored from it)
            self.memory[ns], facts = restored
            self._index_deltas[ns] = []
            if self._memory_only:
                self._pending_facts[ns] = facts  # a one-shot recall never looks at them
            elif self._defer_facts:
                self._pending_facts[ns] = facts  # a one-shot inspect prints their cached form
                for seq, problems in cache.fact_problems(ns):
                    self._fact_problems[(ns, seq)] = problems
            else:
                self._restore_facts(ns, facts, changes)
            changes.kinds.update((K.MEMORY, K.FACTS))
            changes.namespaces.add(ns)
        self._read_namespace(ns, changes)

    def _read_namespace(self, ns: str, changes: ChangeSet) -> None:
        path = self._ns_path[ns]
        tail = self._tails[path]
        space = self.memory[ns]
        progress = self.progress
        counted = 0  # this log's bytes already told to `progress` (a restored namespace starts past its cached part)
        for batch in tail.iter_batches():
            if progress is not None:
                progress.read_bytes(tail.offset - counted)
                counted = tail.offset
            if batch.reset:
                self._drop_namespace_derived(ns, changes)
                space = self.memory[ns] = MemoryNamespace(ns, path)
                self._forget_cached(ns)
            if batch.missing:
                self._drop_namespace_derived(ns, changes)
                self._forget_cached(ns)
                del self.memory[ns]
                del self._ns_path[ns]
                del self._tails[path]
                changes.kinds.add(K.MEMORY)
                changes.namespaces.add(ns)
                changes.problem_paths.add(path)
                return
            if not batch.lines:
                continue
            changes.kinds.add(K.MEMORY)  # even bad lines change the problem list
            changes.namespaces.add(ns)
            self._cache_dirty.add(ns)
            deltas = self._index_deltas.get(ns) if self._recall is None else None
            # lines appended to a restored namespace: applied without building its records (cache/tail.py)
            cache = self._project_cache
            delta = cache.apply_tail(ns, space, batch.lines) if cache is not None else None
            if delta is not None and ns in self._pending_facts and any(map(_holds_fact, delta.removed)):
                self._restore_pending_facts(ns, changes)  # a cached fact updated or forgotten: its entry goes
            if delta is None:
                if ns in self._pending_facts:  # the namespace changes: its facts are needed to save it
                    self._restore_pending_facts(ns, changes)
                if deltas is not None and ns not in self._index_base:
                    assert cache is not None  # (deltas are kept for a namespace restored from the cache only)
                    self._index_base[ns] = cache.index_base(ns, space)  # what the cached index was built over
                delta = space.apply_lines(batch.lines)
            if deltas is not None:
                deltas.append(delta)
            self._apply_delta(ns, delta, changes)
            if self._fold_values and self._recall is None:  # a server's load: value dicts freed as the log is read
                fold_values(delta.added)
        if progress is not None and tail.offset > counted:
            progress.read_bytes(tail.offset - counted)
        if self._recall is not None and not self._recall.has_index(ns):  # (reading `indexes` would fold the queue)
            # every namespace has an index, even an empty one, however it was read
            self._recall.set_config(ns, space.config, os.path.dirname(path))
        changes.problem_paths.add(path)

    def _forget_cached(self, ns: str) -> None:
        self._cache_dirty.add(ns)
        self._pending_facts.pop(ns, None)
        if self._project_cache is not None:
            self._project_cache.release(ns)  # (its reader and open payloads belong to the namespace dropped)
        self._index_base.pop(ns, None)
        self._index_deltas.pop(ns, None)

    def _drop_namespace_derived(self, ns: str, changes: ChangeSet) -> None:
        space = self.memory.get(ns)
        if space is None:
            return
        self._apply_delta(ns, MemoryDelta(removed=space.records()), changes)
        if self._recall is not None:
            self._recall.drop(ns)  # a vanished or reset log leaves no (empty) index behind, as a cold load would

    def _apply_delta(self, ns: str, delta: MemoryDelta, changes: ChangeSet) -> None:
        if not delta:
            return
        changes.kinds.add(K.MEMORY)
        changes.namespaces.add(ns)
        if self._recall is not None:
            space = self.memory.get(ns)
            if space is not None:
                self._recall.sync_namespace(space, delta)
            else:
                self._recall.apply_memory_delta(ns, delta)
        path = self._ns_path.get(ns, "")
        for record in delta.removed:
            fact = self.facts.pop((ns, record.seq), None)
            self._fact_problems.pop((ns, record.seq), None)
            if fact is not None:
                changes.kinds.add(K.FACTS)
                self._unindex_fact(fact, (ns, record.seq), changes)
        for record in delta.added:
            if not _holds_fact(record):  # only harn.fact.v1 values are facts
                continue
            fact, problems = facts_fmt.fact_from_record(record, self.root, path)
            if problems:
                self._fact_problems[(ns, record.seq)] = problems
            if fact is None:
                continue
            changes.kinds.add(K.FACTS)
            self.facts[(ns, record.seq)] = fact
            self._index_fact(fact, (ns, record.seq), changes)

    def _refresh_pattern(self, changes: ChangeSet) -> None:
        space = self.memory.get(PATTERN_NAMESPACE)
        path = self._ns_path.get(PATTERN_NAMESPACE, os.path.join(self.paths.pattern_learning_dir, EVENTS_FILE))
        # a server's start or a one-shot inspect (defer_facts) may take it from the state cache: cache/parts.pattern_projection
        self.pattern, self._pattern_made_of = pattern_projection(self._project_cache if self._defer_facts else None, space, path,
                                                                 link=not self._one_shot)
        self.legacy_streams = pl_fmt.legacy_stream_paths(self.paths.state_root)
        self.migration_needed = pl_fmt.needs_migration(self.paths.state_root, self.paths.pattern_learning_dir)
        changes.kinds.add(K.PATTERN)
        changes.problem_paths.add(path)

    # ----------------------------------------------------------- checkpoints
    def _root_ok(self, directory: str) -> bool:
        """A state directory that leads out of the project (`.harn-runs -> /usr`) is not even listed;
        `problems()` reports it (ProjectPaths.watch_refusals)."""
        return self.paths.root_allowed(directory) is None

    def _scan_checkpoints(self, changes: ChangeSet) -> None:
        if not self._root_ok(self.paths.checkpoint_dir):
            return
        for path in _json_files(self.paths.checkpoint_dir):
            self._read_checkpoint(path, changes)

    def _read_checkpoint(self, path: str, changes: ChangeSet) -> None:
        pipeline = os.path.basename(path)[: -len(".json")]
        changes.kinds.add(K.CHECKPOINTS)
        changes.pipelines.add(pipeline)
        changes.problem_paths.add(path)
        if not os.path.lexists(path) or self._leaves_project_reported(path) or not self.paths.is_inside_project(path):
            self.checkpoints.pop(pipeline, None)
            return
        self.checkpoints[pipeline] = read_checkpoint(self._project_cache, path)  # (cached rows while the file matches)

    # ---------------------------------------------------------------- skills
    def _refresh_skills(self, changes: ChangeSet) -> None:
        old = self.skills
        # the skills package pulls in a YAML loader (~30 ms): a one-shot recall never reads skills
        from harn_ls.formats import skills as skills_fmt

        self.skills = skills_fmt.discover_skills(self.paths, self.paths.trusted_signers_dir)
        changes.kinds.add(K.SKILLS)
        for inv in (old, self.skills):
            if inv is not None:
                for s in list(inv.skills) + list(inv.shadowed):
                    changes.problem_paths.add(s.path)

    # -------------------------------------------------------------- sessions
    def _refresh_sessions(self, changes: ChangeSet) -> None:
        changes.kinds.add(K.SESSIONS)
        changes.problem_paths.add(path := self.paths.session_store)
        # lexists: a FIFO, a device or a symlink out of the project is reported by the reader, never opened.
        if not os.path.lexists(path):
            self.sessions = None
            return
        # start-up: the reader (sqlite3) loads only once a project has a session store
        from harn_ls.formats import session_store as ss_fmt
        self.sessions = ss_fmt.read_session_store(path)

    # ----------------------------------------------------------------- apply
    def apply_changes(self, changed: Iterable[str]) -> ChangeSet:
        """Bring the model up to date with the given changed paths (files or dirs)."""
        self._real_dirs.clear()
        changes = ChangeSet()
        paths = self.paths
        need_skills = need_pattern = need_sessions = False
        log_targets: set[str] = set()
        for raw in sorted(set(changed)):
            log_targets |= self.event_logs.classify(os.path.abspath(raw))
        for raw in sorted(set(changed)):
            path = os.path.abspath(raw)
            base = os.path.basename(path)
            if path == os.path.join(self.root, "harn.toml"):
                return self.rescan()
            if os.path.isdir(path) or (not os.path.exists(path) and ("." not in base or self._was_directory(path))):
                # A directory appeared, vanished or was renamed: rescan what can live below it.
                if any(is_under(path, r) or is_under(r, path) for r in self._memory_roots()):
                    self._rescan_namespaces(changes)
                    need_pattern = True
                if is_under(paths.checkpoint_dir, path) or is_under(path, paths.checkpoint_dir):
                    self._rescan_checkpoints(changes)
                if any(is_under(path, r.path) or is_under(r.path, path) for r in paths.skill_roots):
                    need_skills = True
                if is_under(path, paths.run_root) or is_under(paths.run_root, path) or is_under(path, paths.worker_dir) \
                        or is_under(paths.worker_dir, path):
                    self._rescan_runs(changes)
                if is_under(paths.state_root, path) or is_under(path, paths.state_root):
                    need_sessions = need_pattern = True
                continue
            if base == EVENTS_FILE and any(is_under(path, r) for r in self._memory_roots()) \
                    and f"{os.sep}vectors{os.sep}" not in path:
                ns = self._namespace_for(path)
                if ns is None:
                    continue
                if ns in self._ns_path and self._ns_path[ns] == path:
                    self._read_namespace(ns, changes)
                elif os.path.isfile(path):
                    self._load_namespace(ns, path, changes)
                if ns == PATTERN_NAMESPACE:
                    need_pattern = True
                continue
            if os.path.dirname(path) == paths.checkpoint_dir and base.endswith(".json"):
                self._read_checkpoint(path, changes)
                continue
            if any(is_under(path, r.path) for r in paths.skill_roots):
                need_skills = True
                continue
            if is_under(path, paths.run_root):
                if base.endswith(".json") and (os.path.dirname(path) == paths.run_root or base == "run.json"):
                    self._read_run(path, changes)
                elif base == "llm_transcript.jsonl":
                    changes.kinds.add(K.RUNS)
                continue
            if os.path.dirname(path) == paths.worker_dir and base.endswith(".json"):
                self._read_worker(path, changes)
                continue
            if base.startswith("session-store.sqlite"):
                need_sessions = True
                continue
            if is_under(path, paths.legacy_session_store_dir) or base == pl_fmt.MIGRATION_MARKER:
                need_pattern = True
        if PATTERN_NAMESPACE in changes.namespaces:
            need_pattern = True
        if need_pattern:
            self._refresh_pattern(changes)
        if need_skills:
            self._refresh_skills(changes)
        if need_sessions:
            self._refresh_sessions(changes)
        if log_targets:
            before = {p.path for p in self.event_logs.problems()}
            changes.kinds.update(self.event_logs.reread(log_targets))
            changes.problem_paths |= before | {p.path for p in self.event_logs.problems()}
        if changes:
            self.generation += 1
        return changes

    def _leaves_project_reported(self, path: str) -> bool:
        """`_leaves_project`, plus a problem naming the link (instead of dropping the file silently)."""
        self._link_problems.pop(path, None)
        if not os.path.lexists(path) or not self._leaves_project(path):
            return False
        why = safe_read.confinement_problem(path, self.root) or f"{path} leaves the project; not followed"
        self._link_problems[path] = Problem(path, 0, CODE_LINK_OUT, why, Severity.WARNING)
        return True

    def _loop_reported(self, path: str) -> bool:
        """A linked directory that loops (onto a folder that holds it, or ELOOP): a problem naming it."""
        found = safe_read.link_problem(path, self.root)
        if found is None or found[0] != safe_read.CODE_LINK_LOOP:
            return False
        self._link_problems[path] = Problem(path, 0, found[0], found[1], Severity.WARNING)
        return True

    def _leaves_project(self, path: str) -> bool:
        """Inside the project by name but outside once symlinks are resolved: never followed.
        (A root the environment puts outside the project, HARN_STATE_DIR=/elsewhere, is not affected.)"""
        p = os.path.abspath(path)
        if not is_under(p, self.root):
            return False
        real, real_root = self._realpath(p), self._realpath(self.root)
        return not is_under(real, real_root)

    def _realpath(self, path: str) -> str:
        """os.path.realpath, with the real path of each directory remembered for one scan or apply
        (a run folder holds thousands of files): a path that is not a symlink resolves to its
        directory's real path plus its name."""
        memo = self._real_dirs
        got = memo.get(path)
        if got is None:
            parent, name = os.path.split(path)
            if not name or name in (".", "..") or os.path.islink(path):
                got = os.path.realpath(path)
            else:
                got = os.path.join(self._realpath(parent), name)
            memo[path] = got
        return got

    def _was_directory(self, path: str) -> bool:
        """A vanished path with a dot in its name (`.harn`, `notes.v2`) was a directory if something we
        loaded, or one of the roots, lived below it."""
        p = self.paths
        known = [*self._ns_path.values(), *(cf.path for cf in self.checkpoints.values()), *self._run_paths,
                 *self.workers, *self._memory_roots(), p.checkpoint_dir, p.run_root, p.state_root, p.worker_dir,
                 *(r.path for r in p.skill_roots)]
        return any(k != path and is_under(k, path) for k in known)

    def _namespace_for(self, path: str) -> str | None:
        for root in self._memory_roots():
            if is_under(path, root):
                ns = namespace_of(root, path)
                if root == self.paths.memory_root and ns == PATTERN_NAMESPACE and self._pattern_root_differs():
                    return None
                if root != self.paths.memory_root and ns != PATTERN_NAMESPACE:
                    continue
                return ns
        return None

    def _rescan_namespaces(self, changes: ChangeSet) -> None:
        found = self._discover_namespaces()
        for ns in list(self.memory):
            if found.get(ns) != self._ns_path.get(ns):
                self._drop_namespace_derived(ns, changes)
                self._forget_cached(ns)
                path = self._ns_path.pop(ns)
                self._tails.pop(path, None)
                del self.memory[ns]
                changes.kinds.add(K.MEMORY)
                changes.namespaces.add(ns)
                changes.problem_paths.add(path)
        for ns, path in found.items():
            if ns in self.memory:
                self._read_namespace(ns, changes)
            else:
                self._load_namespace(ns, path, changes)

    def _rescan_checkpoints(self, changes: ChangeSet) -> None:
        for cf in list(self.checkpoints.values()):
            if not os.path.exists(cf.path):
                self._read_checkpoint(cf.path, changes)
        self._scan_checkpoints(changes)

    # --------------------------------------------------------------- queries
    def namespace_path(self, ns: str) -> str | None:
        return self._ns_path.get(ns)

    def relpath(self, abs_path: str) -> str | None:
        """Project-relative POSIX path, or None when outside the project."""
        p = os.path.abspath(abs_path)
        if not is_under(p, self.root):
            return None
        root = self.root  # os.path.relpath costs ~30 us; a normalized root's relative path is the rest of p
        rel = p[len(root.rstrip(os.sep)) + 1:] if p != root and root == os.path.abspath(root) else os.path.relpath(p, root)
        return rel.replace(os.sep, "/")

    def pending_proposals(self, include_suppressed: bool = False, now: str | None = None) -> list[pl_fmt.Proposal]:
        if self.pattern is None:
            return []
        now = now or date_now_iso()
        state = self.pattern.state
        return [p for p in self.pattern.pending if include_suppressed or not pl_fmt.is_suppressed(p.id, state, now)]

    def proposal(self, proposal_id: str) -> pl_fmt.Proposal | None:
        if self.pattern is None:
            return None
        return next((p for p in self.pattern.pending if p.id == proposal_id), None)

    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        for ns, space in sorted(self.memory.items()):
            out.extend(space.problems)
            torn = self._tails[self._ns_path[ns]].torn_problem()
            if torn is not None:
                out.append(torn)
        for plist in self._fact_problems.values():
            out.extend(plist)
        if self.pattern is not None:
            out.extend(self.pattern.problems)
        if self.migration_needed:
            for _kind, path in sorted(self.legacy_streams.items()):
                out.append(Problem(path, 1, CODE_LEGACY_NOT_MIGRATED,
                                   "legacy Burin pattern-learning stream is not migrated yet; Harn imports it on its next "
                                   "pattern-learning call (run `Harn State: Migrate pattern learning` to do it now)",
                                   Severity.INFO))
        for cf in self.checkpoints.values():
            out.extend(cf.problems)
        if self.skills is not None:
            out.extend(self.skills.problems)
        for run in self.runs.values():
            out.extend(run.problems)
        if self.sessions is not None:
            out.extend(self.sessions.problems)
        out.extend(self.event_logs.problems())
        out.extend(self._link_problems.values())
        out.extend(self.watch_problems)
        for where, why in self.paths.env_refusals:  # harnState.harnEnv outside an untrusted project, bad backend
            out.append(Problem(where, 0, CODE_ENV_REFUSED, why, Severity.WARNING))
        refused_by_config = {r for r, _ in self.paths.refused_roots}  # reported with the skills
        for root, why in self.paths.watch_refusals():
            if root not in refused_by_config and not any(p.path == root for p in self._link_problems.values()):
                out.append(Problem(root, 0, CODE_LINK_OUT, why, Severity.WARNING))
        return out

    def problems_by_path(self) -> dict[str, list[Problem]]:
        out: dict[str, list[Problem]] = {}
        for p in self.problems():
            out.setdefault(p.path, []).append(p)
        return out

    def counts(self) -> dict[str, int]:
        active = sum(s.sizes()[0] for s in self.memory.values())
        pending = self.pending_proposals()
        return {
            "checkpoints": len(self.checkpoints), "checkpointKeys": sum(len(c.entries) for c in self.checkpoints.values()),
            "namespaces": len(self.memory), "records": active,
            "facts": len(self.facts) + sum(self.cached_fact_count(ns) for ns in self._pending_facts),
            "proposals": len(pending), "skills": len(self.skills.skills) if self.skills else 0,
            "runs": len(self.runs), "transcripts": len(self.transcripts),
            "sessions": len(self.sessions.sessions) if self.sessions else 0,
        } | self.event_logs.counts()


def _nothing_to_release() -> None:
    """`Workspace.file_releaser` of a model without a state cache: it holds no file open."""
