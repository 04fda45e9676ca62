"""The hand list of mutations scripts/mutate.py plants: plausible bugs, one exact piece of source each.

`before` must occur exactly once in the module (else the mutation is reported stale); `tests` are
the tests that cover that code (default: MODULE_TESTS of the module). Add a mutation when a review
finds a bug the tests let through, and a test that kills it (tests/unit/test_surviving_mutants.py).
"""

from __future__ import annotations

from typing import NamedTuple


class Mutation(NamedTuple):
    module: str  # under harn_ls/
    name: str
    what: str
    before: str
    after: str
    tests: tuple[str, ...] = ()


SURVIVORS = "tests/unit/test_surviving_mutants.py"

# (the quick, pointed tests first: `pytest -x` stops at the first failure)
MODULE_TESTS: dict[str, tuple[str, ...]] = {
    "formats/hitl/requests.py": (SURVIVORS, "tests/unit/test_hitl_states.py", "tests/unit/test_events.py",
                        "tests/unit/test_events_workspace.py", "tests/unit/test_fixture_consistency.py"),
    "cache/store.py": (SURVIVORS, "tests/unit/test_cache.py", "tests/unit/test_cache_append.py"),
    "formats/state_files.py": (SURVIVORS, "tests/unit/test_events.py", "tests/unit/test_events_workspace.py"),
    "actions/checkpoints.py": (SURVIVORS, "tests/unit/test_actions_checkpoints.py"),
    "actions/__init__.py": (SURVIVORS, "tests/unit/test_actions_write_safety.py", "tests/conformance/test_writes.py"),
    "cache/checkpoint_history.py": (SURVIVORS, "tests/unit/test_checkpoint_history.py"),
}

