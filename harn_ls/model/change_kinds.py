"""What changed after a scan or an apply (`ChangeSet`), and the kinds of state it names
(`ChangeSet.kinds`, `watch --json` "changed.kinds"), in one place: producers (workspace,
model/event_logs) and readers (documents, tree, status) use these names, never string literals of
their own."""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum

from harn_ls.util.json_types import JsonObject
from harn_ls.util.lean_dataclass import lean_dataclass


class ChangeKind(StrEnum):
    MEMORY = "memory"
    FACTS = "facts"
    PATTERN = "pattern"
    CHECKPOINTS = "checkpoints"
    SKILLS = "skills"
    RUNS = "runs"
    SESSIONS = "sessions"
    ROOTS = "roots"  # which state roots exist (a rescan)
    # issue 16: event logs, requests waiting for a human, the rest of .harn/
    EVENTS = "events"
    HITL = "hitl"
    STORE = "store"
    WORKFLOWS = "workflows"
    RECEIPTS = "receipts"
    WORKTREES = "worktrees"
    CRYSTALLIZATION = "crystallization"
    LOCKS = "locks"
    EMBED = "embed"
    # issue 28: the LLM response cache, model selection, guard models, orchestrator snapshot, metadata
    NEWER = "newer"


K = ChangeKind

# State files EventLogState reads, each its own kind.
STATE_FILE_KINDS = (K.STORE, K.WORKFLOWS, K.RECEIPTS, K.WORKTREES, K.CRYSTALLIZATION, K.LOCKS, K.EMBED, K.NEWER)
# What EventLogState reports (its part of a rescan and of live changes).
EXTRA_KINDS = frozenset({K.EVENTS, K.HITL, *STATE_FILE_KINDS})
# The Workspace's own state: what "everything may have changed" means for it.
CORE_KINDS = frozenset({K.MEMORY, K.FACTS, K.PATTERN, K.CHECKPOINTS, K.SKILLS, K.RUNS, K.SESSIONS})
# A rescan of the Workspace's own state.
RESCAN_KINDS = CORE_KINDS | {K.ROOTS}


@lean_dataclass
class ChangeSet:
    """What one `Workspace.apply_changes` changed: the kinds, and which namespaces, pipelines, files and runs."""

    kinds: set[ChangeKind] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)
    pipelines: set[str] = field(default_factory=set)
    fact_files: set[str] = field(default_factory=set)  # project-relative source files whose facts changed
    problem_paths: set[str] = field(default_factory=set)  # state files whose problem list may have changed
    runs: set[str] = field(default_factory=set)
    rescanned: bool = False

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def to_json(self) -> JsonObject:
        return {
            "kinds": sorted(self.kinds),
            "namespaces": sorted(self.namespaces),
            "pipelines": sorted(self.pipelines),
            "fact_files": sorted(self.fact_files),
            "runs": sorted(self.runs),
            "rescanned": self.rescanned,
        }
