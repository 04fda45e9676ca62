"""Accept / reject learned-skill proposals (harn-formats §C.2, §C.4, §E.1–E.3).

Expected SKILL.md texts below are written out by hand from §E.3 (key order,
quoting, blank line, trimmed body, final newline), not produced by the writer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed, uuid7
from harn_ls.actions import proposals as P
from harn_ls.formats import pattern_learning as pl
from harn_ls.formats.harn_time import iso_millis, now_ns, rfc3339_nanos
from harn_ls.formats.problems import Severity
from harn_ls.model.workspace import Workspace
from tests.helpers.tree import snapshot

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"
LOG = ".harn/memory/project/pattern-learning/events.jsonl"
NOW_NS = 1778577243512848123  # 2026-05-12T09:14:03.512848123Z
NOW_MS = "2026-05-12T09:14:03.512Z"

RECONCILE = "prompt-2629ccc60808"
TOOLS = "tools-7742da9fd499"
CURATED = "curated-31a76cb2e5b1"
OPENAPI = "prompt-0e59f51d1e7d"  # pending but suppressed until 2099

RECONCILE_BODY = """# Reconcile Stripe Payouts Ledger

Reusable guidance learned from 5 similar prompts.

## When to use

Use when the request matches these recurring prompt terms: reconcile, stripe, payouts, ledger.

## Steps seen in past sessions

1. `grep`
2. `read-file`
3. `edit-file`
4. `run-tests`

## Example requests

- Reconcile Stripe payouts with the ledger for April
- reconcile stripe payouts and the ledger, March is off by 40 EUR
- Reconcile Stripe payouts with the ledger export and list gaps
"""

EXPECTED_RECONCILE = """---
name: learned-reconcile-stripe-payouts-ledger
description: "Reusable guidance learned from 5 similar prompts."
when-to-use: "Use when the request matches these recurring prompt terms: reconcile, stripe, payouts, ledger."
user-invocable: true
disable-model-invocation: false
allowed-tools: []
category: Command
tags: [learned, prompt-cluster]
---

""" + RECONCILE_BODY

# In a Harn loader layer (.harn/skills) `short:` follows `name:` (Harn's canonical order), quoted like description.
EXPECTED_RECONCILE_HARN_LAYER = EXPECTED_RECONCILE.replace(
    "name: learned-reconcile-stripe-payouts-ledger\n",
    "name: learned-reconcile-stripe-payouts-ledger\n"
    'short: "Reusable guidance learned from 5 similar prompts."\n')

EXPECTED_MONTH_END = """---
name: learned-month-end-close
description: "Reconcile Stripe payouts with the ledger at month end and write a gap report."
when-to-use: "Use at month end, or when asked to reconcile payouts, the ledger or the close."
user-invocable: true
disable-model-invocation: false
allowed-tools: []
category: Command
tags: [learned, agent-curator]
---

# Month-end close workflow

Runs `workflow.harn`: fetches the month's Stripe payouts, reads the ledger export and writes `reports/close-<month>.md` \
with every payout missing from the ledger.
"""

FORGET_KEYS = ["type", "id", "namespace", "predicate", "forgotten_ids", "forgotten_at"]
STORE_KEYS = ["type", "id", "namespace", "key", "value", "text", "tags", "stored_at", "provenance"]


# ---------------------------------------------------------------- helpers

@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    (tmp_path / "outside").mkdir()
    return dest




def log_lines(project: Path, rel: str = LOG) -> list[str]:
    data = (project / rel).read_text(encoding="utf-8")
    assert data.endswith("\n")
    return data[:-1].split("\n")


def appended(project: Path, before: list[str], rel: str = LOG) -> list[dict]:
    after = log_lines(project, rel)
    assert after[: len(before)] == before, "earlier lines must never change"
    return [json.loads(line) for line in after[len(before):]]


def add_pending(project: Path, value: dict, record_id: str | None = None) -> None:
    """Append a pending record the way Harn's pl_store_record writes it."""
    full = pl.pattern_record_value(value, "pending")
    full = {k: full[k] for k in sorted(full)}
    event = {"type": "store", "id": record_id or f"pending_{value['id'].replace('-', '_')}_0123456789ab",
             "namespace": "project/pattern-learning", "key": f"pending:{value['id']}", "value": full,
             "text": json.dumps(full, separators=(",", ":"), ensure_ascii=False),
             "tags": ["pattern_learning", "pattern_learning:pending", "schema:harn.pattern_learning.v1"],
             "stored_at": "2026-05-12T08:00:00.000Z", "provenance": {"source": "harn.pattern_learning"}}
    with open(project / LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")


def skill_proposal(pid: str, name: str, **extra) -> dict:
    value = {"id": pid, "kind": "skill", "source": "prompt_cluster", "name": name, "title": "T",
             "description": "D", "when_to_use": "W", "body": "# T\n", "support": 9, "sample_prompts": [],
             "tool_sequence": [], "created_at": NOW_MS, "last_seen_at": NOW_MS}
    value.update(extra)
    return value


def _full(path, dir_fd) -> str:
    """The path a rename(2) argument names, also when it is relative to a directory fd."""
    return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path) if dir_fd is not None else str(path)


