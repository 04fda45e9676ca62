"""render/lenses.py and render/proposal_choices.py without a server: lens titles, their commands
and arguments, and the Accept / Reject / Compare choices; plus their translation to LSP types."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harn_ls import contract as P
from harn_ls.cache.checkpoint_history import CheckpointHistory
from harn_ls.formats.fact_anchors import Anchor
from harn_ls.lsp.capabilities import ClientProfile
from harn_ls.lsp.view_types import to_code_action, to_command
from harn_ls.model.accept_plan import planned_files
from harn_ls.model.checkpoint_versions import record_workspace
from harn_ls.model.fact_spans import FactSpan
from harn_ls.model.workspace import Workspace
from harn_ls.render import view_commands as V
from harn_ls.render.lenses import (
    FACTS_CHANGED,
    checkpoint_lens,
    checkpoint_lens_spots,
    fact_lens,
    fact_lens_ranges,
    fact_lens_title,
)
from harn_ls.render.limits import LABEL_BYTES
from harn_ls.render.proposal_choices import proposal_at_line, proposal_choices, proposal_lenses
from harn_ls.util.utf8 import utf8_len
from tests.helpers.views import INVOICE, INVOICE_FACT, LATE_FEE_FACT, append_events, copy_sample, fact_event

PROPOSAL = "tools-7742da9fd499"  # learned-grep-read-file-edit-file-run-tests, nothing in the way of Accept


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


def test_fact_lenses_one_per_range_with_title_and_target(project):
    append_events(project, [fact_event("fact_second", "also here", f"{INVOICE}:28-29", kind="decision", confidence=0.4),
                            fact_event("fact_low", "hardly", f"{INVOICE}:3", confidence=0.1)])
    ws = Workspace.load(str(project))
    path = str(project / INVOICE)
    assert fact_lens_ranges(ws, path, 0.0) == [(3, 3), (16, 16), (28, 29)]
    assert fact_lens_ranges(ws, path, 0.5) == [(16, 16), (28, 29)]
    lens = fact_lens(ws, path, 28, 29, 0.0)
    assert lens == V.ViewCommand("2 facts · observation 0.9", V.OPEN, [f"harn-state:/facts/{INVOICE_FACT}.md"])
    # the late-fee fixture fact's snippet is not on line 16 any more: the title says so
    assert fact_lens(ws, path, 16, 16, 0.0) == V.ViewCommand("1 fact · observation 0.6 · may be stale", V.OPEN,
                                                              [f"harn-state:/facts/{LATE_FEE_FACT}.md"])
    assert fact_lens(ws, path, 3, 3, 0.5) == FACTS_CHANGED  # below the threshold now: nothing to open
    assert fact_lens(ws, path, 5, 6, 0.0) == FACTS_CHANGED


def test_fact_lens_title_is_one_capped_line():
    kind = "observation\n[x](command:evil) $(zap) " + "k" * 500
    fact = SimpleNamespace(id="fact_x", kind=kind, confidence=0.5)
    spans = [FactSpan(fact, None, Anchor("ok", 3, 3)), FactSpan(fact, None, Anchor("moved", 3, 3))]
    title = fact_lens_title(spans)
    assert title.startswith("1 fact · observation [x](command:evil) $ (zap) kkk")  # one fact, two evidence ranges
    assert "\n" not in title and "$(" not in title and title.endswith(" 0.5 · re-anchored")
    assert utf8_len(title) < 120  # the kind is cut at 60 bytes


def test_moved_fact_lens_says_re_anchored(project):
    src = project / INVOICE
    src.write_text("# one more line\n" + src.read_text())
    ws = Workspace.load(str(project))
    path = str(src)
    assert (29, 30) in fact_lens_ranges(ws, path, 0.0)
    assert fact_lens(ws, path, 29, 30, 0.0).title == "1 fact · observation 0.9 · re-anchored"


def test_checkpoint_lenses(project):
    ws = Workspace.load(str(project))
    open_ingest = ["harn-state:/checkpoints/ingest.md"]
    assert checkpoint_lens(ws, "ingest", "fetch") == V.ViewCommand("cached", V.OPEN, open_ingest)
    assert checkpoint_lens(ws, "ingest", "prepare") == V.ViewCommand("cached · keyed sha256:28234a10…", V.OPEN, open_ingest)
    assert checkpoint_lens(ws, "ingest", "no_such_stage") == V.ViewCommand("not cached", V.OPEN, open_ingest)
    assert checkpoint_lens(ws, "nowhere", "x").title == "not cached"


def test_checkpoint_lens_unreadable_file_and_changed_stage(project, tmp_path, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARN_LS_CACHE", raising=False)
    ckpt = project / ".harn/checkpoints/ingest.json"
    ws = Workspace.load(str(project))
    ws.checkpoint_history = CheckpointHistory.for_project(str(project))
    record_workspace(ws)
    data = json.loads(ckpt.read_text())
    data["fetch"] = {"changed": True}
    ckpt.write_text(json.dumps(dict(sorted(data.items())), indent=2))
    ws.apply_changes([str(ckpt)])
    record_workspace(ws, {"ingest"})
    assert checkpoint_lens(ws, "ingest", "fetch").title == "cached · changed since the last run"
    assert checkpoint_lens(ws, "ingest", "clean").title == "cached"
    ckpt.write_text("{not json")
    ws.apply_changes([str(ckpt)])
    assert checkpoint_lens(ws, "ingest", "fetch").title == "checkpoint file unreadable · Harn would rerun"


def test_checkpoint_lens_spots_only_in_harn_files(project):
    text = (project / "pipelines/ingest.harn").read_text()
    spots = checkpoint_lens_spots(str(project / "pipelines/ingest.harn"), text)
    assert spots and {s.pipeline for s in spots} == {"ingest"}
    lines = text.splitlines()
    for s in spots:
        assert lines[s.line][s.start_char:s.end_char].startswith("checkpoint")  # the lens sits on the call
    assert [s.stage for s in spots] == ["fetch", "prepare", "clean", "processed_ids", "upload", "notify"]
    assert checkpoint_lens_spots(str(project / "pipelines/ingest.txt"), text) == []


def test_proposal_choices_accept_then_reject(project):
    ws = Workspace.load(str(project))
    choices = proposal_choices(ws, PROPOSAL, None)
    assert [(c.title, c.action, c.command.arguments) for c in choices] == [
        ("Accept skill learned-grep-read-file-edit-file-run-tests", V.ACCEPT, [P.AcceptArgs(id=PROPOSAL)]),
        ("Reject for 14 days", V.REJECT, [P.RejectArgs(id=PROPOSAL, days=14)]),
    ]
    assert all(c.data == {"id": PROPOSAL} for c in choices)
    assert proposal_choices(ws, "prompt-000000000000", None) == []


def test_proposal_choices_compare_when_accept_would_overwrite(project):
    ws = Workspace.load(str(project))
    plan = planned_files(ws, ws.proposal(PROPOSAL))
    target = Path(plan.files[0].path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("someone else's skill\n")
    choices = proposal_choices(ws, PROPOSAL, None)
    rel = str(target.relative_to(project))
    assert [c.action for c in choices] == [V.COMPARE, V.REJECT]
    compare = choices[0]
    assert compare.title == f"Compare with existing {rel}"
    assert compare.command.arguments == [P.CompareArgs(id=PROPOSAL, path=str(target),
                                                       uri=f"harn-state:/proposals/{PROPOSAL}.md?file={rel.replace('/', '%2F')}")]


def test_proposal_lenses_are_capped_one_line_titles(project):
    ws = Workspace.load(str(project))
    choices = proposal_choices(ws, PROPOSAL, None)
    lenses = proposal_lenses(choices)
    assert [(v.title, v.action) for v in lenses] == [(c.command.title, c.action) for c in choices]
    long = proposal_lenses([type(choices[0])("t", V.ViewCommand("Accept skill x\ny $(zap)" + "z" * 1000, V.ACCEPT, []))])
    assert "\n" not in long[0].title and "$(" not in long[0].title and utf8_len(long[0].title) <= LABEL_BYTES + 40


def test_proposal_at_line_finds_the_pending_store_event(project):
    ws = Workspace.load(str(project))
    events = ws.namespace_path("project/pattern-learning")
    prop = ws.proposal(PROPOSAL)
    assert proposal_at_line(ws, events, prop.record.line_no) == PROPOSAL
    assert proposal_at_line(ws, events, 10_000) is None


def test_translation_to_lsp_types(project):
    ws = Workspace.load(str(project))
    ours = ClientProfile(client_commands=frozenset({P.CMD_OPEN, P.CMD_COMPARE}))
    cmd = to_command(fact_lens(ws, str(project / INVOICE), 28, 29, 0.0), ours)
    assert (cmd.command, cmd.arguments) == (P.CMD_OPEN, [f"harn-state:/facts/{INVOICE_FACT}.md"])
    none = to_command(FACTS_CHANGED, ours)
    assert (none.title, none.command, none.arguments) == ("facts changed · reopen", "", None)
    # a client that runs no command of its own: open through the server where it can show documents,
    # else the title only
    shows = ClientProfile(show_document=True, text_document_content=True)
    cmd = to_command(fact_lens(ws, str(project / INVOICE), 28, 29, 0.0), shows)
    assert (cmd.command, cmd.arguments) == ("harnState.server.open", [f"harn-state:/facts/{INVOICE_FACT}.md"])
    bare = to_command(fact_lens(ws, str(project / INVOICE), 28, 29, 0.0), ClientProfile())
    assert (bare.command, bare.arguments) == ("", None) and bare.title == cmd.title
    actions = [to_code_action(c, ours) for c in proposal_choices(ws, PROPOSAL, None)]
    assert [(a.kind, a.command.command) for a in actions] == [(P.KIND_ACCEPT, P.CMD_ACCEPT), (P.KIND_REJECT, P.CMD_REJECT)]
    assert actions[1].command.arguments == [{"id": PROPOSAL, "days": 14}] and actions[1].data == {"id": PROPOSAL}
