"""Run timeline: SVG well-formed, one bar per step, numbers right, bounded at 5,000 steps, hostile names escaped."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

from harn_ls.formats.runs import read_run_record
from harn_ls.formats.transcripts import read_llm_transcript
from harn_ls.render import timeline
from harn_ls.render.svg import MAX_SVG_BYTES, extract_pictures, md_text, strip_pictures

SVG = "{http://www.w3.org/2000/svg}"
T0 = 1_778_000_000


def _stage(node, start, end, status="completed", outcome="success", usage=None, metadata=None):
    return {"id": f"stage_{node}", "node_id": node, "kind": "stage", "status": status, "outcome": outcome,
            "started_at": str(start), "finished_at": None if end is None else str(end), "usage": usage,
            "attempts": [], "metadata": metadata or {}, "transcript": None}


def _write_run(tmp_path, run_id, stages, tools=(), llm_lines=(), started=T0, finished=None, status="completed"):
    runs = tmp_path / ".harn-runs"
    runs.mkdir(parents=True, exist_ok=True)
    rec = {"_type": "run_record", "id": run_id, "workflow_id": "wf", "workflow_name": "wf", "status": status,
           "started_at": str(started), "finished_at": None if finished is None else str(finished),
           "stages": stages, "tool_recordings": list(tools), "trace_spans": [], "metadata": {}}
    path = runs / f"{run_id}.json"
    path.write_text(json.dumps(rec, indent=2))
    if llm_lines:
        side = runs / f"{run_id}-llm"
        side.mkdir()
        (side / "llm_transcript.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in llm_lines))
    return read_run_record(str(path))


def _bars(svg: str):
    root = ET.fromstring(svg)
    return root, [g for g in root.iter(f"{SVG}g") if "bar" in (g.get("class") or "").split()]


def test_one_bar_per_step_with_right_numbers(tmp_path):
    iso = lambda s: f"2026-05-05T{(s // 3600) % 24:02d}:{(s // 60) % 60:02d}:{s % 60:02d}.000Z"  # noqa: E731
    base = 1_777_939_200  # 2026-05-05T00:00:00Z
    llm = [
        {"type": "provider_call_request", "timestamp": iso(10), "iteration": 0, "call_id": "c0", "model": "m-1"},
        {"type": "provider_call_response", "timestamp": iso(14), "iteration": 0, "call_id": "c0", "model": "m-1",
         "input_tokens": 1200, "output_tokens": 34, "response_ms": 4000, "tool_calls": [{"name": "grep"}]},
        {"type": "provider_call_response", "timestamp": iso(30), "iteration": 1, "call_id": "c1", "model": "m-1",
         "input_tokens": 1500, "output_tokens": 70, "response_ms": 2500},
    ]
    run = _write_run(tmp_path, "run_a", [
        _stage("fetch", base + 0, base + 5),
        _stage("think", base + 5, base + 40, usage={"input_tokens": 2700, "output_tokens": 104, "total_cost": 0.0123}),
        _stage("publish", base + 40, base + 42, status="failed", outcome="error"),
        _stage("warm", base + 1, base + 1, status="completed", metadata={"cached": True}),
    ], tools=[{"tool_name": "grep", "tool_use_id": "t1", "timestamp": str(base + 15), "duration_ms": 250, "result": "ok"}],
        llm_lines=llm, started=base, finished=base + 42)
    tl = timeline.build(run, read_llm_transcript(run.llm_transcript_path))
    assert tl.total_steps == 4 + 2 + 1 and not tl.aggregated
    svg = timeline.to_svg(tl, "run_a")
    root, bars = _bars(svg)
    assert len(bars) == 7
    assert [b.get("class").split()[1] for b in bars].count("stage") == 4
    by_label = {b.label: b for b in tl.bars}
    think = by_label["think"]
    assert (think.start_ms, think.duration_ms, think.tokens_in, think.tokens_out, think.cost) == (5000, 35000, 2700, 104, 0.0123)
    call0 = by_label["m-1 #0"]
    assert (call0.start_ms, call0.duration_ms, call0.tokens_in, call0.tokens_out) == (10000, 4000, 1200, 34)
    call1 = by_label["m-1 #1"]
    assert (call1.start_ms, call1.duration_ms) == (27500, 2500)  # response time minus response_ms
    tool = by_label["grep"]
    assert (tool.kind, tool.start_ms, tool.duration_ms) == ("tool", 15000, 250)
    assert by_label["publish"].failed and not by_label["fetch"].failed
    assert by_label["warm"].cached
    # critical path: fetch -> think -> publish (warm ends before think starts but fetch ends later)
    assert {b.label for b in tl.bars if b.critical} == {"fetch", "think", "publish"}
    # hover titles carry the numbers; failed bar is red; width proportional to the duration
    titles = {b.find(f"{SVG}title").text.split("\n")[0]: b for b in bars}
    t = titles["stage: think"].find(f"{SVG}title").text
    assert "duration 35.0 s" in t and "tokens in 2,700 / out 104" in t and "cost $0.0123" in t
    rect = titles["stage: publish"].find(f"{SVG}rect")
    assert rect.get("fill") == timeline.COLORS["failed"]
    w_think = float(titles["stage: think"].find(f"{SVG}rect").get("width"))
    w_fetch = float(titles["stage: fetch"].find(f"{SVG}rect").get("width"))
    assert abs(w_think / w_fetch - 7.0) < 0.05
    assert titles["stage: warm"].find(f"{SVG}rect").get("fill") == "url(#hl-cached)"
    assert titles["stage: think"].find(f"{SVG}rect").get("stroke") == "#e07b00"
    # the table has the same numbers
    rows = "\n".join(timeline.table(tl))
    assert "| stage | think | +5.0 s | 35.0 s | 2,700 | 104 | $0.0123 |" in rows
    assert "| LLM call | m-1 #0 (call c0 → grep) | +10.0 s | 4.0 s | 1,200 | 34 |" in rows


def test_single_step_run(tmp_path):
    run = _write_run(tmp_path, "run_one", [_stage("only", T0, T0 + 3)], started=T0, finished=T0 + 3)
    tl = timeline.build(run, None)
    root, bars = _bars(timeline.to_svg(tl))
    assert len(bars) == 1 and tl.bars[0].critical and tl.bars[0].duration_ms == 3000


def test_running_stage_and_iso_times(tmp_path):
    run = _write_run(tmp_path, "run_live", [_stage("changelog", "2026-05-12T16:40:02Z", None, status="running")],
                     started="2026-05-12T16:40:00Z", status="running")
    tl = timeline.build(run, None)
    assert tl.bars[0].start_ms == 2000 and tl.bars[0].running
    ET.fromstring(timeline.to_svg(tl))


def test_5000_steps_are_aggregated_and_bounded(tmp_path):
    stages = [_stage(f"s{i}", T0 + i, T0 + i + 1, status="failed" if i == 4321 else "completed",
                     usage={"input_tokens": 10, "output_tokens": 1}) for i in range(3000)]
    tools = [{"tool_name": f"tool{i % 7}", "timestamp": str(T0 + i * 1.5), "duration_ms": 100} for i in range(2000)]
    run = _write_run(tmp_path, "run_big", stages, tools=tools, started=T0, finished=T0 + 3000)
    tl = timeline.build(run, None)
    assert tl.total_steps == 5000 and tl.aggregated
    assert len(tl.bars) <= timeline.MAX_BARS
    assert sum(b.count for b in tl.bars) == 5000  # nothing lost
    assert sum(b.tokens_in or 0 for b in tl.bars if b.kind == "stage") == 30000
    svg = timeline.to_svg(tl)
    root, bars = _bars(svg)
    assert len(bars) == len(tl.bars)
    assert len(svg.encode()) < MAX_SVG_BYTES
    assert int(root.get("height")) <= timeline.TOP + timeline.MAX_BARS * timeline.ROW_H + timeline.BOTTOM


def test_hostile_names_are_escaped_in_svg_and_table(tmp_path):
    evil = '</text><script>alert(1)</script><a href="javascript:x">&amp;\n\n| x | y |'
    run = _write_run(tmp_path, "run_evil", [_stage(evil, T0, T0 + 1, status=evil)],
                     tools=[{"tool_name": evil, "timestamp": str(T0), "duration_ms": 5, "result": "<img src=x onerror=y>"}])
    tl = timeline.build(run, None)
    svg = timeline.to_svg(tl, evil)
    root = ET.fromstring(svg)  # still well-formed
    assert not list(root.iter(f"{SVG}script")) and not list(root.iter("script"))
    assert "<script" not in svg and "\n" not in svg
    texts = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(evil.replace("\n", "\n") in t for t in texts)  # the text itself survives, as text
    md = "\n".join(timeline.section(run))
    picture = [ln for ln in md.split("\n") if ln.startswith('<div class="harn-picture">')]
    assert len(picture) == 1 and picture[0].endswith("</div>")
    assert "<script" not in md and "<img" not in md and "\\| x \\| y \\|" in md
    assert md_text(evil) in md
    # plain text readers get no picture line; --format svg gets exactly the SVG
    assert "<svg" not in strip_pictures(md)
    assert extract_pictures(md)[0].startswith("<svg") and ET.fromstring(extract_pictures(md)[0]) is not None


def test_run_document_starts_with_timeline(tmp_path):
    from harn_ls.model.workspace import Workspace
    from harn_ls.render import render_uri

    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    _write_run(proj, "run_doc", [_stage("a", T0, T0 + 2, usage={"input_tokens": 5, "output_tokens": 6})])
    ws = Workspace.load(str(proj), env={}, home=str(tmp_path / "home"))
    text = render_uri(ws, "harn-state:/runs/run_doc.md")
    assert text.index("## Timeline") < text.index("## Stages")
    assert re.search(r"\| 1 \| stage \| a \| \+0 ms \| 2\.0 s \| 5 \| 6 \|", text)
    assert os.path.isdir(proj)
