"""Run records, worker snapshots, transcript values and llm_transcript.jsonl (harn-formats §G)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from harn_ls.formats.runs import read_run_record, read_worker_snapshot
from harn_ls.formats.transcripts import read_llm_transcript, transcript_from_value
from tests.helpers import transcripts as tr_helpers
from tests.helpers.runs import is_run_record_path, list_run_records
from tests.helpers.samples import SAMPLES  # noqa: E402

PERSONAS = SAMPLES / "run-records/examples/personas/runs"
LLM_DIR = SAMPLES / "llm-transcripts/crates/harn-cli/tests/fixtures/prefix_stability/stable-agent-loop"

ASSET_ID = "0196a20b-1c2d-7e3f-8a4b-5c6d7e8f9012"


def spec_transcript() -> dict:
    """The composed §G.2 example plus private reasoning and a tool round-trip."""
    return {
        "_type": "transcript", "version": 2, "id": "0196a20b-0000-7abc-8def-0123456789ab",
        "assets": [{"_type": "transcript_asset", "id": ASSET_ID, "kind": "image", "mime_type": "image/png",
                    "name": "diagram.png", "storage": {"path": ".harn/assets/diagram.png"}, "visibility": "internal"},
                   ".harn/assets/raw-dump.json"],
        "events": [
            {"blocks": [{"asset_id": ASSET_ID, "name": "diagram.png", "type": "image", "visibility": "public"},
                        {"text": "review this diagram", "type": "text", "visibility": "public"}],
             "id": "e1", "kind": "message", "role": "user",
             "text": "<image:diagram.png> review this diagram", "visibility": "public"},
            {"blocks": [{"type": "reasoning", "text": "secret chain of thought", "visibility": "private"},
                        {"type": "text", "text": "Looks fine.", "visibility": "public"},
                        {"type": "tool_call", "name": "read_file", "visibility": "public"}],
             "id": "e2", "kind": "message", "role": "assistant"},
            {"blocks": [{"type": "text", "text": "file contents"}], "id": "e3", "kind": "tool_result", "role": "tool_result"},
            {"blocks": [{"type": "reasoning", "text": "hidden thoughts", "visibility": "private"}],
             "id": "e4", "kind": "private_reasoning", "role": "assistant", "visibility": "private", "text": ""},
            {"blocks": [{"text": "Transcript compacted via summarize", "type": "text", "visibility": "internal"}],
             "id": "e5", "kind": "compaction", "role": "system",
             "metadata": {"archived_messages": 12, "estimated_tokens_after": 2100, "estimated_tokens_before": 9800,
                          "mode": "manual", "strategy": "summarize", "keep_last": 4},
             "text": "Transcript compacted via summarize", "visibility": "internal"},
        ],
        "messages": [{"content": [{"asset_id": ASSET_ID, "name": "diagram.png", "type": "image", "visibility": "public"},
                                  {"text": "review this diagram", "type": "text", "visibility": "public"}], "role": "user"},
                     {"role": "assistant", "content": "Looks fine."}],
        "metadata": {"source": "editor", "transcript_budget": {"last_action": "compact"}},
        "state": "active",
        "summary": "User shared an architecture diagram for review.",
    }


# -- transcript values -----------------------------------------------------------

def test_spec_transcript_views():
    t = transcript_from_value(spec_transcript(), "run:r1/stage:s1")
    assert t is not None and t.problems == []
    assert (t.id, t.version, t.state, t.source) == ("0196a20b-0000-7abc-8def-0123456789ab", 2, "active", "run:r1/stage:s1")
    assert t.summary.startswith("User shared")
    assert t.budget == {"last_action": "compact"}
    e1, e2, e3, e4, e5 = t.events
    assert e1.visible_text == "<image:diagram.png> review this diagram" == e1.text == e1.harn_text
    # Reasoning dropped, tool call labelled, visibility derived from blocks.
    assert e2.harn_text == "Looks fine. <tool_call:read_file>"
    assert e2.visibility == "public" and e2.text == e2.harn_text
    # tool_result blocks default to internal.
    assert e3.blocks[0]["visibility"] == "internal" and e3.visibility == "internal"
    assert e4.is_private and e4.visible_text == ""
    assert [e.id for e in tr_helpers.visible_events(t)] == ["e1", "e2", "e3", "e5"]
    assert [e.id for e in tr_helpers.visible_events(t, include_internal=False)] == ["e1", "e2"]
    assert e5.kind == "compaction" and tr_helpers.compactions(t) == [e5]
    c = e5.compaction
    assert (c.mode, c.strategy, c.archived_messages, c.keep_last, c.tokens_saved) == ("manual", "summarize", 12, 4, 7700)
    assert e1.compaction is None
    a0, a1 = t.assets
    assert (a0.kind, a0.mime_type, a0.storage_path, a0.visibility) == (
        "image", "image/png", ".harn/assets/diagram.png", "internal")
    assert (a1.kind, a1.storage_path, a1.visibility) == ("blob", ".harn/assets/raw-dump.json", "internal")
    assert a0.id == ASSET_ID
    assert tr_helpers.message_text(t.messages[0]) == "<image:diagram.png> review this diagram"
    assert tr_helpers.message_text(t.messages[1]) == "Looks fine."


def test_private_block_hidden_from_visible_text_but_event_public():
    t = transcript_from_value({"events": [{"kind": "message", "role": "assistant", "blocks": [
        {"type": "text", "text": "public part"}, {"type": "text", "text": "private note", "visibility": "private"}]}]}, "x")
    (e,) = t.events
    assert e.visibility == "public"
    assert e.harn_text == "public part private note"
    assert e.visible_text == "public part"


def test_transcript_wrong_types_are_problems_not_crashes():
    value = {"_type": "not_a_transcript", "version": "2", "id": 7, "messages": "oops", "assets": [3],
             "events": [1, {"kind": 5, "role": "user", "blocks": "hello", "visibility": "secret", "metadata": []}],
             "metadata": [], "summary": {"a": 1}}
    t = transcript_from_value(value, "run:x", path="/p/run.json")
    assert t is not None
    codes = [p.code for p in t.problems]
    assert "HL-TR-001" in codes and codes.count("HL-TR-002") >= 6
    assert all(p.path == "/p/run.json" for p in t.problems)
    assert t.messages == [] and t.assets == [] and t.version is None and t.id is None
    (e,) = t.events
    assert e.kind == "message" and e.text == "hello" and e.visibility == "public"


def test_transcript_non_object_is_none():
    assert transcript_from_value(None, "x") is None
    assert transcript_from_value(["a"], "x") is None


def test_other_version_is_info():
    t = transcript_from_value({"version": 3, "events": []}, "x")
    assert [p.code for p in t.problems] == ["HL-TR-003"]


# -- run records -------------------------------------------------------------------

@pytest.mark.parametrize("name,persona,text", [
    ("merge_captain_smoke.run.json", "merge_captain", "dry-run plan"),
    ("oncall_captain_smoke.run.json", "oncall_captain", None),
    ("review_captain_smoke.run.json", "review_captain", None),
])
def test_persona_run_records(name, persona, text):
    rec = read_run_record(str(PERSONAS / name))
    assert rec.ok and not rec.retry
    assert rec.problems == []
    assert rec.id == name.replace(".run.json", "").replace("_", "-")
    assert (rec.status, rec.workflow_id, rec.workflow_name) == ("completed", "run", persona)
    assert rec.started_at == "2026-04-22T00:00:00Z" and rec.finished_at == "2026-04-22T00:00:01Z"
    assert len(rec.stages) == 1 and rec.stages[0]["node_id"] == "run"
    assert rec.transcripts == [] and rec.usage == {} and rec.llm_transcript_path is None
    assert rec.size == os.path.getsize(PERSONAS / name) and rec.mtime
    assert rec.data["metadata"]["persona"] == persona
    if text:
        assert text in rec.stages[0]["visible_text"]


def _runs_dir(tmp_path: Path) -> Path:
    d = tmp_path / ".harn-runs"
    d.mkdir()
    return d


def test_run_record_with_transcripts_and_sidecar(tmp_path):
    d = _runs_dir(tmp_path)
    record = json.loads((PERSONAS / "merge_captain_smoke.run.json").read_text())
    record["id"] = "run_0196"
    record["transcript"] = spec_transcript()
    record["stages"][0]["transcript"] = {"_type": "transcript", "version": 2, "id": "t-stage", "messages": [], "events": []}
    record["usage"] = {"input_tokens": 10, "output_tokens": 5, "call_count": 1}
    (d / "run_0196.json").write_text(json.dumps(record, indent=2))
    (d / "run_0196-llm").mkdir()
    shutil.copy(LLM_DIR / "llm_transcript.jsonl", d / "run_0196-llm" / "llm_transcript.jsonl")
    (d / "run_0197.json.tmp").write_text("{")
    rec = read_run_record(str(d / "run_0196.json"))
    assert rec.problems == []
    assert [t.source for t in rec.transcripts] == ["run:run_0196", "run:run_0196/stage:stage_1"]
    assert rec.transcripts[1].id == "t-stage"
    assert rec.usage["call_count"] == 1
    assert rec.llm_transcript_path == str(d / "run_0196-llm" / "llm_transcript.jsonl")
    assert list_run_records(str(d)) == [str(d / "run_0196.json")]
    assert not is_run_record_path(str(d / "run_0197.json.tmp"))
    assert is_run_record_path(str(d / "run_0196.json"))
    assert not is_run_record_path(str(d / "run_0196-llm" / "raw-provider" / "turn-0-request.json"))
    assert not is_run_record_path(str(d / "playground" / "job" / "launch.json"))


def test_playground_run(tmp_path):
    d = _runs_dir(tmp_path)
    job = d / "playground" / "job-1"
    (job / "run-llm").mkdir(parents=True)
    (job / "run.json").write_text(json.dumps({"_type": "run_record", "id": "run_x", "status": "running"}))
    (job / "run-llm" / "llm_transcript.jsonl").write_text('{"type":"message","role":"user","content":"hi"}\n')
    (job / "task.txt").write_text("task")
    assert list_run_records(str(d)) == [str(job / "run.json")]
    assert is_run_record_path(str(job / "run.json"))
    rec = read_run_record(str(job / "run.json"))
    assert (rec.id, rec.playground_job, rec.status) == ("run_x", "job-1", "running")
    assert rec.llm_transcript_path == str(job / "run-llm" / "llm_transcript.jsonl")


def test_half_written_record(tmp_path):
    d = _runs_dir(tmp_path)
    text = (PERSONAS / "merge_captain_smoke.run.json").read_text()
    p = d / "run_half.json"
    p.write_text(text[: len(text) // 2])
    rec = read_run_record(str(p))
    assert not rec.ok and rec.retry
    assert [pr.code for pr in rec.problems] == ["HL-RUN-003"]
    assert rec.problems[0].line > 1 and "half-written" in rec.problems[0].message
    assert rec.id == "run_half"
    p.write_text("")
    rec = read_run_record(str(p))
    assert rec.retry and [pr.code for pr in rec.problems] == ["HL-RUN-003"]


def test_invalid_utf8_record(tmp_path):
    p = _runs_dir(tmp_path) / "run_bad.json"
    p.write_bytes(b'{\n  "id": "run_bad",\n  "task": "caf\xff"\n}\n')
    rec = read_run_record(str(p))
    assert not rec.ok and not rec.retry
    assert [(pr.code, pr.line) for pr in rec.problems] == [("HL-RUN-002", 3)]


def test_not_object_missing_and_wrong_fields(tmp_path):
    d = _runs_dir(tmp_path)
    (d / "a.json").write_text("[1, 2]")
    assert [p.code for p in read_run_record(str(d / "a.json")).problems] == ["HL-RUN-004"]
    missing = read_run_record(str(d / "gone.json"))
    assert [p.code for p in missing.problems] == ["HL-RUN-001"] and missing.retry
    (d / "b.json").write_text(json.dumps({"_type": "replay_fixture", "id": 5, "status": 3, "workflow_name": "wf",
                                          "started_at": 1714000000, "stages": [{"id": "s"}, "junk"], "usage": [],
                                          "transcript": "not a transcript"}))
    rec = read_run_record(str(d / "b.json"))
    assert rec.ok
    codes = [p.code for p in rec.problems]
    assert codes.count("HL-RUN-006") == 4  # id, status, usage, stages[1]
    assert "HL-RUN-005" in codes and "HL-RUN-007" in codes
    assert (rec.id, rec.status, rec.workflow_name, rec.started_at) == ("b", None, "wf", "1714000000")
    assert len(rec.stages) == 1 and rec.usage == {} and rec.transcripts == []


def test_large_record_parsed_once(tmp_path):
    p = _runs_dir(tmp_path) / "run_big.json"
    msg = "x" * 1000
    events = [{"id": f"e{i}", "kind": "message", "role": "user", "text": msg,
               "blocks": [{"type": "text", "text": msg}], "visibility": "public"} for i in range(5000)]
    tr = {"_type": "transcript", "version": 2, "id": "big", "messages": [{"role": "user", "content": msg}] * 5000,
          "events": events, "assets": []}
    p.write_text(json.dumps({"_type": "run_record", "id": "run_big", "stages": [{"id": "s1", "transcript": tr}]}, indent=2))
    assert p.stat().st_size > 10_000_000
    start = time.thread_time()  # this thread's CPU time: the work itself, whatever else the machine runs
    rec = read_run_record(str(p))
    assert time.thread_time() - start < 5
    assert rec.problems == [] and len(rec.transcripts[0].events) == 5000
    # Views share the parsed lists instead of copying them.
    assert rec.transcripts[0].messages is rec.data["stages"][0]["transcript"]["messages"]


def test_worker_snapshot(tmp_path):
    d = tmp_path / ".harn" / "workers"
    d.mkdir(parents=True)
    (d / "w1.json").write_text(json.dumps({"id": "worker_1", "status": "idle", "transcript": spec_transcript()}))
    snap = read_worker_snapshot(str(d / "w1.json"))
    assert (snap.id, snap.status, snap.problems) == ("worker_1", "idle", [])
    assert snap.transcript.source == str(d / "w1.json") and len(snap.transcript.events) == 5
    (d / "w2.json").write_text('{"id": "w2", "transcript": {"events": [')
    bad = read_worker_snapshot(str(d / "w2.json"))
    assert bad.transcript is None and bad.retry and bad.problems[0].code == "HL-RUN-003"


def test_a_transcript_without_an_id_is_not_indexed(tmp_path):
    """A cloned project's run record whose stage transcript has no `id` (and a worker snapshot whose
    transcript has none) used to put a None key among the transcript ids: `inspect --json` and the runs
    view sorted them and raised TypeError. The id-less ones are left out of the index, the rest served."""
    from harn_ls.model.workspace import Workspace
    from harn_ls.render.inspect import inspect_json
    from harn_ls.render.tree_items import TreeOptions, tree_items

    (tmp_path / "harn.toml").write_text("")
    runs = tmp_path / ".harn-runs"
    runs.mkdir()
    named = spec_transcript()
    nameless = {k: v for k, v in spec_transcript().items() if k != "id"}
    (runs / "run_a.json").write_text(json.dumps({
        "_type": "run_record", "id": "run_a", "status": "completed", "started_at": "2026-01-01T00:00:00Z",
        "transcript": named, "stages": [{"id": "s1", "transcript": nameless}]}))
    workers = tmp_path / ".harn" / "workers"
    workers.mkdir(parents=True)
    (workers / "w1.json").write_text(json.dumps({"id": "worker_1", "transcript": nameless}))
    ws = Workspace.load(str(tmp_path))
    assert sorted(ws.transcripts) == [named["id"]]
    assert [t.id for t in ws.runs["run_a"].transcripts] == [named["id"], None]  # the run still lists both
    assert inspect_json(ws)["transcripts"] == [named["id"]]
    opts = TreeOptions(open_command="test.open", page_size=200)
    assert [i["id"] for i in tree_items(ws, "runs", "run:run_a", opts)] == [f"tr:{named['id']}"]
    assert tree_items(ws, "runs", "workers", opts) == []


# -- llm_transcript.jsonl ------------------------------------------------------------

def test_sample_llm_transcript_raw_captures():
    t = read_llm_transcript(str(LLM_DIR / "llm_transcript.jsonl"))
    assert t.problems == []
    assert [ln.type for ln in t.lines] == ["provider_raw_capture"] * 3 and all(ln.known for ln in t.lines)
    assert t.steps == []
    assert [c.rel_path for c in t.raw_captures] == [f"raw-provider/turn-{i}-request.json" for i in range(3)]
    assert all(c.exists and c.capture == "request" for c in t.raw_captures)
    body = json.loads(Path(t.raw_captures[0].path).read_text())
    assert body["call_id"] == "fixture-turn-0"


def test_llm_transcript_steps_unknown_and_torn(tmp_path):
    p = tmp_path / "llm_transcript.jsonl"
    lines = [
        {"type": "system_prompt", "hash": "h1", "content": "You help.", "timestamp": "t0"},
        {"type": "tool_schemas", "hash": "s1", "schemas": []},
        {"type": "message", "iteration": 0, "role": "user", "content": "Inspect"},
        {"type": "provider_call_request", "iteration": 0, "call_id": "c1", "model": "m", "provider": "openai"},
        {"type": "provider_call_response", "iteration": 0, "call_id": "c1", "text": "ok", "input_tokens": 3},
        {"type": "interpreted_response", "iteration": 0, "call_id": "c1", "prose": "ok", "tool_calls": []},
        {"type": "future_thing", "x": 1},
        {"no_type": True},
        {"type": "message", "iteration": 1, "role": "assistant", "content": "next"},
        {"type": "routing_decision", "iteration": 1, "call_id": "c2", "selected_model": "m2"},
        {"type": "provider_call_request", "iteration": 1, "call_id": "c2", "model": "m2"},
        {"type": "provider_raw_capture", "capture": "request", "path": "../../etc/passwd"},
        {"type": "provider_raw_capture", "capture": "request", "path": "raw-provider/missing.json"},
    ]
    text = "\n".join(json.dumps(ln) for ln in lines) + "\n{not json}\n" + '{"type":"message","role":"us'
    p.write_text(text)
    t = read_llm_transcript(str(p))
    assert [s.call_id for s in t.steps] == ["c1", "c2"]
    s1, s2 = t.steps
    assert (s1.system_prompt_hash, s1.tool_schemas_hash, len(s1.messages)) == ("h1", "s1", 1)
    assert s1.request["model"] == "m" and s1.response["input_tokens"] == 3 and s1.interpreted["prose"] == "ok"
    assert s2.routing["selected_model"] == "m2" and s2.messages[0]["content"] == "next" and s2.response is None
    assert [ln.type for ln in t.lines if not ln.known] == ["future_thing", "?"]
    codes = [(pr.code, pr.line) for pr in t.problems]
    assert ("HL-TR-004", 8) in codes and ("HL-JSONL-001", 14) in codes and ("HL-JSONL-004", 15) in codes
    assert ("HL-TR-005", 12) in codes and ("HL-TR-005", 13) in codes
    escaped, missing = t.raw_captures
    assert escaped.path is None and not escaped.exists and missing.path and not missing.exists
