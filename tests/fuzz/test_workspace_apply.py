"""`Workspace.apply_changes` after random write sequences equals a cold `Workspace.load` of the same files.

Appends are cut at arbitrary bytes (torn lines, CRLF split between writes), mixed with hostile lines,
truncations, rewrites by rename, deletions, checkpoint rewrites (torn and whole) and directory renames.
After every step the incremental model is compared with a cold read (canonical summary) and every
document renders without raising.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harn_ls.formats.facts import fact_store_event, normalize_fact
from harn_ls.formats.harn_json import serde_compact
from harn_ls.model.workspace import Workspace
from harn_ls.render import make_uri, render_uri
from tests.fuzz.common import Counter, check_problems, copy_sample, minimal_project, small, summary
from tests.fuzz.hostile import RAW_EXTREMES

NAMESPACES = ["project/facts", "agent/notes", "project/pattern-learning", "deep/a/b", "agent/notes.v2"]
IDS = ["r1", "r2", "r3", "r4"]
TS = "2026-11-29T10:00:00.000Z"


def _fact_line(i: int, ref: str) -> bytes:
    env = normalize_fact({"kind": "claim", "claim": f"claim {i}", "confidence": 0.5,
                          "evidence": [{"kind": "file_range", "ref": ref}]}, now=TS)
    return serde_compact(fact_store_event(env, "project/facts", TS)).encode()


event = st.one_of(
    st.builds(lambda i, k, v, t: json.dumps({"type": "store", "id": i, "key": k, "value": v, "text": t, "tags": [k],
                                             "stored_at": TS}).encode(),
              st.sampled_from(IDS), st.sampled_from(["k1", "k2"]), st.text(max_size=8) | st.integers(), st.text(max_size=8)),
    st.builds(lambda ids: json.dumps({"type": "forget", "forgotten_ids": ids, "forgotten_at": TS}).encode(),
              st.lists(st.sampled_from(IDS), max_size=2)),
    st.builds(lambda i, s, f: json.dumps({"type": "update", "id": i, "status": s, "flags": f, "updated_at": TS}).encode(),
              st.sampled_from(IDS), st.sampled_from(["active", "archived"]),
              st.dictionaries(st.sampled_from("ab"), st.booleans())),
    st.builds(lambda b: json.dumps({"type": "open", "backend": b}).encode(), st.sampled_from(["bm25", "hybrid", "nope"])),
    st.builds(_fact_line, st.integers(0, 3), st.sampled_from(["src/a.py:1-2", "src/b.py:3", "../x.py:1"])),
    st.sampled_from([b"", b"{", b"not json", b"[1,2]", b'{"type":"store"}', b"\x00\xff\xfe", b'{"type":"zap"}',
                     b'{"type":"store","id":"r1","id":"r2","key":"k","value":1,"stored_at":"x"}',
                     b'{"type":"forget","forgotten_ids":"r1"}', b"\xef\xbb\xbf{}"] + [r.encode() for r in RAW_EXTREMES[:13]]),
)


@st.composite
def stream(draw) -> bytes:
    lines = draw(st.lists(event, min_size=1, max_size=30))
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    return b"".join(line + eol for line in lines) + draw(st.sampled_from([b"", b'{"type":"store","id"']))


CKPT_VALID = json.dumps({"prepare": {"ok": True}, "upload": None}, indent=2).encode()
checkpoint_bytes = st.sampled_from([CKPT_VALID, CKPT_VALID[:17], b"", b"{}", b"[]", b"{\"a\":1,\"a\":2}", b"\xff",
                                    json.dumps({"_v": 1, "k": {"fingerprint": "x", "value": 1}}).encode()])

op = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(NAMESPACES), stream(), st.lists(st.integers(0, 2000), max_size=4)),
    st.tuples(st.just("truncate"), st.sampled_from(NAMESPACES), st.integers(0, 3000)),
    st.tuples(st.just("replace"), st.sampled_from(NAMESPACES), stream()),
    st.tuples(st.just("delete"), st.sampled_from(NAMESPACES)),
    st.tuples(st.just("rename_dir"), st.sampled_from(NAMESPACES), st.sampled_from(NAMESPACES)),
    st.tuples(st.just("checkpoint"), st.sampled_from(["p", "q"]), checkpoint_bytes),
    st.tuples(st.just("checkpoint_delete"), st.sampled_from(["p", "q"])),
    st.tuples(st.just("move_out"), st.sampled_from([".harn", ".harn/memory", ".harn/memory/agent", ".harn/checkpoints",
                                                     ".harn/memory/agent/notes.v2"])),
)


def _events(root: Path, ns: str) -> Path:
    return root / ".harn" / "memory" / ns / "events.jsonl"


def perform(root: Path, o) -> list[str]:
    """Do one write the way an agent (or a person) would; return the paths a watcher would report."""
    kind = o[0]
    if kind == "append":
        _, ns, data, cuts = o
        path = _events(root, ns)
        path.parent.mkdir(parents=True, exist_ok=True)
        points = sorted({c % (len(data) + 1) for c in cuts}) + [len(data)]
        out, prev = [], 0
        for p in points:  # several appends, each followed by an apply (returned one by one)
            with open(path, "ab") as fh:
                fh.write(data[prev:p])
            prev = p
            out.append(str(path))
        return out
    if kind == "truncate":
        path = _events(root, o[1])
        if path.exists():
            with open(path, "r+b") as fh:
                fh.truncate(min(o[2], path.stat().st_size))
        return [str(path)]
    if kind == "replace":
        path = _events(root, o[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name("events.jsonl.tmp")
        tmp.write_bytes(o[2])
        os.replace(tmp, path)
        return [str(path)]
    if kind == "delete":
        path = _events(root, o[1])
        if path.exists():
            path.unlink()
        return [str(path)]
    if kind == "rename_dir":
        src, dst = _events(root, o[1]).parent, _events(root, o[2]).parent
        if src.exists() and not dst.exists() and not str(dst).startswith(str(src) + os.sep) \
                and not str(src).startswith(str(dst) + os.sep):
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, dst)
            return [str(src), str(dst)]
        return []
    if kind == "checkpoint":
        path = root / ".harn" / "checkpoints" / f"{o[1]}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:  # Harn: truncate + write, not atomic
            fh.write(o[2])
        return [str(path)]
    if kind == "checkpoint_delete":
        path = root / ".harn" / "checkpoints" / f"{o[1]}.json"
        if path.exists():
            path.unlink()
        return [str(path)]
    if kind == "move_out":  # renamed out of the project (no per-file events), then back in a later step
        src = root / o[1]
        away = root.parent / "away"
        if src.exists() and not away.exists():
            os.rename(src, away)
            return [str(src)]
        if away.exists() and not src.exists() and src.parent.exists():
            os.rename(away, src)
            return [str(src)]
        return []
    raise AssertionError(kind)


def render_everything(ws) -> None:
    uris = [make_uri("index"), make_uri("recall", q="claim k1")]
    uris += [make_uri("memory", ns) for ns in ws.memory]
    uris += [make_uri("facts", f) for f in ws.facts_by_id]
    uris += [make_uri("checkpoints", p) for p in ws.checkpoints]
    uris += [make_uri("proposals", p.id) for p in (ws.pattern.pending if ws.pattern else [])]
    uris += [make_uri("runs", r) for r in ws.runs] + [make_uri("transcripts", t) for t in ws.transcripts if t]
    uris += [make_uri("skills", s.id) for s in (ws.skills.skills if ws.skills else [])]
    for uri in uris:
        text = render_uri(ws, uri)
        assert isinstance(text, str) and len(text.encode()) <= 1_000_000


def _run_sequence(root: Path, ops) -> None:
    ws = Workspace.load(str(root), env={}, home=str(root.parent / "home"))
    for o in ops:
        for changed in perform(root, o):
            ws.apply_changes([changed])
            Counter.hit("workspace.apply")
        cold = Workspace.load(str(root), env={}, home=str(root.parent / "home"))
        assert summary(ws) == summary(cold), o
        check_problems(ws.problems(), repr(o))
    render_everything(ws)


def test_apply_equals_cold_load_minimal_project():
    @small(150)
    @given(ops=st.lists(op, min_size=1, max_size=12))
    def run(ops):
        base = Path(tempfile.mkdtemp(prefix="harn-ls-apply-"))
        try:
            _run_sequence(minimal_project(base), ops)
        finally:
            shutil.rmtree(base, ignore_errors=True)

    run()


def test_apply_equals_cold_load_sample_project():
    """The same on a copy of the sample project (facts, pattern learning, skills, runs and the session store loaded)."""
    @small(25)
    @given(ops=st.lists(op, min_size=1, max_size=6))
    def run(ops):
        base = Path(tempfile.mkdtemp(prefix="harn-ls-apply-"))
        try:
            _run_sequence(copy_sample(base), ops)
        finally:
            shutil.rmtree(base, ignore_errors=True)

    run()


def test_append_every_byte_of_sample_logs_incrementally(tmp_path):
    """Each sample log written one byte per apply: after every byte the model equals a cold read."""
    root = copy_sample(tmp_path)
    logs = sorted(root.glob(".harn/memory/**/events.jsonl"))
    originals = {p: p.read_bytes() for p in logs}
    for p in logs:
        p.write_bytes(b"")
    ws = Workspace.load(str(root), env={}, home=str(tmp_path / "home"))
    for p, data in originals.items():
        with open(p, "ab") as fh:
            for i in range(len(data)):
                fh.write(data[i:i + 1])
                fh.flush()
                ws.apply_changes([str(p)])
                Counter.hit("workspace.apply")
                if data[i:i + 1] == b"\n" or i == len(data) - 1:
                    cold = Workspace.load(str(root), env={}, home=str(tmp_path / "home"))
                    assert summary(ws) == summary(cold), (p, i)
    assert not [x for x in ws.problems() if x.code.startswith("HL-JSONL")]
