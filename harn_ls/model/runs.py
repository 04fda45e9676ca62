"""Run records, worker snapshots and their transcripts, as the workspace keeps them: slim run
records (what lists and the run document show) and transcript summaries; a transcript's full text is
re-read from its run record on demand."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

from harn_ls.formats import runs as runs_fmt
from harn_ls.formats.transcript_summary import TranscriptSummary
from harn_ls.model.change_kinds import ChangeSet, K

if TYPE_CHECKING:
    from harn_ls.cache.store import ProjectCache
    from harn_ls.formats.paths import ProjectPaths
    from harn_ls.formats.problems import Problem
    from harn_ls.formats.transcripts import Transcript

# (a run record's file path, st_mtime_ns, st_size): a key of the full run records kept parsed
FullRunKey = tuple[str, int, int]


class TranscriptEntry:
    """A transcript found in a run record or worker snapshot.

    Run-record transcripts are not kept in memory (they are most of a busy project's
    bytes); `transcript` re-reads the record, through a small cache, when a document
    needs the full text.
    """

    __slots__ = ("id", "run_id", "path", "message_count", "event_count", "asset_count", "_held", "_ws")

    def __init__(self, sm: TranscriptSummary, run_id: str | None, path: str, ws: RunsPart,
                 held: Transcript | None = None) -> None:
        self.id, self.run_id, self.path = sm.id, run_id, path
        self.message_count, self.event_count, self.asset_count = sm.message_count, sm.event_count, sm.asset_count
        self._held = held  # a worker snapshot's transcript (a run record's is re-read when needed)
        self._ws = ws

    @property
    def transcript(self) -> Transcript | None:
        return self._held if self._held is not None else self._ws._load_run_transcript(self.path, self.id)


FULL_RUNS_CACHE_BYTES = 16 * 1024 * 1024  # file bytes of the full run records kept parsed (see full_run_record)


def _lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _json_files(directory: str) -> list[str]:
    """`*.json` directly in a directory, sorted; none when it does not exist (yet)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.endswith(".json")]


