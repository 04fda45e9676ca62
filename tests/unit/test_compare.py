"""Run comparison: normalized documents mask ids/timestamps; the summary names stage, status, duration, token changes
and the first diverging LLM message."""

from __future__ import annotations

import json

import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.render import UriError, parse_uri, render_uri


def stage(node, start, end, status="completed", tokens=None):
    return {"id": f"stage_{node}", "node_id": node, "kind": "stage", "status": status, "outcome": "success",
            "started_at": str(start), "finished_at": str(end), "attempts": [{}],
            "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]} if tokens else None, "metadata": {}}


def write(proj, run_id, t0, stages, messages, status="completed"):
    runs = proj / ".harn-runs"
    runs.mkdir(exist_ok=True)
    (runs / f"{run_id}.json").write_text(json.dumps({
        "_type": "run_record", "id": run_id, "workflow_name": "ingest", "status": status,
        "started_at": str(t0), "finished_at": str(t0 + 100), "stages": stages, "usage": {},
        "tool_recordings": [{"tool_name": "grep", "tool_use_id": f"toolu_{t0}", "result": "ok", "timestamp": str(t0 + 1)}]}))
    side = runs / f"{run_id}-llm"
    side.mkdir()
    lines = []
    for i, (role, text) in enumerate(messages):
        lines.append({"type": "message", "timestamp": f"2026-05-0{1 + t0 % 5}T10:00:0{i}Z", "iteration": i, "role": role,
                      "content": text, "tool_calls": None})
    (side / "llm_transcript.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines))


@pytest.fixture
def ws(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    a0, b0, c0 = 1_778_000_000, 1_778_100_000, 1_778_200_000
    convo = [("user", "ingest the export"), ("assistant", "reading toolu_01AbC9 now"), ("user", "ok")]
    write(proj, "run_019a0000-0000-7000-8000-00000000000a", a0,
          [stage("fetch", a0, a0 + 2), stage("think", a0 + 2, a0 + 40, tokens=(1000, 50)), stage("upload", a0 + 40, a0 + 41)],
          convo)
    write(proj, "run_019a0000-0000-7000-8000-00000000000b", b0,
          [stage("fetch", b0, b0 + 2), stage("think", b0 + 2, b0 + 40, tokens=(1000, 50)), stage("upload", b0 + 40, b0 + 41)],
          [("user", "ingest the export"), ("assistant", "reading toolu_77XyZ1 now"), ("user", "ok")])
    write(proj, "run_019a0000-0000-7000-8000-00000000000c", c0,
          [stage("fetch", c0, c0 + 2), stage("think", c0 + 2, c0 + 62, status="failed", tokens=(1500, 20)),
           stage("verify", c0 + 62, c0 + 63)],
          [("user", "ingest the export"), ("assistant", "reading toolu_01AbC9 now"),
           ("user", "no, use the backup <script>x</script>")],
          status="failed")
    return Workspace.load(str(proj), env={}, home=str(tmp_path / "home"))


A, B, C = (f"run_019a0000-0000-7000-8000-00000000000{x}" for x in "abc")


def test_normalized_documents_of_equivalent_runs_are_identical(ws):
    na = render_uri(ws, f"harn-state:/runs/{A}.md?normalized=1")
    nb = render_uri(ws, f"harn-state:/runs/{B}.md?normalized=1")
    assert na == nb  # different run ids, timestamps, tool-use ids: all masked
    assert "| think | stage | completed | success | 38.0 s | 1000 | 50 |" in na
    nc = render_uri(ws, f"harn-state:/runs/{C}.md?normalized=1")
    assert nc != na and "verify" in nc


def test_compare_summary(ws):
    doc = render_uri(ws, f"harn-state:/compare/{A}/{C}.md")
    assert "Added in B: verify · removed in B: upload" in doc
    row = next(ln for ln in doc.splitlines() if ln.startswith("| think |"))
    assert "**completed → failed**" in row
    assert "38.0 s → 60.0 s (+22.0 s)" in row
    assert "1,000 → 1,500 (+500)" in row and "50 → 20 (−30)" in row
    assert "| fetch | completed | 2.0 s → 2.0 s (±0 ms) |" in doc
    assert "diverge at message **3**" in doc
    assert "no, use the backup &lt;script&gt;" in doc and "<script>" not in doc
    same = render_uri(ws, f"harn-state:/compare/{A}/{B}.md")
    assert "The 3 LLM message(s) are the same" in same


def test_compare_uri_shape():
    assert parse_uri(f"harn-state:/compare/{A}/{B}.md").name == f"{A}/{B}"
    for bad in ("harn-state:/compare/a.md", "harn-state:/compare/a/b/c.md", "harn-state:/compare/a/../b.md"):
        with pytest.raises(UriError):
            parse_uri(bad)


def test_compare_unknown_run(ws):
    with pytest.raises(UriError):
        render_uri(ws, f"harn-state:/compare/{A}/run_nope.md")