def assert_uuid7_at(value: str, at_ns: int) -> None:
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", value)
    assert int(value.replace("-", "")[:12], 16) == at_ns // 1_000_000  # time-ordered: 48-bit unix ms


# ---------------------------------------------------------------- clock / id helpers

def test_timestamp_formats():
    assert rfc3339_nanos(NOW_NS) == "2026-05-12T09:14:03.512848123+00:00"
    assert rfc3339_nanos(now_ns(datetime(2026, 5, 12, 9, 14, 3, 512848, tzinfo=UTC))) \
        == "2026-05-12T09:14:03.512848+00:00"  # chrono AutoSi: 6 digits when exact
    assert rfc3339_nanos(now_ns("2026-05-12T09:14:03.500Z")) == "2026-05-12T09:14:03.500+00:00"
    assert rfc3339_nanos(now_ns("2026-05-12T09:14:03Z")) == "2026-05-12T09:14:03+00:00"
    assert iso_millis(NOW_NS) == NOW_MS  # truncated, not rounded


def test_uuid7_sorted_and_valid():
    ids = [uuid7(NOW_NS) for _ in range(200)]
    assert ids == sorted(ids) and len(set(ids)) == 200
    for value in ids[:3]:
        assert uuid.UUID(value).version == 7
        assert_uuid7_at(value, NOW_NS)


# ---------------------------------------------------------------- listing / planning

def test_list_proposals_hides_suppressed_by_default(project):
    ws = Workspace.load(str(project))
    listed = P.list_proposals(ws, now=NOW_MS)
    assert [p["id"] for p in listed] == [TOOLS, RECONCILE, CURATED]  # support desc, id asc
    first = listed[0]
    assert first == {
        "id": TOOLS, "name": "learned-grep-read-file-edit-file-run-tests",
        "title": "Repeated grep -> read-file -> edit-file -> run-tests workflow", "kind": "skill",
        "source": "tool_sequence", "support": 6, "suppressed_until": None,
        "target": ".claude/skills/learned-grep-read-file-edit-file-run-tests/SKILL.md", "target_error": None,
        "record_id": "pending_tools_7742da9fd499_b6eea414d8d4", "enabled": True}
    assert listed[2]["target"] == ".harn/crystallization/curated-31a76cb2e5b1"
    everything = P.list_proposals(ws, include_suppressed=True, now=NOW_MS)
    assert [p["id"] for p in everything] == [TOOLS, RECONCILE, CURATED, OPENAPI]
    assert everything[3]["suppressed_until"] == "2099-01-01T00:00:00Z"


