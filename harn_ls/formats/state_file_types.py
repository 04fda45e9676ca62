"""The records of `.harn/` state files (stores, workflow mailboxes, receipts, worktrees,
crystallization candidates, lock files, embedding caches), apart from formats/state_files.py, which
loads them with the first such file found: most projects have none of them, and creating the seven
dataclasses cost every one-shot command ~7 ms."""

from __future__ import annotations

from dataclasses import dataclass, field

from harn_ls.formats.problems import Problem
from harn_ls.util.json_types import JsonObject


@dataclass
class Store:
    """A key-value store file (§O.1) and its entries."""

    path: str
    entries: JsonObject = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class Mailbox:
    """A workflow's mailbox (§O.2): pending messages, queries, whether it is paused."""

    workflow_id: str
    path: str
    paused: bool = False
    generation: int = 1
    pending: list[JsonObject] = field(default_factory=list)
    queries: JsonObject = field(default_factory=dict)
    unanswered_updates: int = 0


RECEIPT_LABELS = {
    "verified": "verified: signed by a key you trust",
    "self-signed": "signed by a key the receipt carries (not by a key you trust)",
    "failed": "does NOT verify",
    "unreadable": "unreadable",
}


@dataclass
class Receipt:
    """A run receipt (§O.3) and whether its signature verifies."""

    id: str
    path: str
    # verified: Harn's checks pass and a signature's key is one the user trusts (~/.harn/trusted-signers);
    # self-signed: Harn's checks pass, but only against the key the receipt itself carries (anyone can
    # make such a receipt: it proves the events are unchanged since signing, not who signed);
    # failed: Harn's checks fail, or a key_id is not the id of its key; unreadable.
    status: str
    errors: list[str] = field(default_factory=list)
    issued_at: str = ""
    pipeline: str = ""
    run_status: str = ""
    event_count: int = 0
    key_ids: list[str] = field(default_factory=list)
    receipt_hash: str = ""
    event_root_hash: str = ""
    data: JsonObject | None = None

    @property
    def label(self) -> str:
        """What to show: "verified" only for a key the user trusts (as for skill signatures)."""
        return RECEIPT_LABELS.get(self.status, self.status)

    def to_json(self) -> JsonObject:
        return {"id": self.id, "path": self.path, "status": self.status, "label": self.label, "errors": self.errors,
                "issued_at": self.issued_at, "pipeline": self.pipeline, "run_status": self.run_status,
                "events": self.event_count, "key_ids": self.key_ids}


@dataclass
class Worktree:
    """A worker's git worktree (§O.4), and whether it is stale."""

    name: str  # <repo>/<worker_id> or <name>
    path: str
    gitdir: str | None
    stale: bool
    reason: str = ""
    branch: str = ""


@dataclass
class Candidate:
    """A crystallization candidate folder (§O.5)."""

    id: str
    path: str
    complete: bool  # proposal.json present (the completion signal)
    files: list[str] = field(default_factory=list)
    proposal: JsonObject = field(default_factory=dict)
    # which Harn staged it, told by its folder (issue 28): "harn" = `.harn/crystallization/` (newest
    # Harn), "burin" = `.burin/crystallization/` (older Harn; now a read-only compatibility root)
    layout: str = "harn"
    shadowed: list[str] = field(default_factory=list)  # the same id under the other root, not shown


@dataclass
class LockFile:
    """A lock file (§O.6, §O.7), and whether a process holds it now."""

    path: str
    kind: str  # checkpoint | session | project | init
    name: str
    held: bool | None  # None: cannot tell (no /proc/locks)


@dataclass
class EmbedCache:
    """An embedding cache (§O.8): which model, how many vectors, how many bytes."""

    namespace: str  # "__embed" or a memory namespace with a vectors/ folder
    model_hint: str
    vectors: int
    bytes: int