MUTATIONS: list[Mutation] = [
    # ------------------------------------------------------------------ formats/hitl/requests.py
    Mutation("formats/hitl/requests.py", "approved-not-false",
             "a response without `approved` (or \"true\") counts as an approval",
             'and p.get("approved") is True \\', 'and p.get("approved") is not False \\'),
    Mutation("formats/hitl/requests.py", "any-reviewer-approves",
             "an approval from someone not among the listed reviewers counts",
             "and (not req.reviewers or reviewer in req.reviewers)", "and (True or reviewer in req.reviewers)"),
    Mutation("formats/hitl/requests.py", "duplicate-approvals",
             "the same reviewer approving twice counts twice",
             "                and reviewer not in req.approvals:", "                and True:"),
    Mutation("formats/hitl/requests.py", "last-terminal-wins",
             "a later terminal event replaces the one that resolved the request",
             "if not req.resolved_by and is_terminal(req.kind, ev):", "if is_terminal(req.kind, ev):"),
    Mutation("formats/hitl/requests.py", "missing-approved-denies",
             "a response without `approved` ends an approval in Harn's pending list",
             '        return k in ("hitl.approval_approved", "hitl.approval_denied") or (\n'
             '            k == "hitl.response_received" and p.get("approved") is False)',
             '        return k in ("hitl.approval_approved", "hitl.approval_denied") or (\n'
             '            k == "hitl.response_received" and not p.get("approved"))'),
    Mutation("formats/hitl/requests.py", "escalation-accepted-truthy",
             "an escalation answered with a truthy non-true `accepted` counts as accepted",
             'accepted = any(r.get("accepted") is True for r in req.responses)',
             'accepted = any(r.get("accepted") for r in req.responses)'),
    Mutation("formats/hitl/requests.py", "quorum-zero",
             "a quorum of 0 is shown as 0 (Harn counts it as 1 after an approving response)",
             "req.quorum = max(1, harn_quorum(kind, p))", "req.quorum = harn_quorum(kind, p)"),
    Mutation("formats/hitl/requests.py", "overdue-at-deadline",
             "a request is overdue at its deadline, not after it",
             "now_ms > req.deadline_ms", "now_ms >= req.deadline_ms"),
    Mutation("formats/hitl/requests.py", "timeout-not-expired",
             "a timed-out request is shown denied instead of expired",
             '    if k == "hitl.timeout":\n        req.state = "expired"',
             '    if k == "hitl.timeout":\n        req.state = "denied"'),
    Mutation("formats/hitl/requests.py", "dual-control-reviewers",
             "dual control takes `reviewers` instead of `approvers`",
             'req.reviewers = _str_list(p.get("approvers"))\n            else:',
             'req.reviewers = _str_list(p.get("reviewers"))\n            else:'),
    # ------------------------------------------------------------------ cache/log_stamps.py
    Mutation("cache/log_stamps.py", "no-tail-hash",
             "compare_log skips the sha256 of the 4 KiB before the offset (edit + append taken for an append)",
             '            if sha256(fh.read(offset - start)).hexdigest() != v["tail_hash"]:\n'
             '                return "changed"\n',
             '            fh.read(offset - start)\n'),
    Mutation("cache/log_stamps.py", "no-inode-check",
             "a log replaced by another file (new inode) is taken for the cached one",
             '            if (st.st_dev, st.st_ino) != (v["dev"], v["ino"]):\n                return "changed"\n', ""),
    Mutation("cache/log_stamps.py", "no-shrink-check",
             "a log that shrank is not taken as changed",
             'if st.st_size < v["size"] or st.st_size < offset:', "if False:"),
    Mutation("cache/log_stamps.py", "no-same-size-rewrite-check",
             "a rewrite in place of the same size (new mtime) is taken as unchanged",
             '            if st.st_size == v["size"] and st.st_mtime_ns != v["mtime_ns"]:\n'
             '                return "changed"  # rewritten in place (same size): an append always grows the file\n', ""),
    Mutation("cache/log_stamps.py", "no-head-check",
             "the first bytes of the log are not compared",
             '            if fh.read(len(head)) != head:\n                return "changed"\n', ""),
    Mutation("cache/log_stamps.py", "grown-is-same",
             "a grown log is reported `same`, so the appended lines are never read",
             'return "same" if st.st_size == v["size"] and st.st_mtime_ns == v["mtime_ns"] else "appended"',
             'return "same" if st.st_mtime_ns == v["mtime_ns"] or True else "appended"'),
    Mutation("cache/log_stamps.py", "tail-window-64",
             "the validator hashes only the 64 bytes before the offset (an edit further back goes unseen)",
             "TAIL_HASH_BYTES = 4096", "TAIL_HASH_BYTES = 64"),
    # ------------------------------------------------------------------ formats/state_files.py
    Mutation("formats/state_files.py", "no-record-hash-check",
             "verify_receipt skips the record_hash check against the events' content",
             'errors.append(f"{label}: record_hash does not match the event\'s content")', "pass"),
    Mutation("formats/state_files.py", "no-prev-hash-check",
             "verify_receipt skips the chain check (prev_hash of each event)",
             'errors.append(f"{label}: prev_hash does not match the previous event\'s record_hash")', "pass"),
    Mutation("formats/state_files.py", "no-root-check",
             "verify_receipt skips the Merkle root of the events",
             'errors.append("event_root_hash does not match the events")', "pass"),
    # ------------------------------------------------------------------ actions/checkpoints.py
    Mutation("actions/checkpoints.py", "no-reread-under-lock",
             "forget_stage writes back the copy it read before waiting for the lock",
             "    _read_under_lock(path, pipeline, key, expect_mtime)\n"
             "    with _checkpoint_lock(root, path, timeout):\n"
             "        mapping = _read_under_lock(path, pipeline, key, expect_mtime)\n",
             "    first = _read_under_lock(path, pipeline, key, expect_mtime)\n"
             "    with _checkpoint_lock(root, path, timeout):\n"
             "        mapping = first\n"),
    Mutation("actions/checkpoints.py", "no-mtime-check",
             "forget_stage ignores that the file changed since it was shown",
             "if expect_mtime is not None and st.st_mtime != expect_mtime:", "if False:"),
    # ------------------------------------------------------------------ actions/__init__.py
    Mutation("actions/__init__.py", "no-mode-owner-copy",
             "the atomic write does not give the new file the replaced file's mode and owner",
             "                if before is not None:\n                    _keep_owner_and_mode(fd, before)\n", ""),
    Mutation("actions/__init__.py", "no-recheck-before-rename",
             "a file replaced between the first look and the rename keeps the older file's mode",
             "                        _keep_owner_and_mode(fd, now)  # replaced meanwhile: keep the newer file's mode",
             "                        pass"),
    # ------------------------------------------------------------------ cache/checkpoint_history.py
    Mutation("cache/checkpoint_history.py", "evict-newest",
             "the total cap may evict the newest version of a pipeline",
             'for p, idx in indexes.items() for v in idx["versions"][:-1]]',
             'for p, idx in indexes.items() for v in idx["versions"]]'),
    Mutation("cache/checkpoint_history.py", "keep-unchanged",
             "an unchanged file is recorded again as a new version",
             'if versions and versions[-1].get("sha256") == digest:', "if False:"),
    Mutation("cache/checkpoint_history.py", "no-version-cap",
             "the per-pipeline version cap is not applied",
             "            del versions[:-self.max_versions]\n", ""),
]