def test_planned_files_is_pure_and_exact(project, tmp_path):
    before = snapshot(tmp_path)
    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(RECONCILE))
    assert [f.path for f in plan.files] == [str(project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md")]
    assert plan.files[0].text == EXPECTED_RECONCILE
    assert (plan.files[0].conflict, plan.files[0].identical, plan.files[0].lang) == (False, False, "markdown")
    assert plan.forget_predicate == '{"key":"pending:prompt-2629ccc60808"}'
    assert plan.events_path == str(project / LOG)
    for prop in ws.pending_proposals(include_suppressed=True):
        P.planned_files(ws, prop)
        P.planned_files(ws, prop, ".harn/skills")
    assert snapshot(tmp_path) == before


def test_planned_files_namespace_subfolder(project):
    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(RECONCILE), namespace="team/Billing")
    assert plan.skill_path == str(project / ".claude/skills/team-billing/learned-reconcile-stripe-payouts-ledger/SKILL.md")
    assert plan.events_path == str(project / ".harn/memory/team/Billing/events.jsonl")


# ---------------------------------------------------------------- accept: skill

def test_accept_skill_writes_exact_file_and_forget_event(project):
    ws = Workspace.load(str(project))
    before = log_lines(project)
    result = P.accept_proposal(ws, RECONCILE, now=NOW_NS)

    target = project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    assert target.read_bytes() == EXPECTED_RECONCILE.encode("utf-8")
    assert result["written"] == [str(target)]
    assert result["skill_uri"] == target.as_uri()

    (event,) = appended(project, before)
    assert list(event) == FORGET_KEYS
    assert event["type"] == "forget"
    assert_uuid7_at(event["id"], NOW_NS)
    assert event["namespace"] == "project/pattern-learning"
    assert event["predicate"] == {"key": "pending:prompt-2629ccc60808"}
    assert event["forgotten_ids"] == ["pending_prompt_2629ccc60808_ee8f3bd0ee0c"]
    assert event["forgotten_at"] == "2026-05-12T09:14:03.512848123+00:00"
    # the line itself is serde's compact form
    assert log_lines(project)[-1] == (
        '{"type":"forget","id":"%s","namespace":"project/pattern-learning",'  # noqa: UP031 (a JSON template: % keeps its braces as they are)
        '"predicate":{"key":"pending:prompt-2629ccc60808"},'
        '"forgotten_ids":["pending_prompt_2629ccc60808_ee8f3bd0ee0c"],'
        '"forgotten_at":"2026-05-12T09:14:03.512848123+00:00"}' % event["id"])
    # the live workspace is already up to date
    assert ws.proposal(RECONCILE) is None


def test_accept_then_cold_read(project):
    old = Workspace.load(str(project))
    old_problems = {(p.path, p.line, p.code) for p in old.problems()}
    P.accept_proposal(old, RECONCILE, now=NOW_NS)

    ws = Workspace.load(str(project))
    assert ws.proposal(RECONCILE) is None
    assert RECONCILE not in [p.id for p in ws.pending_proposals(include_suppressed=True)]
    skill = next(s for s in ws.skills.skills if s.id == "learned-reconcile-stripe-payouts-ledger")
    assert skill.layer == "claude" and skill.loadable
    assert skill.description == "Reusable guidance learned from 5 similar prompts."
    new = [p for p in ws.problems() if (p.path, p.line, p.code) not in old_problems]
    # Only the reader's standing note on every pattern-learning skill (no `short`, info level).
    assert all(p.severity == Severity.INFO and p.code == "HL-SKILL-007" for p in new), new
    assert not [p for p in new if p.severity in (Severity.ERROR, Severity.WARNING)]


def test_accept_into_harn_layer_adds_short(project):
    ws = Workspace.load(str(project))
    P.accept_proposal(ws, RECONCILE, skill_root=".harn/skills", now=NOW_NS)
    target = project / ".harn/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    assert target.read_bytes() == EXPECTED_RECONCILE_HARN_LAYER.encode("utf-8")
    cold = Workspace.load(str(project))
    skill = next(s for s in cold.skills.skills if s.id == "learned-reconcile-stripe-payouts-ledger")
    assert skill.layer == "project" and skill.loadable and skill.short == "Reusable guidance learned from 5 similar prompts."
    assert not [p for p in cold.problems() if p.path == str(target) and p.severity == Severity.ERROR]


def test_second_accept_is_refused(project, tmp_path):
    ws = Workspace.load(str(project))
    P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="no longer pending"):
        P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    with pytest.raises(ActionFailed, match="no longer pending"):
        P.accept_proposal(Workspace.load(str(project)), RECONCILE, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_accept_rereads_log_someone_else_acted(project, tmp_path):
    ws = Workspace.load(str(project))  # loaded before Harn forgets the proposal
    with open(project / LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "forget", "id": "019e2000-0000-7000-8000-000000000000",
                             "namespace": "project/pattern-learning", "predicate": {"key": f"pending:{RECONCILE}"},
                             "forgotten_ids": ["pending_prompt_2629ccc60808_ee8f3bd0ee0c"],
                             "forgotten_at": "2026-05-12T09:00:00+00:00"}, separators=(",", ":")) + "\n")
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="no longer pending"):
        P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    with pytest.raises(ActionFailed, match="no longer pending"):
        P.reject_proposal(ws, RECONCILE, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_different_existing_skill_is_refused(project, tmp_path):
    target = project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    target.parent.mkdir(parents=True)
    target.write_text(EXPECTED_RECONCILE.replace("Example requests", "Examples"))
    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(RECONCILE))
    assert plan.files[0].conflict and not plan.files[0].identical
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="different file already exists"):
        P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_identical_existing_skill_is_the_recovery_path(project):
    """Harn's order is files, then forget: a crash in between leaves the skill written and the
    proposal pending. Accepting again must succeed without rewriting the file."""
    target = project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    target.parent.mkdir(parents=True)
    target.write_bytes(EXPECTED_RECONCILE.encode())
    os.utime(target, (1_000_000_000, 1_000_000_000))
    ws = Workspace.load(str(project))
    assert P.planned_files(ws, ws.proposal(RECONCILE)).files[0].identical
    before = log_lines(project)
    result = P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    assert result["written"] == [] and result["unchanged"] == [str(target)]
    assert os.stat(target).st_mtime == 1_000_000_000  # not rewritten
    (event,) = appended(project, before)
    assert event["predicate"] == {"key": f"pending:{RECONCILE}"}
    assert Workspace.load(str(project)).proposal(RECONCILE) is None