class RunsPart:
    """The workspace's run-record and worker-snapshot readers (mixed into `Workspace`)."""

    # Set by `Workspace.__init__` (harn_ls/model/workspace.py), declared here for the methods below.
    paths: ProjectPaths
    runs: dict[str, runs_fmt.RunRecord]
    _run_paths: dict[str, str]  # path -> run id
    workers: dict[str, runs_fmt.WorkerSnapshot]
    transcripts: dict[str, TranscriptEntry]
    _transcripts_by_path: dict[str, list[str]]  # run record / worker path -> ids read from it
    _transcript_cache: dict[FullRunKey, runs_fmt.RunRecord]  # full_run_record's few parsed records, oldest first
    _project_cache: ProjectCache | None
    _one_shot: bool
    _link_problems: dict[str, Problem]

    if TYPE_CHECKING:  # defined by `Workspace`
        def _root_ok(self, directory: str) -> bool: ...
        def _leaves_project(self, path: str) -> bool: ...
        def _leaves_project_reported(self, path: str) -> bool: ...

    def _scan_runs(self, changes: ChangeSet) -> None:
        d = self.paths.run_root
        paths = _json_files(d) if self._root_ok(d) else []
        # A run record the state cache still matches by one lstat (the same regular file, so not a
        # link: it is where its folder is, and the folder is checked once) skips the per-file checks;
        # a one-shot `inspect --json` lists no stages or usage: they stay undecoded (a server shows them)
        cache = self._project_cache
        cached = cache.restore_regular_runs(paths, details=not self._one_shot) \
            if cache is not None and paths and not self._leaves_project(d) else {}
        for path in paths:
            hit = cached.get(path)
            if hit is None:
                self._read_run(path, changes)
            else:
                self._link_problems.pop(path, None)
                self._forget_run_path(path)
                self._add_run(path, hit[0], hit[1], changes)
        pg = os.path.join(d, "playground")
        if self._root_ok(d) and os.path.isdir(pg):
            for job in sorted(os.listdir(pg)):
                p = os.path.join(pg, job, "run.json")
                if os.path.isfile(p):
                    self._read_run(p, changes)
        for path in (_json_files(self.paths.worker_dir) if self._root_ok(self.paths.worker_dir) else []):
            self._read_worker(path, changes)

    def _clear_runs(self) -> None:
        self.runs.clear()
        self._run_paths.clear()
        self.transcripts.clear()
        self._transcripts_by_path.clear()
        self.workers.clear()

    def _forget_run_path(self, path: str) -> None:
        run_id = self._run_paths.pop(path, None)
        if run_id is None:
            return
        self.runs.pop(run_id, None)
        self._forget_transcripts_of(path)

    def _forget_transcripts_of(self, path: str) -> None:
        """Drop the transcripts read from `path`, by the per-file index: scanning every transcript for
        each file made a rescan of N run records O(N x transcripts)."""
        for tid in self._transcripts_by_path.pop(path, ()):
            entry = self.transcripts.get(tid)
            # A later file may have brought a transcript with the same id: that one stays.
            if entry is not None and entry.path == path:
                del self.transcripts[tid]

    def _keep_transcript(self, entry: TranscriptEntry) -> None:
        if entry.id is None:
            # A transcript value without a string `id` (Harn always writes one) has no name a document
            # or a tree item could open, and a None key among the ids broke every sorted listing of them
            # (`inspect --json`, the runs view): it is left out of the index; its run still lists it.
            return
        self.transcripts[entry.id] = entry
        self._transcripts_by_path.setdefault(entry.path, []).append(entry.id)

    def _read_run(self, path: str, changes: ChangeSet) -> None:
        changes.kinds.add(K.RUNS)
        changes.problem_paths.add(path)
        self._forget_run_path(path)
        if self._leaves_project_reported(path) or not os.path.lexists(path) or os.path.isdir(path):
            return
        cache = self._project_cache
        cached = cache.restore_run(path) if cache is not None else None
        if cached is not None:
            run, summaries = cached
        else:
            # The lstat before the read, so that a file rewritten while it is read is not cached with
            # the new stat and the old content (remember_run compares it with one taken after).
            before = _lstat_or_none(path) if cache is not None else None
            run = runs_fmt.read_run_record(path, summaries=True)
            summaries = cast("list[TranscriptSummary]", run.transcripts)  # (read with summaries=True)
            _slim_run(run)
            if cache is not None:
                cache.remember_run(path, run, before)
        self._add_run(path, run, summaries, changes)

    def _add_run(self, path: str, run: runs_fmt.RunRecord, summaries: list[TranscriptSummary], changes: ChangeSet) -> None:
        changes.kinds.add(K.RUNS)
        changes.problem_paths.add(path)
        self.runs[run.id] = run
        self._run_paths[path] = run.id
        changes.runs.add(run.id)
        for sm in summaries:
            self._keep_transcript(TranscriptEntry(sm, run.id, path, self))

    def _load_run_transcript(self, path: str, transcript_id: str | None) -> Transcript | None:
        """Full transcript from its run record, re-read on demand (a few records are cached)."""
        run = self.full_run_record(path)
        found = next((t for t in run.transcripts if t.id == transcript_id), None) if run is not None else None
        return cast("Transcript | None", found)  # (a full record's transcripts are whole views)

    def full_run_record(self, path: str) -> runs_fmt.RunRecord | None:
        """The whole run record (stages with usage, tool recordings…), re-read on demand. One of
        LAZY_RECORD_BYTES or more is read in parts (its transcript's events kept as their JSON, built
        one at a time when used) and not kept. Smaller ones are cached: at most 4, and only the last
        one read once their files add up to FULL_RUNS_CACHE_BYTES."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (path, st.st_mtime_ns, st.st_size)
        cache = self._transcript_cache
        run = cache.pop(key, None)
        if run is None:
            run = runs_fmt.read_run_record(path)
        if st.st_size >= runs_fmt.LAZY_RECORD_BYTES:
            return run  # (its bytes are held by its transcript's events: not kept)
        cache[key] = run  # (the most recently used last)
        while len(cache) > 4 or (len(cache) > 1 and sum(k[2] for k in cache) > FULL_RUNS_CACHE_BYTES):
            cache.pop(next(iter(cache)))
        return run

    def _read_worker(self, path: str, changes: ChangeSet) -> None:
        changes.kinds.add(K.RUNS)
        self._forget_transcripts_of(path)
        self.workers.pop(path, None)
        if self._leaves_project_reported(path) or not os.path.lexists(path) or os.path.isdir(path):
            return
        snap = runs_fmt.read_worker_snapshot(path)
        self.workers[path] = snap
        tr = getattr(snap, "transcript", None)
        if tr is not None:
            sm = TranscriptSummary(tr.id, len(tr.messages), len(tr.events), len(tr.assets))
            self._keep_transcript(TranscriptEntry(sm, None, path, self, tr))

    def _rescan_runs(self, changes: ChangeSet) -> None:
        for path in list(self._run_paths):
            if not os.path.exists(path):
                self._read_run(path, changes)
        for path in list(self.workers):
            if not os.path.exists(path):
                self._read_worker(path, changes)
        self._scan_runs(changes)


_STAGE_SUMMARY_KEYS = ("id", "node_id", "kind", "status", "outcome", "branch", "started_at", "finished_at")


def _slim_run(run: runs_fmt.RunRecord) -> None:
    """Keep what lists and the run document show (a record read with summaries=True already holds
    transcript summaries, not transcripts); drop the parsed record (artifacts…)."""
    slim = []
    for st in run.stages:
        if isinstance(st, dict):
            d = {k: st[k] for k in _STAGE_SUMMARY_KEYS if k in st and not isinstance(st[k], (dict, list))}
            attempts = st.get("attempts")
            d["attempts"] = [None] * len(attempts) if isinstance(attempts, list) else []
            slim.append(d)
    run.stages = slim
    if isinstance(run.usage, dict):
        run.usage = {k: v for k, v in run.usage.items() if not isinstance(v, (dict, list)) or len(str(v)) < 500}
    run.data = None
