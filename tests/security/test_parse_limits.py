"""Issue 27 item 3: parsers of project files cannot crash the load.

Before: a 200 KB `harn.toml` of 100k nested arrays raised RecursionError through the load: `inspect`
exited 1 with a traceback and the server never reached its first status. Now it is HL-LIMIT-001 on
`harn.toml`, and every other parser meets the same input as a problem: JSON (stdlib in signature
envelopes and cached vectors, orjson in memory lines, checkpoints and SQLite event payloads), YAML
frontmatter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from harn_ls.formats.parse_limits import load_toml, loads_json
from harn_ls.model.workspace import Workspace
from harn_ls.recall.vectors import read_cached_vector
from tests.helpers import event_log_writer as W
from tests.lsp.conftest import REPO, SAMPLE, make_client_fixture

DEEP = 100_000
DEEP_TOML = "[skills]\nlookup_order = " + "[" * DEEP + "]" * DEEP + "\n"  # ~200 KB


def deep_project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    (proj / "harn.toml").write_text(DEEP_TOML)
    return proj


def test_load_toml_limits():
    assert len(DEEP_TOML) > 200_000
    data, why = load_toml(DEEP_TOML.encode())
    assert data is None and why == "nests arrays or tables too deeply to parse; not loaded"
    assert load_toml(b"[skills]\nx = [[1], [2]]\n") == ({"skills": {"x": [[1], [2]]}}, None)
    data, why = load_toml(b"[skills\n")
    assert data is None and why.startswith("is not valid TOML")
    with pytest.raises(ValueError, match="nests too deeply"):
        loads_json("[" * DEEP + "]" * DEEP)


def test_inspect_lists_the_problem_and_exits_normally(tmp_path):
    proj = deep_project(tmp_path)
    done = subprocess.run([sys.executable, "-m", "harn_ls", "inspect", str(proj), "--json"], capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.returncode in (0, 1)  # 1: the sample project has errors of its own; never the crash's
    data = json.loads(done.stdout)
    mine = [p for p in data["problems"] if p["path"] == "harn.toml" and p["code"] == "HL-LIMIT-001"]
    assert len(mine) == 1 and "too deeply" in mine[0]["message"]
    assert data["counts"]["facts"] > 0  # the rest of the project loaded


def test_every_other_parser_meets_deep_nesting_as_a_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("HARN_LS_CACHE", "off")
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    deep_json = "[" * DEEP + "]" * DEEP
    # a memory line, a checkpoint, a SQLite event payload, a skill's signature envelope and frontmatter
    with open(proj / ".harn/memory/project/facts/events.jsonl", "a") as fh:
        fh.write('{"deep": ' + deep_json + "}\n")
    (proj / ".harn/checkpoints/deep.json").write_text(deep_json)
    conn = W.open_log(str(proj / ".harn/events.sqlite"))
    W.append(conn, "deep.topic", "deep", None, raw_payload=deep_json.encode())
    conn.close()
    skill = proj / ".harn/skills/deep-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: deep-skill\nshort: x\nx: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n")
    sig = proj / ".harn/skills/signed-review/SKILL.md.sig"
    sig.write_text("[" * 30_000 + "]" * 30_000)  # under the 64 KB cap on envelopes: parsed, too deep
    ws = Workspace.load(str(proj))
    by_path = {}
    for p in ws.problems():
        by_path.setdefault(os.path.relpath(p.path, proj), []).append(p)
    assert any("line" in p.message or "JSON" in p.message for p in by_path[".harn/memory/project/facts/events.jsonl"])
    assert by_path[".harn/checkpoints/deep.json"]
    assert any("deeper than" in p.message for p in by_path[".harn/skills/deep-skill/SKILL.md"])
    sigs = [s for s in ws.skills.skills if s.name == "signed-review"]
    assert sigs and "nests too deeply" in (sigs[0].signature.error or "")
    # the deep SQLite payload: read as a bad payload, the load went on
    assert ws.counts()["facts"] > 0
    vec = tmp_path / "ns" / "vectors" / "hint"
    vec.mkdir(parents=True)
    (vec / "a.json").write_text(deep_json)
    assert read_cached_vector(str(vec / "a.json")) == (None, "unreadable cache file (ValueError)")


# ------------------------------------------------------------------------------------------ over LSP (stdio)
@pytest.fixture
def project(tmp_path: Path) -> Path:
    return deep_project(tmp_path)


client = make_client_fixture()  # waits for the first harn/status: before, it never came


async def test_server_reaches_its_first_status(client):
    toml = (client.project / "harn.toml").as_uri()
    await client.rec.wait_for(lambda: toml in client.diagnostics, 15)
    assert [d.code for d in client.diagnostics[toml]] == ["HL-LIMIT-001"]
    index = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/index.md"))).text
    assert "harn-state:/checkpoints/ingest.md" in index
