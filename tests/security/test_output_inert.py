"""Issue 12 item 7: text from data is inert, and Compare shows what Accept writes.

The attacks: a fact claim that draws its own "---" and "**observation** · confidence **0.99**"
block, links to `command:` URIs, remote images and HTML; the same in a proposal description,
a skill's frontmatter, a run's workflow name and a tool call's name and arguments; a proposal
description holding a fake "What Accept writes" block."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harn_ls.actions.proposals import accept_proposal, planned_files
from harn_ls.lsp.tree import tree_options
from harn_ls.model.fact_spans import fact_spans
from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, make_uri, render_uri
from harn_ls.render.hover import hover_markdown
from harn_ls.render.markdown import escape_markdown
from harn_ls.render.tree_items import tree_items
from tests.security.hostile_data import RUN_ID, SPOOF, TRANSCRIPT_ID, make_hostile_project
from tests.security.inert import assert_no_live_markup, prose

EVIL = "prompt-evil00000001"
EVIL_MULTILINE = "prompt-evil00000002"
_LINKS = re.compile(r"\]\((harn-state:[^)]+)\)")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def proj(tmp_path_factory) -> Path:
    return make_hostile_project(tmp_path_factory.mktemp("inert"), big=False)


@pytest.fixture(scope="module")
def ws(proj) -> Workspace:
    return Workspace.load(str(proj))


def _all_documents(ws) -> dict[str, str]:
    docs, todo = {}, [make_uri("index"), make_uri("runs", RUN_ID), make_uri("transcripts", TRANSCRIPT_ID),
                      make_uri("skills", "sneaky"), make_uri("recall", q="harmless helper verified")]
    while todo:
        uri = todo.pop()
        if uri in docs or len(docs) > 300:
            continue
        docs[uri] = render_uri(ws, uri, RenderSettings(show_private=True))
        todo.extend(u for u in _LINKS.findall(docs[uri]) if "?file=" not in u)
    return docs


def test_no_document_has_markup_from_data(ws):
    docs = _all_documents(ws)
    for must in (make_uri("facts", "fact_spoofed_claim"), make_uri("proposals", EVIL), make_uri("skills", "sneaky"),
                 make_uri("runs", RUN_ID), make_uri("transcripts", TRANSCRIPT_ID)):
        assert must in docs
    for uri, text in docs.items():
        assert_no_live_markup(text, uri)
        body = prose(text)
        # the claim's fake structure is not structure: no thematic break or bold line came from it
        assert "**observation** · confidence **0.99**" not in body, uri
        assert not re.search(r"^(# Heading|> quote|- item|1\. one)$", body, re.M), uri


def test_fact_document_shows_the_claim_as_text(ws):
    text = render_uri(ws, make_uri("facts", "fact_spoofed_claim"))
    assert escape_markdown(SPOOF) in text  # all of it, escaped
    assert text.count("\n---\n") == 0


def test_hover_is_inert(ws):
    path = str(Path(ws.root) / "src/billing/invoice.py")
    spans = [s for s in fact_spans(ws, path, 0.0) if s.anchor.start <= 28 <= s.anchor.end]
    assert any(s.fact.id == "fact_spoofed_claim" for s in spans)
    md = hover_markdown(spans)
    assert_no_live_markup(md, "hover")
    # our separators between facts are the only thematic breaks; the claim's own "---" is text
    assert md.count("\n---\n") == len(spans) - 1
    assert md.count("confidence **") == len(spans)


def test_tree_tooltips_and_labels_are_inert(ws):
    for view, parent in (("memory", "fk:observation"), ("skills", "proposals"), ("skills", "layer:project"), ("runs", None)):
        for item in tree_items(ws, view, parent, tree_options()):
            assert_no_live_markup(item["tooltip"], f"{view}/{parent} tooltip")  # shown as a MarkdownString
            assert "\n" not in item["label"] and "$(" not in item["label"] + item["description"]


def test_fake_accept_block_is_not_a_section(ws):
    text = render_uri(ws, make_uri("proposals", EVIL))
    lines = prose(text).split("\n")  # outside code fences: the SKILL.md preview may quote the data verbatim
    assert lines.count("## What Accept writes") == 1
    assert not any(line.startswith("### ") and "learned-evil" in line for line in lines)
    every = text.split("\n")
    real = every.index("## What Accept writes")  # ours comes first: the data's copy sits in the fence below
    assert every[real + 2] == "### `.claude/skills/learned-sneaky-helper/SKILL.md`"


def test_multiline_frontmatter_spoof_is_refused_and_inert(ws):
    text = render_uri(ws, make_uri("proposals", EVIL_MULTILINE))
    lines = text.split("\n")
    assert "## What Accept writes" not in lines  # neither ours (refused) nor the data's
    assert "## Accept is refused" in lines
    assert "description" in text and "line break" in text
    assert not any(line.startswith("### ") and "learned-evil" in line for line in lines)
    assert_no_live_markup(text, "multi-line proposal")


@pytest.mark.parametrize("skill_root", [None, ".harn/skills"])
def test_compare_text_is_exactly_what_accept_writes(proj, tmp_path, skill_root):
    copy = tmp_path / "proj"
    shutil.copytree(proj, copy, symlinks=True)
    ws = Workspace.load(str(copy))
    plan = planned_files(ws, ws.proposal(EVIL), skill_root)
    rel = Path(plan.skill_path).relative_to(copy).as_posix()
    uri = make_uri("proposals", EVIL, file=rel)
    raw = render_uri(ws, uri, RenderSettings(skill_root=skill_root))
    assert "learned-evil" in raw and raw.startswith("---\nname: learned-sneaky-helper\n")
    accept_proposal(ws, EVIL, skill_root)
    assert (copy / rel).read_bytes() == raw.encode("utf-8")


def test_compare_refuses_what_it_cannot_send_whole(proj, tmp_path):
    copy = tmp_path / "proj"
    shutil.copytree(proj, copy, symlinks=True)
    events = copy / ".harn/memory/project/pattern-learning/events.jsonl"
    text = events.read_text()
    events.write_text(text.replace('"body":"Reusable guidance.', '"body":"' + "x" * 1_100_000 + 'Reusable guidance.', 1))
    ws = Workspace.load(str(copy))
    rel = Path(planned_files(ws, ws.proposal(EVIL)).skill_path).relative_to(copy).as_posix()
    from harn_ls.render import UriError
    with pytest.raises(UriError, match="cannot be compared here"):
        render_uri(ws, make_uri("proposals", EVIL, file=rel))


def test_extension_never_trusts_data_markdown():
    src = {p.name: p.read_text() for p in (REPO / "vscode-extension/src").glob("*.ts")}
    for name, text in src.items():
        assert not re.search(r"isTrusted\s*[:=]\s*true", text), name
        assert not re.search(r"supportHtml\s*[:=]\s*true", text), name
        assert "enabledCommands" not in text, name
    compare = src["commands.ts"]
    # Compare opens the server's raw ?file= document; nothing parses a rendered proposal any more
    assert "?file=" in compare or "file=${" in compare
    assert "getText()" not in compare.split("compareWithExisting", 1)[1].split("reg(", 1)[0]
