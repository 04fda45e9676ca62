"""workspace/executeCommand: invalidateFact, forgetCheckpointStage (with its confirmation prompt),
recall, rescan, and bad arguments."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from lsprotocol import types

from harn_ls.model.workspace import Workspace
from tests.lsp.conftest import execute_command, make_client_fixture, open_file

client = make_client_fixture()

ROUNDING_FACT = "fact_a26c5c67468c8d3fe33f8c8c0f5489e6"  # observation 0.9, src/billing/invoice.py:28-29


async def execute(client, command: str, *arguments):
    return await execute_command(client, types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def content(client, uri: str) -> str:
    return (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))).text


async def hover(client, uri: str, line: int):
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=4)))


async def lens_lines(client, uri: str) -> set[int]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return {lens.range.start.line for lens in lenses or []}


def answer_prompts(client, answers: list[str]) -> list[types.ShowMessageRequestParams]:
    """Answer window/showMessageRequest with the given titles in turn; returns the prompts seen."""
    prompts: list[types.ShowMessageRequestParams] = []

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def _prompt(params: types.ShowMessageRequestParams):
        prompts.append(params)
        title = answers.pop(0)
        return next(a for a in params.actions if a.title == title)

    return prompts


# ------------------------------------------------------------- invalidateFact
async def test_invalidate_fact(client):
    events = client.project / ".harn/memory/project/facts/events.jsonl"
    lines_before = events.read_text().splitlines()
    uri = open_file(client, client.project / "src/billing/invoice.py")
    assert await hover(client, uri, 27) is not None
    assert 27 in await lens_lines(client, uri)
    fact_uri = f"harn-state:/facts/{ROUNDING_FACT}.md"
    assert (await content(client, fact_uri)).startswith("# Fact")

    result = await execute(client, "harnState.invalidateFact", {"id": ROUNDING_FACT})
    assert result["ok"] is True, result
    assert result["id"] == ROUNDING_FACT and result["namespace"] == "project/facts"

    assert await hover(client, uri, 27) is None
    lines = await lens_lines(client, uri)
    assert 27 not in lines and 15 in lines  # the other fact on this file stays
    assert (await content(client, fact_uri)).startswith("# Not found")
    assert ROUNDING_FACT not in await content(client, "harn-state:/index.md")

    # exactly one forget event appended, in Harn's field order, compact
    lines_after = events.read_text().splitlines()
    assert lines_after[:-1] == lines_before
    event = json.loads(lines_after[-1])
    assert list(event) == ["type", "id", "namespace", "predicate", "forgotten_ids", "forgotten_at"]
    assert event["type"] == "forget" and event["predicate"] == {"id": ROUNDING_FACT}
    assert event["forgotten_ids"] == [ROUNDING_FACT]
    assert ", " not in lines_after[-1] and ": " not in lines_after[-1].split('"forgotten_at"')[0]
    await client.rec.wait_for(lambda: any("Invalidated" in m for m in client.rec.shown), 5)

    # a cold reader agrees, and a second invalidate is refused
    assert ROUNDING_FACT not in Workspace.load(str(client.project)).facts_by_id
    again = await execute(client, "harnState.invalidateFact", {"id": ROUNDING_FACT})
    assert again["ok"] is False and "no active fact" in again["message"]
    assert events.read_text().splitlines() == lines_after


# ------------------------------------------------------ forgetCheckpointStage
async def _checkpoint_description(client, pipeline: str) -> str:
    result = await client.protocol.send_request_async("harn/tree", {"view": "checkpoints", "page": 0})
    result = result._asdict() if hasattr(result, "_asdict") else result
    items = [i._asdict() if hasattr(i, "_asdict") else i for i in result["items"]]
    return next(i for i in items if i["label"] == pipeline)["description"]


async def test_forget_stage_waits_for_harns_checkpoint_lock(client):
    path = client.project / ".harn/checkpoints/ingest.json"
    original = path.read_text()
    data = json.loads(original)
    assert set(data) == {"clean", "fetch", "prepare", "processed_ids", "upload"}
    assert original == json.dumps(data, indent=2, sort_keys=True)  # Harn's pretty format
    prompts = answer_prompts(client, [])  # no "are you sure" guess any more: the lock decides
    # A real second process holds Harn's checkpoint lock (a pipeline saving) for longer than 5 s.
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,os,sys\n"
                               "fd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT,0o666)\n"
                               "fcntl.flock(fd,fcntl.LOCK_EX)\nprint('held',flush=True)\nsys.stdin.readline()",
                               str(path.with_suffix(".lock"))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert "writing now" in await _checkpoint_description(client, "ingest")
        refused = await execute(client, "harnState.forgetCheckpointStage", {"pipeline": "ingest", "key": "fetch"})
        assert refused["ok"] is False and "a pipeline is writing this checkpoint right now" in refused["message"]
        assert "timed out after 5.0s" in refused["message"] and "ingest.lock" in refused["message"]
        assert path.read_text() == original
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert "writing now" not in await _checkpoint_description(client, "ingest")

    result = await execute(client, "harnState.forgetCheckpointStage", {"pipeline": "ingest", "key": "fetch"})
    assert result["ok"] is True, result
    assert prompts == []
    assert result["remaining"] == ["clean", "prepare", "processed_ids", "upload"]
    text = path.read_text()
    expected = {k: v for k, v in data.items() if k != "fetch"}
    assert json.loads(text) == expected
    assert text == json.dumps(expected, indent=2, sort_keys=True)
    assert not list(path.parent.glob("*.tmp")) and not [p for p in os.listdir(path.parent) if p.startswith(".")]

    doc = await content(client, "harn-state:/checkpoints/ingest.md")
    assert "## fetch" not in doc and "## prepare" in doc
    harn = open_file(client, client.project / "pipelines/ingest.harn", "harn")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=harn)))
    titles = {}
    for lens in lenses:
        resolved = await client.code_lens_resolve_async(lens)
        titles[lens.data["stage"]] = resolved.command.title
    assert titles.get("fetch") == "not cached"
    assert titles.get("clean") == "cached"


async def test_forget_stage_confirmed_and_refusals(client):
    prompts = answer_prompts(client, [])  # any prompt would fail: no answer queued
    path = client.project / ".harn/checkpoints/ingest.json"
    result = await execute(client, "harnState.forgetCheckpointStage", {"pipeline": "ingest", "key": "clean", "confirmed": True})
    assert result["ok"] is True, result
    assert "clean" not in json.loads(path.read_text())
    assert prompts == []
    missing = await execute(client, "harnState.forgetCheckpointStage", {"pipeline": "ingest", "key": "clean", "confirmed": True})
    assert missing["ok"] is False and "no stage" in missing["message"]
    nofile = await execute(client, "harnState.forgetCheckpointStage", {"pipeline": "release", "key": "build", "confirmed": True})
    assert nofile["ok"] is False and "does not exist" in nofile["message"]


# ------------------------------------------------------------ recall / rescan
async def test_recall_command(client):
    result = await execute(client, "harnState.recall", {"query": "dunning reminder", "namespace": "workspace/acme"})
    uri = result["uri"]
    assert uri.startswith("harn-state:/recall.md?")
    text = await content(client, uri)
    assert text.startswith("# Recall: dunning reminder")
    first = re.search(r"^### 1\. `([^`]+)`", text, re.M)
    assert first and first.group(1) == "glossary/dunning", text[:1500]
    assert "019e02f6-0aa9-7cc7-bcc1-b63f9c015fb0" in text
    # across all namespaces, a fact ranks first for its own words
    everywhere = await content(client, (await execute(client, "harnState.recall", {"query": "webhook signatures HMAC"}))["uri"])
    assert "all namespaces" in everywhere
    first = re.search(r"^### 1\. .*\n\nid `([^`]+)`", everywhere, re.M)
    assert first and first.group(1) == "fact_153980388e61563c421fc64bc690022c", everywhere[:1500]


async def test_rescan_returns_counts(client):
    result = await execute(client, "harnState.rescan")
    assert result["ok"] is True
    (root, counts), = result["counts"].items()
    assert os.path.samefile(root, client.project)
    assert counts["facts"] == 7 and counts["runs"] == 3 and counts["checkpoints"] == 2 and counts["proposals"] == 3


# --------------------------------------------------------------- bad arguments
async def test_bad_arguments_fail_politely(client):
    cases = [
        ("harnState.acceptProposal", [{}], "needs {id}"),
        ("harnState.acceptProposal", [], "needs {id}"),
        ("harnState.acceptProposal", ["not an object"], "needs {id}"),
        ("harnState.rejectProposal", [{}], "needs {id}"),
        ("harnState.rejectProposal", [{"id": "tools-7742da9fd499", "days": "soon"}], "whole number"),
        ("harnState.invalidateFact", [{}], "needs {id}"),
        ("harnState.invalidateFact", [{"id": "fact_does_not_exist"}], "no active fact"),
        ("harnState.forgetCheckpointStage", [{"pipeline": "ingest"}], "needs {pipeline, key}"),
        ("harnState.forgetCheckpointStage", [{"pipeline": "../../etc", "key": "x"}], "refused"),
        ("harnState.acceptProposal", [{"id": "../../../etc/passwd"}], "refused"),
        # the typed contract names the field that is wrong
        ("harnState.acceptProposal", [{"id": ["x"]}], "acceptProposal needs {id}: id must be a string"),
        ("harnState.acceptProposal", [{"id": "a"}, {"id": "b"}], "takes one object argument, not 2"),
        ("harnState.probeTypecheck", [{"uri": 5}], "probeTypecheck needs {uri}: uri must be a string"),
        ("harnState.probeTypecheck", [{"uri": "file:///x.harn", "range": {"start": {"line": 0}}}],
         "range.start.character is missing; range.end is missing"),
        ("harnState.resumeEscalation", [{"reason": "ok"}], "resumeEscalation needs {requestId}: requestId is missing"),
    ]
    for command, args, fragment in cases:
        result = await execute(client, command, *args)
        assert result["ok"] is False, (command, args, result)
        assert fragment in result["message"], (command, args, result)
    # nothing was written and the server still answers
    assert json.loads((client.project / ".harn/checkpoints/ingest.json").read_text()).keys() >= {"fetch"}
    rescan = await execute(client, "harnState.rescan")
    assert rescan["ok"] is True
    uri = open_file(client, client.project / "src/billing/invoice.py")
    assert await hover(client, uri, 27) is not None
