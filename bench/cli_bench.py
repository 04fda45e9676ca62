"""Whole-process timings, the way a user meets harn-ls: `harn-ls inspect --json` and
`harn-ls recall QUERY -k 10 --json` as fresh processes (interpreter start, imports, load,
output), cold (--no-cache), filling the state cache, warm (valid cache) and after an append
batch (valid cache + new bytes); against a whole-process orjson parse of exactly the memory-log
lines the load reads. Also server start -> first harn/status -> recall ready, cold and warm.

Every figure: wall seconds (median of repeats, min, max) plus the child's CPU seconds
(user + sys, from wait4) and its peak RSS: on a shared 2-core machine the CPU time is the
steadier number.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

# (the memory logs every child below reads, as the load finds them)
MEMORY_LOGS = r"""
root = sys.argv[1]
n = 0
logs = [p for p in sorted(glob.glob(os.path.join(root, '.harn', 'memory', '**', 'events.jsonl'), recursive=True))
        if os.sep + 'vectors' + os.sep not in p]
"""
ORJSON_CHILD = "import glob, os, sys\nimport orjson\n" + MEMORY_LOGS + r"""
for p in logs:
    with open(p, 'rb') as fh:
        for line in fh:
            if line.strip():
                orjson.loads(line); n += 1
print(n)
"""

# The same, plus every other JSON file `inspect` reads (run records, checkpoints): the bytes the
# whole load reads. The budget is against the JSONL lines alone; this row is shown beside it.
OTHER_FILES = r"""
for sub in ('.harn-runs', os.path.join('.harn', 'checkpoints')):
    for p in sorted(glob.glob(os.path.join(root, sub, '*.json'))):
        with open(p, 'rb') as fh:
            orjson.loads(fh.read()); n += 1
"""
ORJSON_ALL_CHILD = ORJSON_CHILD.replace("print(n)", OTHER_FILES + "print(n)")

# Issue 32's floor: every memory line decoded by a typed decoder written in C (msgspec: one
# `decode_lines` call per log into tagged Structs, values kept raw), with no Python per line. What a
# read pipeline in C costs before any check, projection or output; FLOOR_ALL_CHILD adds the
# package's imports and the run records and checkpoints (orjson), the start and the reads any
# `inspect` makes. Their ratios to the two parses are what is left for the projection, the facts,
# the checks of hostile lines and the output under the 2x budget.
FLOOR_CHILD = r"""
import glob, os, sys
from typing import Union
import msgspec
Raw = msgspec.Raw
class Store(msgspec.Struct, tag_field="type", tag="store", gc=False):
    id: str
    key: str
    stored_at: str
    namespace: str = ""
    value: Raw = Raw(b"null")
    text: str = ""
    tags: tuple[str, ...] = ()
    provenance: Raw = Raw(b"null")
    status: Union[str, None] = None
    scope: Union[str, None] = None
    flags: Raw = Raw(b"{}")
class Update(msgspec.Struct, tag_field="type", tag="update", gc=False):
    id: str
    namespace: str = ""
    value: Raw = Raw(b"null")
    text: Union[str, None] = None
    tags: Union[tuple[str, ...], None] = None
    flags: Raw = Raw(b"null")
    updated_at: Union[str, None] = None
class Forget(msgspec.Struct, tag_field="type", tag="forget", gc=False):
    id: str
    namespace: str = ""
    predicate: Raw = Raw(b"null")
    forgotten_ids: tuple[str, ...] = ()
    forgotten_at: str = ""
class Open(msgspec.Struct, tag_field="type", tag="open", gc=False):
    id: str
    namespace: str = ""
decoder = msgspec.json.Decoder(Union[Store, Update, Forget, Open])
""" + MEMORY_LOGS + r"""
for p in logs:
    with open(p, 'rb') as fh:
        n += len(decoder.decode_lines(fh.read()))
