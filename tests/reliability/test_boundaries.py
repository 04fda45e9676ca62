"""harn-ls never leaves the project: symlinks out are not followed (reads or writes), hostile names and
harn-state: URIs are refused, and huge logs are read in bounded memory."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed
from harn_ls.actions import checkpoints as ckpt_actions
from harn_ls.actions import facts as fact_actions
from harn_ls.actions import proposals as prop_actions
from harn_ls.model.workspace import Workspace
from harn_ls.render import UriError, make_uri, parse_uri, render_uri
from harn_ls.render.markdown import unescape_markdown
from tests.fuzz.common import SAMPLE

REPO = Path(__file__).resolve().parents[2]
SECRET = "OUTSIDE-SECRET-7f3a"
TS = "2026-11-29T10:00:00.000Z"


def _snapshot(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = os.readlink(p) if p.is_symlink() else (None if p.is_dir() else p.read_bytes())
    return out


@pytest.fixture
def world(tmp_path):
    """A sample project whose state has symlinks into `outside/`, which holds valid Harn state full of SECRET."""
    project = tmp_path / "project"
    shutil.copytree(SAMPLE, project, symlinks=True)
    out = tmp_path / "outside"
    # memory: a namespace directory and a single events.jsonl, both symlinked out
    (out / "ns").mkdir(parents=True)
    store = {"type": "store", "id": "leak1", "key": f"k:{SECRET}", "value": SECRET, "text": f"{SECRET} text",
             "tags": [SECRET], "stored_at": TS}
    (out / "ns" / "events.jsonl").write_text(json.dumps(store) + "\n")
    (out / "events.jsonl").write_text(json.dumps(dict(store, id="leak2")) + "\n")
    os.symlink(out / "ns", project / ".harn/memory/leakdir")
    (project / ".harn/memory/leakfile").mkdir()
    os.symlink(out / "events.jsonl", project / ".harn/memory/leakfile/events.jsonl")
    # skills: a SKILL.md and a whole skill directory symlinked out
    skill = f"---\nname: evil\nshort: {SECRET}\ndescription: {SECRET}\n---\n{SECRET} body\n"
    (out / "skill").mkdir()
    (out / "skill" / "SKILL.md").write_text(skill)
    (project / ".harn/skills/evil").mkdir()
    os.symlink(out / "skill" / "SKILL.md", project / ".harn/skills/evil/SKILL.md")
    os.symlink(out / "skill", project / ".harn/skills/evil-dir")
    os.symlink(out / "skill", project / ".claude/skills/evil-claude")
    # a checkpoint, a run record, a worker snapshot, a run's llm sidecar, the session store
    (out / "ckpt.json").write_text(json.dumps({SECRET: {"value": SECRET}}))
    os.symlink(out / "ckpt.json", project / ".harn/checkpoints/evil.json")
    run = json.loads((SAMPLE / ".harn-runs/run_019e0715-58a0-7e3e-a5ef-278ce390d908.json").read_text())
    run.update(id="run_evil", task=SECRET, status=SECRET, workflow_name=SECRET)
    (out / "run.json").write_text(json.dumps(run))
    os.symlink(out / "run.json", project / ".harn-runs/run_evil.json")
    worker = json.loads((SAMPLE / ".harn/workers/worker-1.json").read_text())
    worker.update(id="worker-evil", name=SECRET, task=SECRET)
    if isinstance(worker.get("transcript"), dict):
        worker["transcript"]["id"] = "evil-transcript"
        worker["transcript"]["summary"] = SECRET
    (out / "worker.json").write_text(json.dumps(worker))
    os.symlink(out / "worker.json", project / ".harn/workers/worker-evil.json")
    llm = next((project / ".harn-runs").glob("*-llm"))
    (out / "llm").mkdir()
    (out / "llm" / "llm_transcript.jsonl").write_text(json.dumps({"type": "request", "call_id": SECRET, "body": SECRET}) + "\n")
    shutil.rmtree(llm)
    os.symlink(out / "llm", llm)
    db = out / "session-store.sqlite"
    shutil.copy(SAMPLE / ".harn/session-store.sqlite", db)
    conn = sqlite3.connect(db)
    conn.execute("update sessions set title = ?", (SECRET,))
    conn.commit()
    conn.close()
    (project / ".harn/session-store.sqlite").unlink()
    os.symlink(db, project / ".harn/session-store.sqlite")
    return project, out


def all_uris(ws) -> list[str]:
    uris = [make_uri("index"), make_uri("recall", q="outside secret 7f3a"), make_uri("recall", q="invoice")]
    uris += [make_uri("memory", ns) for ns in ws.memory]
    uris += [make_uri("facts", f) for f in ws.facts_by_id]
    uris += [make_uri("checkpoints", p) for p in ws.checkpoints]
    uris += [make_uri("proposals", p.id) for p in (ws.pattern.pending if ws.pattern else [])]
    uris += [make_uri("runs", r) for r in ws.runs] + [make_uri("transcripts", t) for t in ws.transcripts if t]
    uris += [make_uri("skills", s.id) for s in (ws.skills.skills + ws.skills.shadowed if ws.skills else [])]
    uris += [make_uri("sessions", s.id) for s in (ws.sessions.sessions if ws.sessions else [])]
    return uris


def test_symlinks_out_of_the_project_are_not_read(world):
    project, _ = world
    ws = Workspace.load(str(project), env={}, home=str(project.parent / "home"))
    rendered = {uri: render_uri(ws, uri) for uri in all_uris(ws)}
    assert len(rendered) > 20
    for uri, text in rendered.items():
        # data is escaped in Markdown (OUTSIDE\-SECRET\-7f3a): look at the text with escapes removed too
        assert SECRET not in text and SECRET not in unescape_markdown(text), uri
    hits = ws.recall.recall("outside secret 7f3a", k=10)
    assert all(SECRET not in repr(h) for h in hits.hits), "recall found content from outside the project"
    # The same through the CLI, as a user would run it.
    env = dict(os.environ, HOME=str(project.parent / "home"), PYTHONPATH=str(REPO))
    for args in (["inspect", str(project), "--json"], ["inspect", str(project)]):
        res = subprocess.run([sys.executable, "-m", "harn_ls", *args], capture_output=True, text=True, env=env, timeout=60)
        assert res.returncode == 0, res.stderr
        assert SECRET not in res.stdout and SECRET not in res.stderr, args
    # ...and the symlinks are reported, not silently dropped, for the state kinds that say so
    assert "leakdir" not in ws.memory and "leakfile" not in ws.memory
    assert "evil" not in ws.checkpoints and "run_evil" not in ws.runs


def test_writes_through_symlinks_out_are_refused(world, tmp_path):
    project, out = world
    ws = Workspace.load(str(project), env={}, home=str(tmp_path / "home"))
    # 1. the facts log's directory replaced by a symlink out: invalidate refuses, nothing written anywhere
    fact_id = next(iter(ws.facts_by_id))
    facts_dir = project / ".harn/memory/project/facts"
    shutil.move(str(facts_dir), str(out / "facts"))
    os.symlink(out / "facts", facts_dir)
    # 2. the skill root and the pattern-learning log symlinked out
    claude = project / ".claude/skills"
    shutil.move(str(claude), str(out / "claude-skills"))
    os.symlink(out / "claude-skills", claude)
    before_out, before_in = _snapshot(out), _snapshot(project)
    with pytest.raises(ActionFailed, match="refused"):
        fact_actions.invalidate_fact(ws, fact_id)
    with pytest.raises(ActionFailed, match="refused"):
        ckpt_actions.forget_stage(ws, "evil", SECRET)
    pending = ws.pending_proposals(include_suppressed=True)
    assert pending
    with pytest.raises(ActionFailed, match="refused"):
        prop_actions.accept_proposal(ws, pending[0].id, skill_root=".claude/skills")
    assert _snapshot(out) == before_out and _snapshot(project) == before_in
    pl = project / ".harn/memory/project/pattern-learning"
    shutil.move(str(pl), str(out / "pl"))
    os.symlink(out / "pl", pl)
    before_out = _snapshot(out)
    with pytest.raises(ActionFailed, match="refused"):
        prop_actions.reject_proposal(ws, pending[0].id)
    assert _snapshot(out) == before_out


HOSTILE_NAMES = ["..", "../x", "a/../../x", "/etc/passwd", "/tmp", "a\x00b", "a\nb", "a\rb", "C:\\x", "..\\x", "", ".", "a/"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_refused_by_every_action(tmp_path, name):
    project = tmp_path / "p"
    shutil.copytree(SAMPLE, project, symlinks=True)
    ws = Workspace.load(str(project), env={}, home=str(tmp_path / "home"))
    before = _snapshot(project)
    pending = ws.pending_proposals(include_suppressed=True)[0].id
    calls = [
        lambda: ckpt_actions.forget_stage(ws, name, "prepare"),  # pipeline name
        lambda: prop_actions.accept_proposal(ws, name),  # proposal id
        lambda: prop_actions.reject_proposal(ws, name),
        lambda: prop_actions.accept_proposal(ws, pending, namespace=name),  # memory namespace
        lambda: prop_actions.reject_proposal(ws, pending, namespace=name),
        lambda: prop_actions.accept_proposal(ws, pending, skill_root=name if name else "\x00"),  # skill root
        lambda: fact_actions.invalidate_fact(ws, name),
    ]
    for i, call in enumerate(calls):
        if i == 5 and name in ("a/", ".", "C:\\x", "..\\x"):  # on POSIX these are relative folders inside the project
            continue
        with pytest.raises(ActionFailed):
            call()
    assert _snapshot(project) == before
    assert prop_actions.check_skill_name  # and skill names:
    if name:
        with pytest.raises(ActionFailed):
            prop_actions.check_skill_name(name)


HOSTILE_URIS = [
    "harn-state:/memory/../../../../etc/passwd.md", "harn-state:/memory/%2e%2e/%2e%2e/etc/passwd.md",
    "harn-state:/memory/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.md", "harn-state:/checkpoints/..%2F..%2F..%2Fetc%2Fpasswd.md",
    "harn-state:/checkpoints/%2Fetc%2Fpasswd.md", "harn-state://etc/passwd.md", "harn-state:///etc/passwd.md",
    "harn-state://localhost/etc/passwd.md", "harn-state:/memory//etc/passwd.md", "harn-state:/memory/a//b.md",
    "harn-state:/runs/..\\..\\etc\\passwd.md", "harn-state:/runs/%5C..%5C..%5Cetc%5Cpasswd.md",
    "harn-state:/skills/%00.md", "harn-state:/skills/a%0Ab.md", "harn-state:/facts/a%0D%0Ab.md",
    "harn-state:/memory/./x.md", "harn-state:/memory/x/.md", "harn-state:/../etc/passwd", "harn-state:/etc/passwd",
    "harn-state:/index.md/../../etc/passwd", "harn-state:/recall.md/../../etc/passwd.md",
    "harn-state:/memory/project/facts.md?page=../../etc/passwd", "harn-state:/checkpoints/review.md#/../../etc/passwd",
    "harn-state:/transcripts/%252e%252e%252fetc%252fpasswd.md", "harn-state:/sessions/" + "a" * 5000 + ".md",
    "file:///etc/passwd", "harn-state:C:/Windows/win.ini", "harn-state:/memory/%ff%fe.md", "harn-state:/facts/\udcff.md",
    "harn-state:/runs/run_019e0715-58a0-7e3e-a5ef-278ce390d908.json.md", "harn-state:/memory/project.md",
]


def test_uris_cannot_read_arbitrary_files(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(SAMPLE, project, symlinks=True)
    marker = "ROOT-ONLY-CONTENT-91c2"
    (tmp_path / "passwd.md").write_text(marker)
    (project / "passwd.md").write_text(marker)
    (project / "etc").mkdir()
    (project / "etc" / "passwd.md").write_text(marker)
    (project / "etc" / "passwd").write_text(marker)
    ws = Workspace.load(str(project), env={}, home=str(tmp_path / "home"))
    for uri in HOSTILE_URIS:
        try:
            text = render_uri(ws, uri)
        except UriError:
            continue
        plain = unescape_markdown(text)
        assert marker not in plain and "root:x:0:0" not in plain, uri
    for uri in HOSTILE_URIS[:16]:
        if "%00" in uri or "%0A" in uri or "%0D" in uri or ".." in uri or "%2e" in uri.lower() or "\\" in uri:
            with pytest.raises(UriError):
                parse_uri(uri)


# -- bounded memory on huge logs ---------------------------------------------------------------------

BIG_SCRIPT = textwrap.dedent("""
    import json, os, resource, sys, time
    from harn_ls.model.workspace import Workspace
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.monotonic()
    ws = Workspace.load(sys.argv[1], env={}, home=sys.argv[2])
    space = ws.memory["big/log"]
    print(json.dumps({"base_kb": base, "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "seconds": time.monotonic() - t, "ids": [r.id for r in space.records()],
                      "problems": [(p.line, p.code) for p in ws.problems() if p.path.endswith("big/log/events.jsonl")]}))
