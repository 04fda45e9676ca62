"""Method and command names shared with the VS Code extension (src/protocol.ts)."""

TREE = "harn/tree"
TREE_CHANGED = "harn/treeChanged"
STATUS = "harn/status"
HITL_ARRIVED = "harn/hitlArrived"  # {root, requests: [{requestId, kind, prompt, uri}]} — new requests waiting for a human

SCHEME = "harn-state"

CMD_ACCEPT = "harnState.acceptProposal"
CMD_REJECT = "harnState.rejectProposal"
CMD_INVALIDATE_FACT = "harnState.invalidateFact"
CMD_FORGET_STAGE = "harnState.forgetCheckpointStage"
CMD_PROBE = "harnState.probeTypecheck"
CMD_RECALL = "harnState.recall"
CMD_MIGRATE = "harnState.migratePatternLearning"
CMD_RESCAN = "harnState.rescan"
CMD_RESUME = "harnState.resumeEscalation"  # {requestId, reason?}: `harn orchestrator resume` (trusted workspaces)
CMD_OPEN = "harnState.open"  # client-side: open a harn-state: URI (lens / tree targets)
CMD_COMPARE = "harnState.compareWithExisting"  # client-side diff of two URIs

SERVER_COMMANDS = (CMD_ACCEPT, CMD_REJECT, CMD_INVALIDATE_FACT, CMD_FORGET_STAGE, CMD_PROBE, CMD_RECALL, CMD_MIGRATE, CMD_RESCAN, CMD_RESUME)

KIND_ACCEPT = "source.harnState.accept"
KIND_REJECT = "source.harnState.reject"
KIND_COMPARE = "source.harnState.compare"
KIND_PROBE = "source.harnState.probe"
KIND_MIGRATE = "source.harnState.migrate"

TREE_VIEWS = ("runs", "checkpoints", "memory", "skills")
TREE_PAGE_SIZE = 200