print(n)
"""
FLOOR_ALL_CHILD = ("import orjson, harn_ls.cli.main, harn_ls.model.workspace, harn_ls.render.inspect\n"
                   + FLOOR_CHILD.replace("print(n)", OTHER_FILES + "print(n)"))

QUERY = "invoice rounding decimal"


def live_ids(log: Path) -> list[str]:
    """Ids of the records a log holds alive (stored, not forgotten), in a fixed shuffled order."""
    stored: dict[str, None] = {}
    forgotten: set[str] = set()
    with open(log, "rb") as fh:
        for line in fh:
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(ev, dict):
                continue
            if ev.get("type") == "store" and isinstance(ev.get("id"), str):
                stored[ev["id"]] = None
            elif ev.get("type") == "forget" and isinstance(ev.get("forgotten_ids"), list):
                forgotten.update(i for i in ev["forgotten_ids"] if isinstance(i, str))
    alive = [i for i in stored if i not in forgotten]
    random.Random(14).shuffle(alive)
    return alive


def mixed_batch(ns: str, pool: list[str], make_stores, n: int, tag: str) -> bytes:
    """n events as an agent appends them: 80% stores (make_stores), 10% updates and 10% forgets of
    records alive in the log (taken from `pool`, so no id is updated after its forget), interleaved."""
    k = n // 10
    stores = make_stores(n - 2 * k, tag).splitlines(keepends=True)
    per = max(1, len(stores) // max(1, k))
    out: list[bytes] = []
    for i in range(k):
        out += stores[i * per:(i + 1) * per]
        upd = {"type": "update", "id": pool.pop(), "namespace": ns,
               "updated_at": f"2026-06-04T00:00:{i % 60:02d}.000000000+00:00"}
        if i % 2:
            upd["value"] = {"text": f"updated {tag} {i}: invoice rounding to the cent", "source": "chat"}
        else:
            upd.update(text=f"updated {tag} {i}: rounding note", tags=["note", "updated"], flags={"pinned": True})
        gone = pool.pop()
        out.append(orjson.dumps(upd) + b"\n")
        out.append(orjson.dumps({"type": "forget", "id": f"forget-{tag}-{i}", "namespace": ns, "predicate": {"ids": [gone]},
                                 "forgotten_ids": [gone], "forgotten_at": f"2026-06-04T00:01:{i % 60:02d}.000000000+00:00"})
                   + b"\n")
    out += stores[k * per:]
    return b"".join(out)


# The child's own peak RSS. wait4's ru_maxrss is not it: Linux carries the peak of the address space
# a process had before its exec over, and a spawned child starts in this (bench) process's, so every
# row read this process's ~500 MB. GNU time forks the child from its own small process instead.
GNU_TIME = "/usr/bin/time"


def run_child(argv: list[str], env: dict) -> dict:
    """Run one fresh process to completion (posix_spawn, so it starts small: no copy of this
    process's heap), stdout to /dev/null: wall s, the child's own CPU s (wait4) and peak RSS (GNU
    time's %M; None without GNU time)."""
    rss_file = None
    if os.access(GNU_TIME, os.X_OK):
        fd, rss_file = tempfile.mkstemp(prefix="harn-bench-rss-")
        os.close(fd)
        argv = [GNU_TIME, "-f", "%M", "-o", rss_file, *argv]
    try:
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
        _pid, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{argv} exited {os.waitstatus_to_exitcode(status)}")
        rss_mb = None
        if rss_file is not None:
            with open(rss_file) as fh:
                rss_mb = int(fh.read().split()[-1]) / 1024
    finally:
        if rss_file is not None:
            os.unlink(rss_file)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": rss_mb}


def stats(runs: list[dict]) -> dict:
    out = {"n": len(runs)}
    for key in ("wall", "cpu", "rss_mb"):
        vals = [r[key] for r in runs]
        if None in vals:  # (no GNU time: no peak RSS of the child)
            out[key] = {"median": float("nan"), "min": float("nan"), "max": float("nan")}
            continue
        out[key] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
    return out


def harn_ls(*args: str) -> list[str]:
    return [sys.executable, "-m", "harn_ls", *args]


def bench_cli(project: Path, append_to: Path | None, make_batch, repeats: int, cold_repeats: int,
              cache: Path | None = None, ns: str | None = None) -> dict:
    """All CLI rows for one project. The cache folder is private to this run (kept when given).
    With `ns` (the namespace of `append_to`), also batches of stores, updates and forgets."""
    keep = cache is not None
    cache = cache or Path(tempfile.mkdtemp(prefix="harn-bench-cache-"))
    env = dict(os.environ, HARN_LS_CACHE_DIR=str(cache))
    env.pop("HARN_LS_CACHE", None)
    p = str(project)
    inspect = harn_ls("inspect", p, "--json")
    recall = harn_ls("recall", p, QUERY, "-k", "10", "--json")
    res: dict = {}
    try:
        res["orjson"] = stats([run_child([sys.executable, "-c", ORJSON_CHILD, p], env) for _ in range(repeats)])
        res["orjson_all"] = stats([run_child([sys.executable, "-c", ORJSON_ALL_CHILD, p], env) for _ in range(repeats)])
        if cold_repeats:
            res["floor_c"] = stats([run_child([sys.executable, "-c", FLOOR_CHILD, p], env) for _ in range(repeats)])
            res["floor_all"] = stats([run_child([sys.executable, "-c", FLOOR_ALL_CHILD, p], env) for _ in range(repeats)])
            res["inspect_cold"] = stats([run_child(inspect + ["--no-cache"], env) for _ in range(cold_repeats)])
            res["recall_cold"] = stats([run_child(recall + ["--no-cache"], env) for _ in range(cold_repeats)])
        res["inspect_fill"] = stats([run_child(inspect, env)])  # cold + writing the cache
        res["inspect_warm"] = stats([run_child(inspect, env) for _ in range(repeats)])
        res["recall_fill"] = stats([run_child(recall, env)])  # index built and written
        res["recall_warm"] = stats([run_child(recall, env) for _ in range(repeats)])
        if append_to is not None:
            after_i, after_r = [], []
            for i in range(max(1, repeats // 2)):
                with open(append_to, "ab") as fh:
                    fh.write(make_batch(100, f"cli{i}"))
                after_i.append(run_child(inspect, env))  # cached prefix + 100 new events (then re-saved)
                with open(append_to, "ab") as fh:
                    fh.write(make_batch(100, f"clr{i}"))
                after_r.append(run_child(recall, env))
            res["inspect_after_append"] = stats(after_i)
            res["recall_after_append"] = stats(after_r)
        if append_to is not None and ns is not None:
            pool = live_ids(append_to)
            after_i, after_r = [], []
            for i in range(max(1, repeats // 2)):
                for runs, argv, tag in ((after_i, inspect, f"mxi{i}"), (after_r, recall, f"mxr{i}")):
                    with open(append_to, "ab") as fh:
                        fh.write(mixed_batch(ns, pool, make_batch, 100, tag))
                    runs.append(run_child(argv, env))
            res["inspect_after_mixed"] = stats(after_i)
            res["recall_after_mixed"] = stats(after_r)
        res["cache_bytes"] = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
    finally:
        if not keep:
            shutil.rmtree(cache, ignore_errors=True)
    return res


def rows(size_label: str, r: dict) -> list[tuple]:
    """(label, unit, value dict, budget, how) rows for the README table."""
    base = r["orjson"]["wall"]["median"]
    base_cpu = r["orjson"]["cpu"]["median"]
    out = [(f"orjson parse of the memory-log lines ({size_label})", "s wall/cpu", r["orjson"], "",
            "fresh process: python -c, orjson.loads per line of every events.jsonl")]
    base_all = r["orjson_all"]["wall"]["median"] if "orjson_all" in r else None
    if base_all:
        out.append((f"orjson parse of all state files inspect reads ({size_label})", "s wall/cpu", r["orjson_all"], "",
                    "as above plus orjson.loads of every run record and checkpoint file"))
    if "floor_c" in r and base_all:
        out.append((f"floor: memory lines decoded in C, no Python per line ({size_label})", "s wall/cpu", r["floor_c"],
                    f"{r['floor_c']['wall']['median'] / base:.2f}x orjson",
                    "msgspec decode_lines into tagged Structs, values raw (issue 32's floor)"))
        out.append((f"floor: + package imports, run records, checkpoints ({size_label})", "s wall/cpu", r["floor_all"],
                    f"{r['floor_all']['wall']['median'] / base_all:.2f}x of all files",
                    "the start and reads of any inspect, decoded in C: what is left under 2x"))
    for key, label, budget in (("inspect_cold", "inspect --json --no-cache", "<= 2x orjson"),
                               ("inspect_fill", "inspect --json, empty cache (cold + write)", ""),
                               ("inspect_warm", "inspect --json, valid cache", "<= 0.6x orjson"),
                               ("inspect_after_append", "inspect --json, cache + 100 appended", ""),
                               ("recall_cold", "recall -k 10 --json --no-cache", ""),
                               ("recall_fill", "recall -k 10 --json, empty cache", ""),
                               ("recall_warm", "recall -k 10 --json, valid cache", "<= 1x orjson"),
                               ("recall_after_append", "recall -k 10 --json, cache + 100 appended", ""),
                               ("inspect_after_mixed", "inspect --json, cache + 80 stores, 10 updates, 10 forgets", ""),
                               ("recall_after_mixed", "recall -k 10 --json, cache + 80 stores, 10 updates, 10 forgets", "")):
        if key not in r:
            continue
        v = r[key]
        ratio = v["wall"]["median"] / base
        ratio_cpu = v["cpu"]["median"] / base_cpu
        also = f"; {v['wall']['median'] / base_all:.2f}x of all files" if base_all and key.startswith("inspect") else ""
        out.append((f"{label} ({size_label})", "s wall/cpu", v,
                    f"{ratio:.2f}x wall, {ratio_cpu:.2f}x cpu" + (f" ({budget})" if budget else "") + also,
                    "fresh process, whole run incl. interpreter start and output"))
    return out
