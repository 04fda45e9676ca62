"""Transcript documents as a conversation: folded tool calls, escaped data, confined images, compaction, private."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, render_uri
from harn_ls.render.svg import strip_pictures

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\x00" * 20

EVIL = ('x</pre></details><script>alert(1)</script>\n\n# Heading injected\n\n'
        '<img src=x onerror=alert(2)> [link](javascript:alert(3))')


def _project(tmp_path, assets):
    proj = tmp_path / "proj"
    (proj / ".harn" / "assets").mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    (proj / ".harn" / "assets" / "ok.png").write_bytes(PNG)
    (proj / ".harn" / "assets" / "fake.png").write_bytes(b"<svg onload=alert(1)>")
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    (evil / "secret.png").write_bytes(PNG)
    os.symlink(evil / "secret.png", proj / ".harn" / "assets" / "link.png")
    events = [
        {"kind": "message", "role": "user", "visibility": "public",
         "blocks": [{"type": "image", "asset_id": a, "visibility": "public"} for a, _ in assets]
         + [{"type": "text", "text": "Please look " + EVIL, "visibility": "public"}]},
        {"kind": "private_reasoning", "role": "assistant", "visibility": "private",
         "blocks": [{"type": "reasoning", "text": "secret plan", "visibility": "private"}]},
        {"kind": "message", "role": "assistant", "visibility": "public",
         "metadata": {"usage": {"input_tokens": 1234, "output_tokens": 56}},
         "blocks": [{"type": "text", "text": "Calling a tool", "visibility": "public"},
                    {"type": "tool_call", "id": "toolu_9", "name": "sh" + EVIL, "arguments": {"cmd": EVIL},
                     "visibility": "public"}]},
        {"kind": "tool_result", "role": "tool_result", "visibility": "internal",
         "blocks": [{"type": "tool_result", "name": "sh", "tool_call_id": "toolu_9", "text": EVIL + "\n\n\nmore",
                     "visibility": "internal"}]},
        {"kind": "compaction", "role": "system", "visibility": "internal",
         "metadata": {"archived_messages": 7, "estimated_tokens_before": 9000, "estimated_tokens_after": 1500, "mode": "auto",
                      "strategy": "summarize"},
         "blocks": [{"type": "text", "text": "Transcript compacted", "visibility": "internal"}]},
    ]
    transcript = {"_type": "transcript", "version": 2, "id": "tr_1", "events": events, "messages": [],
                  "assets": [{"_type": "transcript_asset", "id": a, "kind": "image", "mime_type": "image/png",
                              "name": a, "storage": {"path": p}} for a, p in assets]}
    runs = proj / ".harn-runs"
    runs.mkdir()
    (runs / "run_c.json").write_text(json.dumps({"_type": "run_record", "id": "run_c", "status": "completed",
                                                 "stages": [], "transcript": transcript}))
    return proj


def _render(tmp_path, proj, show_private=False):
    ws = Workspace.load(str(proj), env={}, home=str(tmp_path / "home"))
    return render_uri(ws, "harn-state:/transcripts/tr_1.md", RenderSettings(show_private=show_private))


def _html_lines(md):
    return [ln for ln in md.split("\n") if ln.startswith("<")]


def test_tool_calls_folded_and_all_data_escaped(tmp_path):
    proj = _project(tmp_path, [])
    md = _render(tmp_path, proj)
    assert "<script" not in md and "<img src=x" not in md
    prose = "\n".join(ln for ln in md.split("\n") if not ln.startswith("<"))  # our one-line HTML is never read as Markdown
    assert "[link](javascript:" not in prose and "\\[link\\](javascript:" in prose  # escaped: never a link
    assert not re.search(r"^# Heading injected", md, re.M)
    html = _html_lines(md)
    details = [ln for ln in html if ln.startswith("<details>")]
    assert len(details) == 3  # the call, its result, what the compaction archived
    for line in details:
        # each of our HTML pieces is one well-formed element on one line, data only as text
        root = ET.fromstring(line.replace("&nbsp;", " "))
        assert root.tag == "details" and root.find("summary") is not None
        assert not [e for e in root.iter() if e.tag not in ("details", "summary", "pre", "code", "b", "p")]
    call = ET.fromstring(details[0])
    assert "toolu_9" in "".join(call.find("summary").itertext())
    assert json.loads(call.find("pre").text)["cmd"] == EVIL  # arguments survive exactly, as text
    result = ET.fromstring(details[1])
    assert result.find("pre").text.startswith(EVIL)
    assert "tokens in 1234 / out 56" in md
    assert "private reasoning hidden" in md and "secret plan" not in md


def test_private_reasoning_shown_with_setting(tmp_path):
    md = _render(tmp_path, _project(tmp_path, []), show_private=True)
    assert "secret plan" in md and "private reasoning hidden" not in md


def test_compaction_marker_says_what_was_archived(tmp_path):
    md = _render(tmp_path, _project(tmp_path, []))
    assert re.search(r"Compaction\*\* — 7 message\(s\) archived, ~9000 → ~1500 tokens, 7500 saved", md)
    assert "What was archived" in md


@pytest.mark.parametrize("path,shown", [
    (".harn/assets/ok.png", True),
    ("../proj-evil/secret.png", False),  # outside the project
    (".harn/assets/link.png", False),  # symlink out of the project
    ("ABS_EVIL", False),  # absolute path outside
    (".harn/assets/fake.png", False),  # not an image
    (".harn/assets/missing.png", False),
    (".harn/assets", False),  # a directory
])
def test_images_only_from_inside_the_project(tmp_path, path, shown):
    if path == "ABS_EVIL":
        path = str(tmp_path / "proj-evil" / "secret.png")
    proj = _project(tmp_path, [("a1", path)])
    md = _render(tmp_path, proj)
    imgs = re.findall(r'<img src="(data:image/png;base64,[A-Za-z0-9+/=]+)"', md)
    assert bool(imgs) == shown
    if not shown:
        assert "data:image" not in md
    # plain text readers do not get the embedded image
    assert "data:image" not in strip_pictures(md)