""")


def _big_log(tmp_path: Path, size: int) -> tuple[Path, int]:
    """A few real lines, a sparse hole of `size` bytes (NULs, no newline: one giant line), more real lines,
    a run of 30k short lines, and a torn tail."""
    root = tmp_path / "big"
    (root / ".harn/memory/big/log").mkdir(parents=True)
    (root / "harn.toml").write_text("[package]\nname='big'\n")
    path = root / ".harn/memory/big/log/events.jsonl"

    def line(rid):
        return (json.dumps({"type": "store", "id": rid, "key": "k", "value": rid, "text": rid, "tags": [],
                            "stored_at": TS}) + "\n").encode()

    with open(path, "wb") as fh:
        fh.write(line("before-1") + line("before-2"))
        fh.seek(size, os.SEEK_CUR)  # sparse: costs no disk, reads back as NULs
        fh.write(b"\n" + line("after-1"))
        fh.write(b"".join(line(f"bulk-{i}") for i in range(30_000)))
        fh.write(b'{"type":"store","id":"torn')
    return root, path.stat().st_size


def _measure(tmp_path: Path, size: int) -> dict:
    root, total = _big_log(tmp_path, size)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-c", BIG_SCRIPT, str(root), str(tmp_path / "home")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    out["file_bytes"] = total
    assert out["ids"][:3] == ["before-1", "before-2", "after-1"] and len(out["ids"]) == 30_003
    assert [3, "HL-JSONL-006"] in out["problems"]  # the NUL run: one over-long line, reported at its line
    assert any(code == "HL-JSONL-004" for _, code in out["problems"])  # the torn tail is reported, not parsed
    return out


@pytest.mark.timeout(900)  # (writes and reads 200 MB; its reader may take up to 600 s)
def test_200mb_log_read_in_bounded_memory(tmp_path):
    out = _measure(tmp_path, 200 * 1024 * 1024)
    grown = (out["peak_kb"] - out["base_kb"]) * 1024
    print(f"200 MB log: {out['file_bytes']} bytes, RSS grew {grown / 2**20:.0f} MB, {out['seconds']:.1f} s")
    assert grown < out["file_bytes"] / 3, out


@pytest.mark.skipif(os.environ.get("HARN_LS_BIG") != "1", reason="2 GB log: set HARN_LS_BIG=1 (about 10-20 s)")
@pytest.mark.timeout(1200)
def test_2gb_log_read_in_bounded_memory(tmp_path):
    out = _measure(tmp_path, 2 * 1024**3 + 12345)
    grown = (out["peak_kb"] - out["base_kb"]) * 1024
    print(f"2 GB log: {out['file_bytes']} bytes, RSS grew {grown / 2**20:.0f} MB, {out['seconds']:.1f} s")
    assert out["file_bytes"] >= 2 * 1024**3
    assert grown < out["file_bytes"] / 10, out