def test_forget_lists_every_active_record_with_the_key(project):
    # A second pending record for the same proposal id (e.g. a refresh Harn did not dedupe).
    value = dict(Workspace.load(str(project)).proposal(RECONCILE).record.value)
    value.pop("schema"), value.pop("record_kind")
    add_pending(project, value, record_id="pending_prompt_2629ccc60808_aaaaaaaaaaaa")
    ws = Workspace.load(str(project))
    before = log_lines(project)
    P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    (event,) = appended(project, before)
    assert event["forgotten_ids"] == ["pending_prompt_2629ccc60808_ee8f3bd0ee0c", "pending_prompt_2629ccc60808_aaaaaaaaaaaa"]


# ---------------------------------------------------------------- accept: executable

def test_accept_executable_stages_candidate(project):
    ws = Workspace.load(str(project))
    prop = ws.proposal(CURATED)
    artifact = prop.artifact
    before = log_lines(project)
    result = P.accept_proposal(ws, CURATED, now=NOW_NS)
    cand = project / ".harn/crystallization/curated-31a76cb2e5b1"
    skill = cand / ".claude/skills/learned-month-end-close/SKILL.md"
    assert result["written"] == [str(cand / "workflow.harn"), str(cand / "test.harn"), str(skill),
                                 str(cand / "proposal.json")]
    assert (cand / "workflow.harn").read_text() == artifact["source"]
    assert (cand / "test.harn").read_text() == artifact["test_source"]
    assert skill.read_bytes() == EXPECTED_MONTH_END.encode()
    expected = dict(prop.record.value)
    expected.update({"schema": "harn.crystallization.authored-candidate.v1", "status": "staged",
                     "candidate_dir": str(cand), "staged_at": NOW_MS})
    # json_stringify: compact, keys sorted at every level, raw UTF-8
    assert (cand / "proposal.json").read_text() == json.dumps(expected, sort_keys=True, separators=(",", ":"),
                                                              ensure_ascii=False)
    assert expected["record_kind"] == "pending"
    (event,) = appended(project, before)
    assert event["predicate"] == {"key": f"pending:{CURATED}"}
    assert event["forgotten_ids"] == ["pending_curated_31a76cb2e5b1_2eba35c0e877"]
    assert not (project / ".claude/skills/learned-month-end-close").exists()


