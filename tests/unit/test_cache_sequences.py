"""Random sequences of log changes (and cache damage): after each step a cached load equals an
uncached one."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json
from harn_ls.render.recall import recall_json
from tests.unit.test_cache import QUERIES, SAMPLE, append, cache_folder, cold, event, ids_in, snapshot
from tests.unit.test_cache_inspect import dump, fast

LOGS = [".harn/memory/agent/notes/events.jsonl", ".harn/memory/workspace/acme/events.jsonl",
        ".harn/memory/team/extra/events.jsonl"]

OPS = ["append", "append_dict", "append_torn", "finish_torn", "update_forget", "shorter", "same_size", "rename", "recreate",
       "delete", "add_ns", "remove_ns", "drop_cache", "damage_cache", "append_stores", "append_events"]


def apply_op(project: Path, op: str, which: int, n: int) -> None:
    log = project / LOGS[which % len(LOGS)]
    ns = os.path.relpath(log.parent, project / ".harn/memory")
    exists = log.is_file()
    if op == "append" and exists:
        append(log, event("store", f"h-{n}", ns, n))
    elif op == "append_dict" and exists:  # text = the value's compact JSON: a server keeps the text only
        value = {"text": f"dict note {n} invoice rounding", "confidence": 0.5, "refs": [n, None]}
        append(log, orjson.dumps({"type": "store", "id": f"d-{n}", "namespace": ns, "key": f"dict/{n}", "value": value,
                                  "text": orjson.dumps(value).decode(), "tags": ["billing"],
                                  "stored_at": f"2026-06-0{1 + n % 9}T10:00:00.000000000+00:00"}) + b"\n")
    elif op == "append_stores" and exists:  # stores only (applied without decoding): an old id again, a bad line
        ids = ids_in(log)
        again = event("store", ids[(n * 5) % len(ids)], ns, n + 1) if ids else b""
        append(log, event("store", f"s-{n}", ns, n) + again + b'{"type": "store"\n' + event("store", f"s2-{n}", ns, n + 2))
    elif op == "append_events" and exists:  # updates, forgets, an open (applied without decoding: cache/tail.py)
        ids = ids_in(log)
        if ids:
            old, gone = ids[(n * 3) % len(ids)], ids[(n * 11 + 1) % len(ids)]
            opened = {"type": "open", "id": f"o-{n}", "namespace": ns, "backend": "bm25", "bm25_weight": 0.1 * (n % 9)}
            append(log, event("store", f"e-{n}", ns, n) + event("update", old, ns, n + 1, value={"text": f"patched {n} rounding"})
                   + event("forget", gone, ns, n + 2) + event("update", f"e-{n}", ns, n + 3, flags={"k": True})
                   + event("store", gone, ns, n + 4) + event("update", gone, ns, n + 5)
                   + orjson.dumps(opened) + b"\n" + b'{"type": "update"\n')
    elif op == "append_torn" and exists:
        append(log, event("store", f"t-{n}", ns, n)[:-9])
    elif op == "finish_torn" and exists:
        append(log, b'"}\n')  # finishes a torn line (as something malformed or whole, whatever it was)
    elif op == "update_forget" and exists:
        ids = ids_in(log)
        if ids:
            append(log, event("update", ids[n % len(ids)], ns, n) + event("forget", ids[(n * 7) % len(ids)], ns, n + 1))
    elif op == "shorter" and exists:
        data = log.read_bytes()
        with open(log, "r+b") as fh:
            fh.truncate(0)
            fh.write(data[: len(data) * 2 // 3].rsplit(b"\n", 1)[0] + b"\n" if b"\n" in data else b"")
    elif op == "same_size" and exists:
        data = bytearray(log.read_bytes())
        i = data.find(b"rounding")
        if i < 0:
            i = data.find(b'"key":"') + 7
        if i >= 7:
            data[i] = ord("X") if data[i] != ord("X") else ord("Y")
            st_ = log.stat()
            with open(log, "r+b") as fh:
                fh.write(bytes(data))
            os.utime(log, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000 * (n + 1)))
    elif op == "rename" and exists:
        tmp = log.with_name("events.tmp")
        tmp.write_bytes(log.read_bytes() + event("store", f"r-{n}", ns, n))
        os.replace(tmp, log)
    elif op == "recreate" and exists:
        data = log.read_bytes()
        log.unlink()
        log.write_bytes(data.split(b"\n", 1)[-1] if data.count(b"\n") > 1 else event("store", f"c-{n}", ns, n))
    elif op == "delete" and exists:
        log.unlink()
    elif op == "add_ns":
        log.parent.mkdir(parents=True, exist_ok=True)
        if not exists:
            log.write_bytes(event("store", f"a-{n}", ns, n) + event("store", f"b-{n}", ns, n + 1))
    elif op == "remove_ns" and log.parent.is_dir():
        shutil.rmtree(log.parent)
    elif op == "drop_cache":
        shutil.rmtree(cache_folder(project), ignore_errors=True)
    elif op == "damage_cache":
        folder = Path(cache_folder(project))
        files = sorted(folder.iterdir()) if folder.is_dir() else []
        if files:
            f = files[n % len(files)]
            data = bytearray(f.read_bytes())
            if data:
                data[(n * 31) % len(data)] ^= 0x41
                f.write_bytes(bytes(data))


@settings(max_examples=int(os.environ.get("HARN_LS_CACHE_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 2)), min_size=1, max_size=5))
def test_random_change_sequences_never_change_an_answer(steps):
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        shutil.copytree(SAMPLE, project, symlinks=True)
        old_env = os.environ.get("HARN_LS_CACHE_DIR")
        os.environ["HARN_LS_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            Workspace.load(str(project), cache=True).save_cache()
            for n, (op, which) in enumerate(steps):
                apply_op(project, op, which, n)
                expected = cold(project)
                # recall first, before any record is decoded (a cached index restores lazily), then a
                # memory-only load as `harn-ls recall` does
                for memory_only in (False, True):
                    lazy = Workspace.load(str(project), cache=True, memory_only=memory_only)
                    got = [recall_json(lazy.recall.recall(q, k=10, explain=True)) for q in QUERIES]
                    assert orjson.loads(orjson.dumps(got, default=str)) == expected["recall"], (op, which)
                    if memory_only and n % 2:
                        lazy.save_cache()  # as `harn-ls recall` does (it may keep an entry: cache/tail.py)
                # a one-shot inspect --json (cached facts printed undecoded), saved as the CLI does
                got, fast_ws, _data = fast(project)
                assert got == dump(inspect_json(Workspace.load(str(project)))), (op, which)
                if n % 2 == 0:
                    fast_ws.save_cache()
                for fold in (False, True):  # (the server's load keeps dict values as their text)
                    ws = Workspace.load(str(project), cache=True, fold_values=fold)
                    assert snapshot(ws) == expected, (op, which, fold)
                    if fold == (n % 2 == 1):
                        ws.save_cache()
        finally:
            if old_env is None:
                os.environ.pop("HARN_LS_CACHE_DIR", None)
            else:
                os.environ["HARN_LS_CACHE_DIR"] = old_env
