"""Memory at a glance (growth chart, top tags, recall score bars) and the CLI's --format / compare."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from harn_ls.model.workspace import Workspace
from harn_ls.render import render_uri
from harn_ls.render.memory_charts import MAX_BUCKETS, growth, score_segments
from harn_ls.render.svg import extract_pictures, strip_pictures
from harn_ls.render.terminal import markdown_to_text

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
RUN_A = "run_019dfd98-73c0-704c-9bb0-e3d1289d2568"
RUN_B = "run_019e0715-58a0-7e3e-a5ef-278ce390d908"
SVG = "{http://www.w3.org/2000/svg}"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "harn_ls", *args], capture_output=True, text=True, timeout=60)


def _memory_project(tmp_path, days, evil_tag="</svg><script>x</script>"):
    proj = tmp_path / "proj"
    ns = proj / ".harn" / "memory" / "agent" / "notes"
    ns.mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    lines = []
    for i, day in enumerate(days):
        lines.append({"type": "store", "id": f"r{i}", "namespace": "agent/notes", "key": f"k{i}", "value": f"note {i}",
                      "text": f"note {i}", "tags": ["ops", evil_tag] if i % 2 else ["ops"],
                      "stored_at": f"{day}T10:00:00Z"})
    lines.append({"type": "forget", "id": "f1", "namespace": "agent/notes", "predicate": {"id": "r0"},
                  "forgotten_ids": ["r0"], "forgotten_at": f"{days[-1]}T12:00:00Z"})
    (ns / "events.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    return Workspace.load(str(proj), env={}, home=str(tmp_path / "home"))


def test_growth_per_day_counts_and_chart(tmp_path):
    ws = _memory_project(tmp_path, ["2026-05-01", "2026-05-01", "2026-05-03", "2026-05-04"])
    buckets, unit = growth(ws.memory["agent/notes"])
    assert unit == "day"
    assert [(d.isoformat(), s, f) for d, s, f in buckets] == [
        ("2026-05-01", 1, 0), ("2026-05-02", 0, 0), ("2026-05-03", 1, 0), ("2026-05-04", 1, 1)]  # r0 forgotten
    doc = render_uri(ws, "harn-state:/memory/agent/notes.md")
    svg = extract_pictures(doc)[0]
    root = ET.fromstring(svg)
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "bucket"]
    assert len(groups) == 4
    assert groups[3].find(f"{SVG}title").text == "2026-05-04: 1 stored, 1 forgotten"
    assert "| 2026-05-04 | 1 | 1 |" in doc
    assert "Top tags: ops (3)" in doc
    glance = doc[doc.index("## At a glance"):doc.index("| key |")]  # this part; the record table is escaped elsewhere
    assert "<script>" not in glance and "&lt;/svg&gt;&lt;script&gt;" in glance  # hostile tag: text only


def test_growth_is_bounded_over_long_spans(tmp_path):
    days = [f"20{20 + y}-{m:02d}-15" for y in range(4) for m in range(1, 13)]
    ws = _memory_project(tmp_path, days)
    buckets, unit = growth(ws.memory["agent/notes"])
    assert unit == "week" and len(buckets) <= MAX_BUCKETS
    ET.fromstring(extract_pictures(render_uri(ws, "harn-state:/memory/agent/notes.md"))[0])


def test_recall_score_bars_add_up_to_the_score():
    ws = Workspace.load(str(SAMPLE), env={}, home="/nonexistent-home")
    result = ws.recall.recall("invoice rounding", k=5, explain=True)
    assert result.hits
    for hit in result.hits:
        assert abs(sum(v for _, v, _ in score_segments(hit)) - hit.score) < 1e-6
    doc = render_uri(ws, "harn-state:/recall.md?q=invoice%20rounding")
    bars = extract_pictures(doc)
    assert len(bars) == len(result.hits)
    first = ET.fromstring(bars[0])
    titles = [t.text for t in first.iter(f"{SVG}title")]
    assert any(t.startswith("term invoice:") for t in titles) and any(t.startswith("term rounding:") for t in titles)


def test_cli_formats_and_compare():
    md = cli("show", str(SAMPLE), f"harn-state:/runs/{RUN_A}.md", "--format", "md")
    text = cli("show", str(SAMPLE), f"harn-state:/runs/{RUN_A}.md")
    svg = cli("show", str(SAMPLE), f"harn-state:/runs/{RUN_A}.md", "--format", "svg")
    assert md.returncode == text.returncode == svg.returncode == 0
    # text: the Markdown without pictures, read as plain text (escapes undone, structure kept)
    assert "<svg" in md.stdout and "<svg" not in text.stdout
    assert text.stdout == markdown_to_text(strip_pictures(md.stdout))
    assert "\\_" in md.stdout and "\\_" not in text.stdout
    ET.fromstring(svg.stdout)
    none = cli("show", str(SAMPLE), "harn-state:/index.md", "--format", "svg")
    assert none.returncode == 2 and "no picture" in none.stderr
    cmp = cli("compare", str(SAMPLE), RUN_A, RUN_B)
    assert cmp.returncode == 0 and "Added in B: collect_diff" in cmp.stdout and "removed in B: fetch" in cmp.stdout
    bad = cli("compare", str(SAMPLE), RUN_A, "run_nope")
    assert bad.returncode == 2 and "no run 'run_nope'" in bad.stderr