def test_executable_reaccept_replaces_own_staging_record_only(project, tmp_path):
    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(CURATED), now=NOW_NS)
    for f in plan.files:  # a crash after all files, before the forget
        Path(f.path).parent.mkdir(parents=True, exist_ok=True)
        Path(f.path).write_text(f.text)
    later = NOW_NS + 60 * 10**9
    result = P.accept_proposal(ws, CURATED, now=later)
    assert result["written"] == [plan.files[-1].path]  # only proposal.json (new staged_at)
    assert json.loads(Path(plan.files[-1].path).read_text())["staged_at"] == iso_millis(later)

    # a foreign proposal.json is a conflict
    shutil.rmtree(project)
    shutil.copytree(FIXTURE, project, symlinks=True)
    pj = project / ".harn/crystallization/curated-31a76cb2e5b1/proposal.json"
    pj.parent.mkdir(parents=True)
    pj.write_text('{"id":"something-else"}')
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="different file"):
        P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_executable_staging_is_one_rename_of_a_complete_folder(project, monkeypatch):
    import harn_ls.actions as A

    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(CURATED), now=NOW_NS)
    cand = project / ".harn/crystallization" / CURATED
    renames = []
    real_rename = os.rename

    def spy(src, dst, **kw):
        # at the moment of the rename every planned file is complete in the hidden staging folder
        src_s, dst_s = _full(src, kw.get("src_dir_fd")), _full(dst, kw.get("dst_dir_fd"))
        if dst_s == str(cand):
            assert not cand.exists()
            assert os.path.basename(src_s).startswith(f".{CURATED}.harn-ls-") and src_s.endswith(".staging")
            assert os.path.dirname(src_s) == str(cand.parent)
            for f in plan.files:
                assert Path(src_s, os.path.relpath(f.path, cand)).read_text() == f.text
            renames.append(src_s)
        return real_rename(src, dst, **kw)

    monkeypatch.setattr(A.os, "rename", spy)
    result = P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert len(renames) == 1 and not os.path.exists(renames[0])
    assert result["written"] == [f.path for f in plan.files]
    assert sorted(os.listdir(cand.parent)) == [CURATED]  # no staging left behind


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4, 5])
def test_executable_staging_failure_leaves_no_folder(project, tmp_path, monkeypatch, fail_at):
    """An error at any write (or at the rename) leaves no candidate folder, no staging and no event."""
    import harn_ls.actions as A

    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    calls = {"n": 0}
    real_fsync, real_rename = os.fsync, os.rename

    def failing(real):
        def call(*args, **kw):
            calls["n"] += 1
            if calls["n"] == fail_at:
                raise OSError(28, "No space left on device")
            return real(*args, **kw)
        return call

    # fsync of files 1-4 fail for fail_at 1..4; fail_at 5 lets them pass and fails the rename
    monkeypatch.setattr(A.os, "fsync", failing(real_fsync) if fail_at < 5 else real_fsync)
    if fail_at == 5:
        calls["n"] = 4
        monkeypatch.setattr(A.os, "rename", failing(real_rename))
    with pytest.raises(OSError, match="No space"):
        P.accept_proposal(ws, CURATED, now=NOW_NS)
    monkeypatch.undo()
    after = snapshot(tmp_path)
    created = set(after) - set(before)
    assert all(p.endswith(".harn/crystallization") for p in created) or not created, created
    assert {k: v for k, v in after.items() if k in before} == before
    assert not (project / ".harn/crystallization" / CURATED).exists()
    assert Workspace.load(str(project)).proposal(CURATED) is not None


def test_stale_staging_folders_are_swept_fresh_ones_kept(project):
    parent = project / ".harn/crystallization"
    stale = parent / f".{CURATED}.harn-ls-{'a' * 32}.staging"
    fresh = parent / f".{CURATED}.harn-ls-{'b' * 32}.staging"
    foreign = parent / f".{CURATED}.someone-else.staging"
    for d in (stale, fresh, foreign):
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "x").write_text("half")
    old = 1_000_000_000
    os.utime(stale, (old, old))
    os.utime(foreign, (old, old))
    ws = Workspace.load(str(project))
    P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert not stale.exists()  # ours and older than 10 minutes
    assert fresh.exists() and foreign.exists()  # maybe a live writer / not ours
    assert (parent / CURATED / "proposal.json").is_file()


def test_existing_complete_identical_candidate_writes_nothing(project):
    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(CURATED), now=NOW_NS)
    for f in plan.files:  # a crash after the rename, before the forget
        Path(f.path).parent.mkdir(parents=True, exist_ok=True)
        Path(f.path).write_text(f.text)
    before = log_lines(project)
    result = P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert result["written"] == [] and result["unchanged"] == [f.path for f in plan.files]
    (event,) = appended(project, before)
    assert event["predicate"] == {"key": f"pending:{CURATED}"}


def test_existing_empty_candidate_folder_is_staged(project):
    cand = project / ".harn/crystallization" / CURATED
    cand.mkdir(parents=True)
    ws = Workspace.load(str(project))
    result = P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert len(result["written"]) == 4 and all(Path(p).is_file() for p in result["written"])


