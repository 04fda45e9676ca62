"""Event logs, requests waiting for a human, and the rest of `.harn/` for one Workspace.

Kept apart from model/workspace.py so the Workspace only calls `rescan()` and
`claims(path)` / `apply(paths)`. Pure core: no pygls, no writes (the copy of a
`-wal` without `-shm` goes to the user cache folder, never into the project).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from harn_ls.cache.dirs import project_cache_dir
from harn_ls.formats import state_files as sf
from harn_ls.formats.event_logs import LogView, discover, hitl_rules
from harn_ls.formats.harn_time import parse_time_ms
from harn_ls.formats.problems import Problem, Severity
from harn_ls.model.change_kinds import STATE_FILE_KINDS, ChangeKind, K
from harn_ls.util.safe_read import is_under, reader_root

if TYPE_CHECKING:
    from harn_ls.formats.hitl import requests as hitl_fmt
    from harn_ls.formats.newer_state import NewerState
    from harn_ls.formats.paths import ProjectPaths
    from harn_ls.formats.state_file_types import Candidate, EmbedCache, LockFile, Mailbox, Receipt, Store, Worktree


class EventLogState:
    def __init__(self, paths: ProjectPaths, env: Mapping[str, str] | None = None) -> None:
        self.paths = paths
        root = paths.project_root
        try:
            copy_dir = os.path.join(project_cache_dir(root, env), "wal-copies")
        except ValueError:
            copy_dir = None
        # a log the user's environment placed outside the project (HARN_EVENT_LOG_SQLITE_PATH=/elsewhere, or
        # HARN_STATE_DIR) is confined to its own folder instead (untrusted settings never get this far)
        self.logs: dict[str, LogView] = {
            loc.label: LogView(loc, copy_dir=copy_dir, root=reader_root(os.path.dirname(os.path.abspath(loc.path)), root))
            for loc in discover(paths.event_logs)}
        self.store: Store | None = None
        self.orchestrator_store: Store | None = None
        self.mailboxes: list[Mailbox] = []
        self.receipts: list[Receipt] = []
        self.worktrees: list[Worktree] = []
        self.candidates: list[Candidate] = []
        self.locks: list[LockFile] = []
        self.embed: list[EmbedCache] = []
        self.newer: NewerState | None = None  # issue 28: LLM cache, selection, guard, orchestrator snapshot, …
        self._problems: dict[str, list[Problem]] = {}
        self.hitl_seen: set[str] = set()  # request ids already announced (for "a new one arrived")

    # ------------------------------------------------------------------ paths
    @property
    def crystallization_dirs(self) -> list[str]:
        return [d for _, d in sf.candidate_dirs(self.paths.project_root)]

    def _dirs(self) -> dict[str, str]:
        s = self.paths.state_root
        return {"workflows": os.path.join(s, "workflows"), "receipts": os.path.join(s, "receipts"),
                "worktrees": self.paths.worktree_root or os.path.join(s, "worktrees"),
                "agent-run-writers": os.path.join(s, "agent-run-writers"), "checkpoints": os.path.join(s, "checkpoints")}

    def _newer_dirs(self) -> list[str]:
        s, harn = self.paths.state_root, os.path.join(self.paths.project_root, ".harn")
        orch = self.paths.orchestrator_state_dir or os.path.join(harn, "orchestrator")
        return [os.path.join(s, "cache"), os.path.join(harn, "local"), os.path.join(harn, "guard"),
                os.path.join(s, "metadata"), os.path.join(orch, "orchestrator-state.json")]

    # ------------------------------------------------------------------ safety
    def _leaves(self, path: str) -> bool:
        """Inside the project by name but elsewhere once symlinks are resolved: never read."""
        root = self.paths.project_root
        return is_under(os.path.abspath(path), root) and not self.paths.is_inside_project(path)

    def _refuse(self, kind: str, path: str) -> bool:
        if os.path.lexists(path) and self._leaves(path):
            self._problems.setdefault(kind, []).append(Problem(path, 0, "HL-SEC-001",
                "symlink leads out of the project; not followed", Severity.WARNING))
            return True
        return False

    def _refresh_log(self, view: LogView, now_ms: int | None = None) -> bool:
        self._problems.pop("log:" + view.label, None)
        if self._refuse("log:" + view.label, view.path) or self._refuse("log:" + view.label, view.path + "-wal"):
            changed = bool(view.summary.topics or view.requests)
            view.summary.topics.clear()
            view.requests.clear()
            return changed
        return view.refresh(now_ms=now_ms)

    # ------------------------------------------------------------------ load
    def rescan(self) -> set[ChangeKind]:
        kinds: set[ChangeKind] = set()
        for name in self.logs:
            self.logs[name] = LogView(self.logs[name].loc, copy_dir=self.logs[name].copy_dir, root=self.logs[name].root)
            self._refresh_log(self.logs[name])
        kinds.add(K.EVENTS)
        for k in STATE_FILE_KINDS:
            self._read(k)
        kinds.update(STATE_FILE_KINDS)
        self.hitl_seen |= {r.request_id for r in self.waiting()}
        return kinds

    def _read(self, kind: str) -> None:
        s = self.paths.state_root
        d = self._dirs()
        probs: list[Problem] = []
        self._problems[kind] = probs
        guard = {"store": [os.path.join(s, "store.json"),
                           os.path.join(self.paths.project_root, ".harn", "orchestrator", "store.json")],
                 "workflows": [d["workflows"]], "receipts": [d["receipts"]], "worktrees": [d["worktrees"]],
                 "crystallization": self.crystallization_dirs, "locks": [d["checkpoints"], d["agent-run-writers"]],
                 "embed": [self.paths.memory_root]}.get(kind, [])
        if any(self._refuse(kind, g) for g in guard):
            self._clear(kind)
            return
        top = self.paths.project_root
        if kind == "store":
            self.store = sf.read_store(os.path.join(s, "store.json"), reader_root(s, top))
            self.orchestrator_store = sf.read_store(os.path.join(top, ".harn", "orchestrator", "store.json"), top)
            for st in (self.store, self.orchestrator_store):
                if st is not None:
                    probs.extend(st.problems)
        elif kind == "workflows":
            self.mailboxes = sf.read_mailboxes(d["workflows"], probs, reader_root(d["workflows"], top))
        elif kind == "receipts":
            self.receipts = sf.read_receipts(d["receipts"], probs, reader_root(d["receipts"], top),
                                             self.paths.trusted_signers_dir)
        elif kind == "worktrees":
            self.worktrees = sf.read_worktrees(d["worktrees"], probs, reader_root(d["worktrees"], top))
        elif kind == "crystallization":
            self.candidates = sf.read_all_candidates(self.paths.project_root, probs)
        elif kind == "locks":
            self.locks = sf.read_locks(s)
        elif kind == "embed":
            self.embed = sf.read_embed_cache(self.paths.memory_root, probs)
        elif kind == "newer":
            # start-up: the reader of the newer state loads only when a rescan reads it
            from harn_ls.formats.newer_state import read_newer_state

            self.newer = read_newer_state(self.paths.project_root, s, self.paths.orchestrator_state_dir or
                                          os.path.join(self.paths.project_root, ".harn", "orchestrator"))
            probs.extend(self.newer.problems)

    def idempotency_keys(self) -> dict[str, int]:
        """Log label -> rows of its `event_idempotency_keys`, counted now (for the newer-state document and
        `inspect`); a log refused for a link out of the project is not counted."""
        return {v.label: n for v in self._readable_logs() if (n := v.idempotency_keys()) is not None}

    def _readable_logs(self) -> Iterator[LogView]:
        """The logs not refused (a link out of the project): the ones whose tables may be read."""
        return (v for v in self.logs.values() if not self._problems.get("log:" + v.label))

    def newer_shown(self) -> bool:
        """Whether there is newer Harn state to list (the tree's "LLM cache, models, orchestrator"): a
        project whose only such state is idempotency keys has it too (the refresh's one-row probe, not a count)."""
        return self.newer is not None and (not self.newer.empty or any(
            v.summary.has_idempotency_keys for v in self._readable_logs()))

    def _clear(self, kind: str) -> None:
        empty: tuple[str, object] = {"store": ("store", None), "workflows": ("mailboxes", []), "receipts": ("receipts", []),
                 "worktrees": ("worktrees", []), "crystallization": ("candidates", []), "locks": ("locks", []),
                 "embed": ("embed", []), "newer": ("newer", None)}[kind]
        setattr(self, empty[0], empty[1])
        if kind == "store":
            self.orchestrator_store = None

    # ----------------------------------------------------------------- apply
    def classify(self, path: str) -> set[str]:
        """What a changed path touches: log labels (`log:<label>`) and state-file kinds."""
        out: set[str] = set()
        base = os.path.basename(path)
        for label, view in self.logs.items():
            lp = view.loc.path
            if view.loc.backend == "sqlite":
                if os.path.dirname(path) == os.path.dirname(lp) and base.startswith(os.path.basename(lp)) \
                        and not base.endswith("-shm"):
                    out.add("log:" + label)
                elif is_under(lp, path):  # a parent directory appeared / vanished
                    out.add("log:" + label)
            elif is_under(path, lp) or is_under(lp, path):
                out.add("log:" + label)
        s = self.paths.state_root
        d = self._dirs()
        if path in (os.path.join(s, "store.json"), os.path.join(self.paths.project_root, ".harn", "orchestrator", "store.json")):
            out.add("store")
        for kind in ("workflows", "receipts", "worktrees"):
            if is_under(path, d[kind]) or is_under(d[kind], path):
                out.add(kind)
        if any(is_under(path, c) or is_under(c, path) for c in self.crystallization_dirs):
            out.add("crystallization")
        if any(is_under(path, n) or is_under(n, path) for n in self._newer_dirs()):
            out.add("newer")
        if (os.path.dirname(path) == d["checkpoints"] and base.endswith(".lock")) or is_under(path, d["agent-run-writers"]):
            out.add("locks")
        if is_under(s, path):  # the state root itself (or a parent) appeared, vanished or was replaced
            out.update(STATE_FILE_KINDS)
            out.update("log:" + label for label in self.logs)
        return out

    def reread(self, targets: set[str]) -> set[ChangeKind]:
        """Re-read what `classify` named. Returns the changed kinds (events / hitl / state-file kinds)."""
        kinds: set[ChangeKind] = set()
        now = int(time.time() * 1000)
        for t in sorted(targets):
            if t.startswith("log:"):
                view = self.logs.get(t[4:])
                if view is not None:
                    before = {r.request_id: r.state for r in view.requests.values()}
                    if self._refresh_log(view, now_ms=now):
                        kinds.add(K.EVENTS)
                    if before != {r.request_id: r.state for r in view.requests.values()}:
                        kinds.update((K.EVENTS, K.HITL))
            elif t in STATE_FILE_KINDS:
                self._read(t)
                kinds.add(ChangeKind(t))
        return kinds

    # --------------------------------------------------------------- queries
    def existing_logs(self) -> list[LogView]:
        return [v for v in self.logs.values() if v.exists]

    def all_requests(self) -> list[hitl_fmt.HitlRequest]:
        return [r for v in self.logs.values() for r in v.requests.values()]

    def waiting(self) -> list[hitl_fmt.HitlRequest]:
        out: list[hitl_fmt.HitlRequest] = []
        for v in self.logs.values():
            if v.requests:  # a log that was never read has none (and needs no HITL rules loaded)
                out.extend(hitl_rules().waiting(v.requests))
        if out:
            out.sort(key=lambda r: (parse_time_ms(r.requested_at) or 0, r.event_id), reverse=True)
        return out

    def harn_pending_cut(self) -> list[tuple[str, int, int]]:
        """(log, pending by Harn's rule, how many Harn's `hitl_pending()` returns) for each log where its
        default limit hides some."""
        limit = hitl_rules().HARN_PENDING_LIMIT
        out: list[tuple[str, int, int]] = []
        for v in self.logs.values():
            if len(v.requests) > limit:
                total = sum(1 for r in v.requests.values() if not r.resolved_by)
                if total > limit:
                    out.append((v.label, total, limit))  # hitl_pending() returns its limit, sorted
        return out

    def request(self, request_id: str) -> tuple[hitl_fmt.HitlRequest, LogView] | None:
        for v in self.logs.values():
            r = v.requests.get(request_id)
            if r is not None:
                return r, v
        return None

    def take_new_requests(self) -> list[hitl_fmt.HitlRequest]:
        """Waiting requests not announced before (each is returned once)."""
        new = [r for r in self.waiting() if r.request_id not in self.hitl_seen]
        self.hitl_seen |= {r.request_id for r in new}
        return new

    def receipt(self, rid: str) -> Receipt | None:
        by_file = next((r for r in self.receipts if os.path.basename(r.path)[:-5] == rid), None)
        return by_file or next((r for r in self.receipts if r.id == rid), None)

    def problems(self) -> list[Problem]:
        out = [p for v in self.logs.values() for p in v.problems()]
        return out + [p for plist in self._problems.values() for p in plist]

    def counts(self) -> dict[str, int]:
        return {
            "eventLogs": len(self.existing_logs()),
            "eventTopics": sum(len(v.summary.topics) for v in self.logs.values()),
            "hitlPending": len(self.waiting()),
            "receipts": len(self.receipts),
            "worktrees": len(self.worktrees),
            "candidates": len(self.candidates),
        }