def test_incomplete_candidate_folder_refused_nothing_written(project, tmp_path):
    ws = Workspace.load(str(project))
    plan = P.planned_files(ws, ws.proposal(CURATED), now=NOW_NS)
    for f in plan.files[:2]:  # half-staged by something else (or an old writer)
        Path(f.path).parent.mkdir(parents=True, exist_ok=True)
        Path(f.path).write_text(f.text)
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="incomplete staging"):
        P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_candidate_folder_appearing_meanwhile_is_not_overwritten(project, tmp_path, monkeypatch):
    import harn_ls.actions as A

    cand = project / ".harn/crystallization" / CURATED
    real_rename = os.rename

    def racing(src, dst, **kw):
        if _full(dst, kw.get("dst_dir_fd")) == str(cand):  # someone else stages the folder just before our rename
            cand.mkdir()
            (cand / "theirs.txt").write_text("keep")
        return real_rename(src, dst, **kw)

    monkeypatch.setattr(A.os, "rename", racing)
    ws = Workspace.load(str(project))
    with pytest.raises(ActionFailed, match="already exists"):
        P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert sorted(os.listdir(cand)) == ["theirs.txt"]
    assert sorted(os.listdir(cand.parent)) == [CURATED]  # our staging folder is gone
    assert Workspace.load(str(project)).proposal(CURATED) is not None


def test_symlinked_candidate_folder_refused(project, tmp_path):
    parent = project / ".harn/crystallization"
    parent.mkdir(parents=True)
    (project / "elsewhere").mkdir()
    os.symlink(project / "elsewhere", parent / CURATED)
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="refused"):
        P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("rel", ["../x", "/abs", "a//b", "a/./b", "a\\b", "a\nb", ""])
def test_atomic_write_dir_refuses_odd_paths(tmp_path, rel):
    from harn_ls.actions import atomic_write_dir

    with pytest.raises(ActionFailed, match="refused"):
        atomic_write_dir(str(tmp_path), str(tmp_path / "cand"), {rel: "x"})
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- hostile proposals

HOSTILE_NAMES = ["../../x", "/etc/cron.d/x", "learned\nname", "learned-x\x00", "", "Learned-Upper", ".."]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_refused_nothing_written(project, tmp_path, name):
    add_pending(project, skill_proposal("prompt-hostile00001", name))
    ws = Workspace.load(str(project))
    prop = ws.proposal("prompt-hostile00001")
    assert prop is not None
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="HARN-PATTERN-002"):
        P.planned_files(ws, prop)
    with pytest.raises(ActionFailed, match="HARN-PATTERN-002"):
        P.accept_proposal(ws, "prompt-hostile00001", now=NOW_NS)
    assert snapshot(tmp_path) == before
    listed = {p["id"]: p for p in P.list_proposals(ws, now=NOW_MS)}
    assert listed["prompt-hostile00001"]["target"] is None and "HARN-PATTERN-002" in listed["prompt-hostile00001"]["target_error"]


@pytest.mark.parametrize("pid", ["../../x", "a/b", "..", "a\\b", "curated-x\nfoo"])
def test_hostile_ids_refused_nothing_written(project, tmp_path, pid):
    value = dict(Workspace.load(str(project)).proposal(CURATED).record.value)
    value.pop("schema"), value.pop("record_kind")
    value["id"] = pid
    add_pending(project, value, record_id="pending_hostile_0123456789ab")
    ws = Workspace.load(str(project))
    assert ws.proposal(pid) is not None
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="refused"):
        P.accept_proposal(ws, pid, now=NOW_NS)
    with pytest.raises(ActionFailed, match="refused"):
        P.reject_proposal(ws, pid, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_symlinked_skill_root_outside_refused(project, tmp_path):
    outside = tmp_path / "outside"
    shutil.rmtree(project / ".claude/skills")
    os.symlink(outside, project / ".claude/skills")
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="outside the project"):
        P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    assert snapshot(tmp_path) == before
    assert list(outside.iterdir()) == []


def test_symlinked_skill_dir_and_file_refused(project, tmp_path):
    outside = tmp_path / "outside"
    skills = project / ".claude/skills"
    os.symlink(outside, skills / "learned-reconcile-stripe-payouts-ledger")
    (outside / "victim.md").write_text("keep")
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="outside the project"):
        P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    # a SKILL.md that is itself a link (even to a file inside the project) is never written through
    os.unlink(skills / "learned-reconcile-stripe-payouts-ledger")
    (skills / "learned-reconcile-stripe-payouts-ledger").mkdir()
    os.symlink(project / "README.md", skills / "learned-reconcile-stripe-payouts-ledger/SKILL.md")
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="symlink"):
        P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_symlinked_crystallization_dir_outside_refused(project, tmp_path):
    outside = tmp_path / "outside"
    shutil.rmtree(project / ".harn" / "crystallization", ignore_errors=True)
    os.symlink(outside, project / ".harn" / "crystallization")
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="outside the project"):
        P.accept_proposal(ws, CURATED, now=NOW_NS)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("root", ["../outside", "{outside}", ".claude/../../outside", "skills\nx", "/etc"])
def test_skill_root_outside_refused(project, tmp_path, root):
    root = root.format(outside=tmp_path / "outside")
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="refused"):
        P.accept_proposal(ws, RECONCILE, skill_root=root, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_executable_without_artifact_refused(project, tmp_path):
    add_pending(project, skill_proposal("curated-000000000001", "learned-tool", kind="harn_tool"))
    add_pending(project, skill_proposal("curated-000000000002", "learned-odd", kind="plugin"))
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="no artifact"):
        P.accept_proposal(ws, "curated-000000000001", now=NOW_NS)
    with pytest.raises(ActionFailed, match="unknown proposal kind"):
        P.accept_proposal(ws, "curated-000000000002", now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_harn_tool_and_hybrid_use_server_entrypoint(project):
    for pid, kind in (("curated-00000000000a", "harn_tool"), ("curated-00000000000b", "hybrid")):
        add_pending(project, skill_proposal(pid, f"learned-{kind.replace('_', '-')}", kind=kind,
                                            artifact={"entrypoint": "server.harn", "source": "S", "test_source": "T"}))
    ws = Workspace.load(str(project))
    for pid in ("curated-00000000000a", "curated-00000000000b"):
        names = [os.path.basename(f.path) for f in P.planned_files(ws, ws.proposal(pid)).files]
        assert names == ["server.harn", "test.harn", "SKILL.md", "proposal.json"]


# ---------------------------------------------------------------- reject

def test_reject_events_exact(project):
    ws = Workspace.load(str(project))
    before = log_lines(project)
    result = P.reject_proposal(ws, TOOLS, now=NOW_NS)
    forget_pending, forget_state, store = appended(project, before)

    for event in (forget_pending, forget_state):
        assert list(event) == FORGET_KEYS
        assert event["namespace"] == "project/pattern-learning"
        assert event["forgotten_at"] == "2026-05-12T09:14:03.512848123+00:00"
        assert_uuid7_at(event["id"], NOW_NS)
    assert forget_pending["id"] != forget_state["id"]
    assert forget_pending["predicate"] == {"key": "pending:tools-7742da9fd499"}
    assert forget_pending["forgotten_ids"] == ["pending_tools_7742da9fd499_b6eea414d8d4"]
    assert forget_state["predicate"] == {"key": "state"}
    assert forget_state["forgotten_ids"] == ["state_b272eea8aa2d"]

    assert list(store) == STORE_KEYS
    assert store["type"] == "store"
    assert re.fullmatch(r"state_[0-9a-f]{12}", store["id"]) and store["id"] == result["state_id"]
    assert store["namespace"] == "project/pattern-learning"
    assert store["key"] == "state"
    value = {"enabled": True, "record_kind": "state", "schema": "harn.pattern_learning.v1",
             "suppressed_until": {"prompt-0e59f51d1e7d": "2099-01-01T00:00:00Z",
                                  "tools-7742da9fd499": "2026-05-26T09:14:03.512+00:00",
                                  "tools-a7afd3ead6d8": "2026-05-21T10:20:11Z"},
             "updated_at": "2026-05-12T09:14:03.512Z"}
    assert store["value"] == value and list(store["value"]) == sorted(value)
    assert list(store["value"]["suppressed_until"]) == sorted(value["suppressed_until"])
    assert store["text"] == (
        '{"enabled":true,"record_kind":"state","schema":"harn.pattern_learning.v1",'
        '"suppressed_until":{"prompt-0e59f51d1e7d":"2099-01-01T00:00:00Z",'
        '"tools-7742da9fd499":"2026-05-26T09:14:03.512+00:00","tools-a7afd3ead6d8":"2026-05-21T10:20:11Z"},'
        '"updated_at":"2026-05-12T09:14:03.512Z"}')
    assert store["tags"] == ["pattern_learning", "pattern_learning:state", "schema:harn.pattern_learning.v1"]
    assert store["stored_at"] == "2026-05-12T09:14:03.512Z"
    assert store["provenance"] == {"source": "harn.pattern_learning"}
    assert result["suppressed_until"] == "2026-05-26T09:14:03.512+00:00"


def test_reject_then_cold_read(project):
    P.reject_proposal(Workspace.load(str(project)), TOOLS, days=3, now=NOW_NS)
    ws = Workspace.load(str(project))
    assert ws.proposal(TOOLS) is None
    state = ws.pattern.state
    assert state.enabled is True and state.updated_at == NOW_MS
    assert state.suppressed_until[TOOLS] == "2026-05-15T09:14:03.512+00:00"
    assert len(ws.pattern.state_records) == 1  # the old state was forgotten
    # Harn's string compare: suppressed up to (not including) the exact instant
    assert pl.is_suppressed(TOOLS, state, "2026-05-15T09:14:03.511Z")
    assert not pl.is_suppressed(TOOLS, state, "2026-05-15T09:14:03.512Z")
    # a later Harn refresh re-proposes it: hidden until then, shown on request
    value = {"id": TOOLS, "kind": "skill", "source": "tool_sequence", "name": "learned-grep-read-file-edit-file-run-tests",
             "title": "x", "description": "x", "when_to_use": "x", "body": "x", "support": 7, "sample_prompts": [],
             "tool_sequence": [], "created_at": NOW_MS, "last_seen_at": NOW_MS}
    add_pending(project, value, record_id="pending_tools_7742da9fd499_bbbbbbbbbbbb")
    ws = Workspace.load(str(project))
    assert TOOLS not in [p.id for p in ws.pending_proposals(now="2026-05-14T00:00:00.000Z")]
    assert TOOLS in [p.id for p in ws.pending_proposals(now="2026-05-16T00:00:00.000Z")]
    listed = {p["id"]: p for p in P.list_proposals(ws, include_suppressed=True, now="2026-05-14T00:00:00.000Z")}
    assert listed[TOOLS]["suppressed_until"] == "2026-05-15T09:14:03.512+00:00"
    assert not [p for p in ws.problems() if p.severity == Severity.ERROR and "pattern-learning" in p.path]


def test_reject_keeps_disabled_state(project):
    ws = Workspace.load(str(project))
    P.reject_proposal(ws, TOOLS, now=NOW_NS)
    # A disabled state (Harn's `enabled: false`) survives a reject.
    state_value = dict(ws.pattern.state.record.value)
    state_value["enabled"] = False
    state_value["updated_at"] = "2026-05-12T09:20:00.000Z"
    event = {"type": "store", "id": "state_cccccccccccc", "namespace": "project/pattern-learning", "key": "state",
             "value": state_value, "text": json.dumps(state_value, separators=(",", ":")),
             "tags": ["pattern_learning", "pattern_learning:state", "schema:harn.pattern_learning.v1"],
             "stored_at": "2026-05-12T09:20:00.000Z", "provenance": {"source": "harn.pattern_learning"}}
    with open(project / LOG, "a") as fh:
        fh.write(json.dumps(event, separators=(",", ":")) + "\n")
    ws = Workspace.load(str(project))
    active_states = [r.record.id for r in ws.pattern.state_records]
    assert len(active_states) == 2 and ws.pattern.state.enabled is False
    before = log_lines(project)
    P.reject_proposal(ws, RECONCILE, now=NOW_NS + 3600 * 10**9)
    f1, f2, store = appended(project, before)
    assert f2["forgotten_ids"] == active_states  # every active `state` record, in file order
    assert store["value"]["enabled"] is False
    assert set(store["value"]["suppressed_until"]) == {OPENAPI, TOOLS, RECONCILE, "tools-a7afd3ead6d8"}


@pytest.mark.parametrize("days", [0, -1, 1.5, True, "14", 10**6])
def test_reject_bad_days_refused(project, tmp_path, days):
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="days"):
        P.reject_proposal(ws, TOOLS, days=days, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_reject_unknown_refused(project, tmp_path):
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    with pytest.raises(ActionFailed, match="no longer pending"):
        P.reject_proposal(ws, "prompt-000000000000", now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_state_dir_outside_project(project, tmp_path):
    """Pattern learning follows HARN_STATE_DIR (§E.1); the skill still goes into the project."""
    state = tmp_path / "state"
    shutil.copytree(project / ".harn", state)
    env = {"HARN_STATE_DIR": str(state)}
    ws = Workspace.load(str(project), env=env)
    P.accept_proposal(ws, RECONCILE, now=NOW_NS)
    P.reject_proposal(ws, TOOLS, now=NOW_NS)
    skill = project / ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md"
    assert skill.read_bytes() == EXPECTED_RECONCILE.encode()
    assert (project / LOG).read_text() == (FIXTURE / LOG).read_text()  # the project's own log untouched
    cold = Workspace.load(str(project), env=env)
    assert cold.proposal(RECONCILE) is None and cold.proposal(TOOLS) is None
    assert cold.pattern.state.suppressed_until[TOOLS] == "2026-05-26T09:14:03.512+00:00"
