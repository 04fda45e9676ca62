"""`make bench`: measure harn-ls on a large synthetic Harn project against the budgets in design.md.

    python bench/run.py [--quick]

Generates bench/out/large (100k events) and bench/out/small (1k events) with
bench/generate.py when missing, then measures (every figure is the median of
repeated runs, with min and max):

* cold `Workspace.load` of the whole project, each run in a fresh process,
  vs a bare orjson parse of the same JSONL bytes in that process (ratio);
* incremental: append 1 / 10 / 100 events to the busiest namespace's
  events.jsonl, time `ws.apply_changes([path])` until the model reflects them, at 1k
  and at 100k events (ratio); `apply` queues the batch for the recall index, so the
  index update it leaves (the server's idle work) and a first recall right after a
  100-event batch (which folds it in) are timed too;
* through the real server (`python -m harn_ls serve` over stdio, driven by
  the minimal JSON-RPC client below): hover and code lens (+ resolve) on the
  source file with the most facts, p50/p95; file written -> `harn/treeChanged`
  or `workspace/textDocumentContent/refresh` at the client, p50/p95; bytes of
  the largest response when opening the 10 MB transcript; the server's peak RSS;
* recall top-10 over the loaded workspace, p50/p95, and rank-bm25 on the same
  records (queries and helpers from bench/bench_recall.py).

Prints a table and writes bench/results.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import queue
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_recall  # noqa: E402
import cli_bench  # noqa: E402
import first_bench  # noqa: E402
import orjson  # noqa: E402
import progress_bench  # noqa: E402

from harn_ls.formats.harn_json import serde_compact  # noqa: E402

OUT = HERE / "out"
BUDGETS = {
    "load_ratio": 2.0,
    "apply_ms": 5.0,
    "apply_ratio": 1.5,
    "hover_p95_ms": 10.0,
    "lens_p95_ms": 10.0,
    "recall_p95_ms": 20.0,
    "notify_p95_ms": 300.0,
    "largest_response_bytes": 1_000_000,
    "rss_ratio": 3.0,
}


# ----------------------------------------------------------------------------- helpers
def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def pcts(values: list[float]) -> dict:
    return {"p50": statistics.median(values), "p95": bench_recall._pct(values, 0.95), "min": min(values),
            "max": max(values), "n": len(values)}


def ensure_generated(size: str) -> Path:
    dest = OUT / size
    if not (dest / "bench-manifest.json").is_file():
        print(f"generating {dest} ...", flush=True)
        subprocess.run([sys.executable, str(HERE / "generate.py"), str(dest), "--size", size], check=True)
    return dest


def log_files(root: Path) -> list[Path]:
    return sorted((root / ".harn" / "memory").rglob("events.jsonl"))


def disk_bytes(root: Path) -> dict:
    mem = sum(p.stat().st_size for p in log_files(root))
    runs = sum(p.stat().st_size for p in (root / ".harn-runs").glob("*.json"))
    ckpt = sum(p.stat().st_size for p in (root / ".harn" / "checkpoints").glob("*.json"))
    return {"memory_logs": mem, "run_records": runs, "checkpoints": ckpt, "total": mem + runs + ckpt}


def scratch_copy(src: Path, writable: list[str]) -> Path:
    """A hard-linked copy of a project (cheap), with real copies of the files we will append to."""
    dest = Path(tempfile.mkdtemp(prefix="harn-bench-")) / src.name
    shutil.copytree(src, dest, copy_function=os.link)
    for rel in writable:
        p = dest / rel
        p.unlink()
        shutil.copyfile(src / rel, p)
    return dest


APPLY_SLOW_MS = 5.0  # the apply budget (BUDGETS["apply_ms"])


def steal_ticks() -> int:
    """The machine's CPU steal time so far, in clock ticks (/proc/stat; 0 where unreadable): time a
    virtual CPU was ready to run but its host ran something else."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
        return int(fields[8])
    except (OSError, IndexError, ValueError):
        return 0


def settle_gc() -> None:
    """What the server does after loading a project (Project.load): freeze the loaded model."""
    gc.freeze()


# ----------------------------------------------------------------------------- cold load
COLD_CHILD = r"""
import gc, glob, json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
import orjson
root = sys.argv[1]
files = sorted(glob.glob(os.path.join(root, '.harn', 'memory', '**', 'events.jsonl'), recursive=True))
def bare():
    n = 0
    for p in files:
        with open(p, 'rb') as fh:
            for line in fh.read().split(b'\n'):
                if line:
                    orjson.loads(line); n += 1
    return n
bare_s = []
for _ in range(3):
    t = time.perf_counter(); n = bare(); bare_s.append(time.perf_counter() - t)
gc.collect()
from harn_ls.model.workspace import Workspace
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
ws = Workspace.load(root)
load = time.perf_counter() - t
ws.recall  # the recall index is built on first use; time it too, so nothing hides
load_recall = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"load_s": load, "load_recall_s": load_recall, "bare_s": min(bare_s), "lines": n, "rss_kb": rss,
                  "rss_before_kb": rss0,
                  "records": ws.counts()["records"], "facts": len(ws.facts)}))
"""


def bench_cold(root: Path, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", COLD_CHILD, str(root), str(ROOT)], check=True,
                             capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    load = [r["load_s"] for r in runs]
    bare = [r["bare_s"] for r in runs]
    ratio = [r["load_s"] / r["bare_s"] for r in runs]
    with_index = [r["load_recall_s"] for r in runs]
    return {"load_s": summary(load), "load_with_recall_index_s": summary(with_index),
            "bare_orjson_s": summary(bare), "ratio": summary(ratio),
            "ratio_with_recall_index": summary([w / r["bare_s"] for w, r in zip(with_index, runs, strict=True)]),
            "lines": runs[0]["lines"], "records": runs[0]["records"], "facts": runs[0]["facts"],
            "rss_kb": summary([r["rss_kb"] for r in runs]), "rss_before_load_kb": summary([r["rss_before_kb"] for r in runs])}


# ----------------------------------------------------------------------------- incremental
class Appender:
    """New events for one namespace, in Harn's line format: mostly stores, some updates and forgets."""

    def __init__(self, ns: str, ws, seed: int) -> None:
        self.ns = ns
        self.rng = random.Random(seed)
        self.words = bench_recall.make_vocab(random.Random(seed), 2000)
        self.live = [r.id for r in ws.memory[ns].records()][-2000:]
        self.n = 0

    def lines(self, k: int) -> bytes:
        out = []
        for _ in range(k):
            self.n += 1
            at = f"2026-06-01T00:{self.n // 60 % 60:02d}:{self.n % 60:02d}.{self.n:09d}+00:00"[:35]
            r = self.rng.random()
            if r < 0.08 and self.live:
                ev = {"type": "update", "id": self.rng.choice(self.live), "namespace": self.ns,
                      "tags": ["note"], "updated_at": at}
            elif r < 0.12 and len(self.live) > 10:
                rid = self.live.pop(self.rng.randrange(len(self.live)))
                ev = {"type": "forget", "id": f"bench-forget-{self.n}", "namespace": self.ns,
                      "predicate": {"id": rid}, "forgotten_ids": [rid], "forgotten_at": at}
            else:
                rid = f"bench-append-{self.n:08d}"
                text = " ".join(self.rng.choices(self.words, k=self.rng.randint(10, 50)))
                value = {"text": text, "confidence": 0.5, "source": "chat"}
                ev = {"type": "store", "id": rid, "namespace": self.ns, "key": f"appended/{self.n}", "value": value,
                      "text": serde_compact(value), "tags": ["note"], "stored_at": at}
                self.live.append(rid)
            out.append(serde_compact(ev) + "\n")
        return "".join(out).encode()


def append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def bench_incremental(ws, path: Path, ns: str, repeats: int, queries: list[str]) -> tuple[dict, dict]:
    """(apply p50/p95 per batch size, the deferred recall-index work). `ws.apply` queues the batch
    for the recall index (RecallEngine.apply); the server folds it in once its client is quiet
    (`Workspace.fold_recall_queue`), which is timed after each apply as "index update", and a recall right
    after a 100-event batch, with nothing folded yet, pays it itself ("first recall")."""
    from harn_ls.formats.memory import builds_here
    from harn_ls.lsp.project import keep_out_of_collector

    builds = builds_here()
    app = Appender(ns, ws, seed=len(ws.memory[ns].records()))  # (builds a restored namespace's records)
    if builds_here() != builds:
        keep_out_of_collector()  # what a server does after the task that built them (lsp/project.py)
    out, upkeep = {}, {}
    gc_ms: list[float] = []  # every collector pass during the samples (gc.callbacks)
    gc_start = [0.0]

    def on_gc(phase: str, _info: dict) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            gc_ms.append((time.perf_counter() - gc_start[0]) * 1000)

    gc.callbacks.append(on_gc)
    try:
        for k in (1, 10, 100):
            times, folds, slow = [], [], []
            gc_first = len(gc_ms)
            for _ in range(repeats):
                before = ws.memory[ns].event_count
                append(path, app.lines(k))
                n_gc, steal0 = len(gc_ms), steal_ticks()
                t0, c0 = time.perf_counter(), time.thread_time()
                ws.apply_changes([str(path)])
                dt, cpu = time.perf_counter() - t0, time.thread_time() - c0
                assert ws.memory[ns].event_count == before + k, "apply did not reflect the appended events"
                times.append(dt * 1000)
                if dt * 1000 > 2 * APPLY_SLOW_MS:  # say where a slow sample's time went
                    slow.append({"wall_ms": dt * 1000, "thread_cpu_ms": cpu * 1000, "gc_ms": sum(gc_ms[n_gc:]),
                                 "steal_ticks": steal_ticks() - steal0})
                t0 = time.perf_counter()
                ws.fold_recall_queue()  # what the server does once the client is quiet after a batch
                folds.append((time.perf_counter() - t0) * 1000)
            out[str(k)] = pcts(times) | {"slow_samples": slow, "gc_max_ms": max(gc_ms[gc_first:], default=0.0)}
            upkeep[str(k)] = pcts(folds)
    finally:
        gc.callbacks.remove(on_gc)
    first = []
    for i in range(repeats):
        append(path, app.lines(100))
        ws.apply_changes([str(path)])
        t0 = time.perf_counter()
        ws.recall.recall(queries[i % len(queries)], k=10)
        first.append((time.perf_counter() - t0) * 1000)
    return out, {"index_update_ms": upkeep, "first_recall_after_100_ms": pcts(first)}


def recall_queries(seed: int, n: int) -> list[str]:
    """The recall benchmark's queries: Zipf-distributed words of the generator's vocabulary."""
    gen_vocab = bench_recall.make_vocab(random.Random(seed), 20_000)  # the generator's vocabulary, same order
    cum, total = [], 0.0
    for rank in range(1, len(gen_vocab) + 1):
        total += 1.0 / rank**bench_recall.ZIPF_S
        cum.append(total)
    return bench_recall.make_queries(random.Random(seed + 7), gen_vocab, cum, n)


# ----------------------------------------------------------------------------- recall
def bench_recall_ws(ws, seed: int, n_queries: int, bm25_queries: int) -> dict:
    queries = recall_queries(seed, n_queries)
    engine = ws.recall
    lat, lat_ns = [], []
    busiest = max(ws.memory, key=lambda n: len(ws.memory[n].active))
    for q in queries:
        t0 = time.perf_counter()
        engine.recall(q, k=10)
        lat.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        engine.recall(q, k=10, namespace=busiest)
        lat_ns.append((time.perf_counter() - t0) * 1000)
    out = {"records": sum(len(ix) for ix in engine.indexes.values()), "all_namespaces_ms": pcts(lat),
           "busiest_namespace": busiest, "busiest_records": len(engine.indexes[busiest]),
           "busiest_namespace_ms": pcts(lat_ns)}
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return out
    records = [d.record for d in engine.indexes[busiest].docs.values()]
    corpus = [bench_recall.tokenize(bench_recall.searchable_text(r)) for r in records]
    bm = BM25Okapi(corpus, k1=1.2, b=0.75)  # as bench_recall.bench_size
    blat = []
    for q in queries[:bm25_queries]:
        qt = bench_recall.tokenize(q)
        t0 = time.perf_counter()
        scores = bm.get_scores(qt)
        sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:10]
        blat.append((time.perf_counter() - t0) * 1000)
    out["rank_bm25_busiest_namespace_ms"] = pcts(blat)
    # harn-ls over exactly the queries rank-bm25 ran (the first bm25_queries), for a like-for-like row
    out["busiest_namespace_bm25_queries_ms"] = pcts(lat_ns[:len(blat)])
    del bm, corpus
    return out


# ----------------------------------------------------------------------------- LSP client
class Client:
    """Minimal JSON-RPC client for `harn-ls serve` over stdio; answers server requests with null."""

    def __init__(self, cwd: Path, env: dict | None = None) -> None:
        # HARN_LS_BENCH_STDERR=FILE keeps the servers' stderr there (with HARN_LS_START_TRACE=1: the start's timeline)
        keep = (env or os.environ).get("HARN_LS_BENCH_STDERR")
        with open(keep if keep else os.devnull, "ab") as stderr:  # (the child has its own copy once started)
            self.proc = subprocess.Popen([sys.executable, "-m", "harn_ls", "serve"], cwd=str(ROOT),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
        self.next_id = 0
        self.pending: dict[int, queue.Queue] = {}
        self.notes: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.largest_message = 0
        self.sizes: dict[int, int] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _send(self, msg: dict) -> None:
        body = orjson.dumps(msg)
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        f = self.proc.stdout
        while True:
            length = None
            while True:
                line = f.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = f.read(length)
            t = time.perf_counter()
            msg = orjson.loads(body)
            if "id" in msg and "method" in msg:  # a request from the server
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                continue
            if "id" in msg:
                self.sizes[msg["id"]] = len(body)
                self.largest_message = max(self.largest_message, len(body))
                q = self.pending.pop(msg["id"], None)
                if q is not None:
                    q.put((t, msg))
                continue
            self.notes.put((t, msg))

    def request(self, method: str, params, timeout: float = 120.0) -> tuple[float, dict, int]:
        self.next_id += 1
        rid = self.next_id
        q: queue.Queue = queue.Queue()
        self.pending[rid] = q
        t0 = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        t1, msg = q.get(timeout=timeout)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return (t1 - t0) * 1000, msg.get("result"), self.sizes.pop(rid, 0)

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_note(self, methods: set[str], timeout: float) -> tuple[float, dict] | None:
        end = time.perf_counter() + timeout
        while True:
            left = end - time.perf_counter()
            if left <= 0:
                return None
            try:
                t, msg = self.notes.get(timeout=left)
            except queue.Empty:
                return None
            if msg.get("method") in methods:
                return t, msg

    def drain(self) -> None:
        while True:
            try:
                self.notes.get_nowait()
            except queue.Empty:
                return

    def peak_rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def busiest_source(ws) -> tuple[str, list[tuple[int, int]]]:
    rel = max(ws.facts_by_file, key=lambda p: len(ws.facts_by_file[p]))
    ranges = sorted({(ev.range.start, ev.range.end) for f in ws.facts_for_file(rel) for ev in f.evidence
                     if ev.range is not None and ev.range.path == rel})
    return rel, ranges


def bench_server(project: Path, events_path: Path, ns: str, rel: str, ranges, big_transcript: str,
                 big_run: str, hovers: int, notifies: int, env: dict | None = None, docs: bool = True) -> dict:
    uri_root = project.as_uri()
    c = Client(project, env)
    out: dict = {}
    try:
        t0 = time.perf_counter()
        c.request("initialize", {"processId": os.getpid(), "rootUri": uri_root,
                                 "workspaceFolders": [{"uri": uri_root, "name": "bench"}],
                                 "capabilities": {"workspace": {"configuration": False,
                                                                "codeLens": {"refreshSupport": True}}}})
        c.notify("initialized", {})
        if c.wait_note({"harn/status"}, 300) is None:
            raise RuntimeError("server never reported harn/status")
        out["server_load_s"] = time.perf_counter() - t0
        # Steady state starts when the recall index, built in short steps after the load, is ready.
        while True:
            note = c.wait_note({"harn/status"}, 300)
            if note is None:
                raise RuntimeError("server never reported recallReady")
            if note[1].get("params", {}).get("recallReady"):
                break
        out["server_ready_s"] = time.perf_counter() - t0
        wait_cache_written(project, env)  # the server writes its state cache once recall is ready
        time.sleep(0.5)
        c.drain()
        file_uri = (project / rel).as_uri()
        text = (project / rel).read_text()
        c.notify("textDocument/didOpen", {"textDocument": {"uri": file_uri, "languageId": "python", "version": 1,
                                                           "text": text}})
        rng = random.Random(5)
        # warm-up (first call pays for reading the source file)
        c.request("textDocument/hover", {"textDocument": {"uri": file_uri}, "position": {"line": 0, "character": 0}})
        hov = []
        for _ in range(hovers):
            s, e = rng.choice(ranges)
            ms, res, _ = c.request("textDocument/hover", {"textDocument": {"uri": file_uri},
                                                           "position": {"line": rng.randint(s, e) - 1, "character": 4}})
            assert res is not None, "hover on a fact range returned nothing"
            hov.append(ms)
        out["hover_ms"] = pcts(hov)
        lens, resolve, full = [], [], []
        n_lenses = 0
        for i in range(max(50, hovers // 10)):
            ms, lenses, size = c.request("textDocument/codeLens", {"textDocument": {"uri": file_uri}})
            lens.append(ms)
            n_lenses = len(lenses)
            total = ms
            pick = lenses if i == 0 else rng.sample(lenses, min(20, len(lenses)))
            for item in pick:
                rms, res, _ = c.request("codeLens/resolve", item)
                assert res.get("command"), "resolved lens without a command"
                resolve.append(rms)
                total += rms
            if i == 0:
                full.append(total)
        out["code_lens_ms"] = pcts(lens)
        out["code_lens_resolve_ms"] = pcts(resolve)
        out["code_lens_count"] = n_lenses
        out["code_lens_all_resolved_ms"] = full[0]
        # right after an append batch (the model just changed; no warm span cache): one hover and one
        # code lens as soon as the client hears about the batch
        hov2, lens2, heard = [], [], []
        for i in range(max(10, notifies)):
            c.drain()
            t_append = time.perf_counter()
            append(events_path, batch_lines(ns, 100, f"srv{i}"))
            # generous: the first batch after a warm start also turns a lazily restored recall index
            # into a full one (every record decoded), which takes seconds at 1M; reported below
            note = c.wait_note({"harn/treeChanged", "workspace/textDocumentContent/refresh"}, 180)
            if note is None:
                raise RuntimeError("no notification within 180 s of an append batch")
            heard.append((note[0] - t_append) * 1000)
            s, e = rng.choice(ranges)
            ms, res, _ = c.request("textDocument/hover", {"textDocument": {"uri": file_uri},
                                                           "position": {"line": rng.randint(s, e) - 1, "character": 4}})
            hov2.append(ms)
            ms, _lenses, _ = c.request("textDocument/codeLens", {"textDocument": {"uri": file_uri}})
            lens2.append(ms)
        out["append_to_notification_ms"] = {"first": heard[0], "rest": pcts(heard[1:])}
        out["hover_after_append_ms"] = pcts(hov2)
        out["code_lens_after_append_ms"] = pcts(lens2)
        if not docs:
            out["server_peak_rss_kb"] = c.peak_rss_kb()
            return out
        # largest response: the 10 MB transcript and its run, first page and every page
        docs = {}
        for name, uri in (("transcript", f"harn-state:/transcripts/{big_transcript}.md"),
                          ("run", f"harn-state:/runs/{big_run}.md")):
            ms, res, size = c.request("workspace/textDocumentContent", {"uri": uri})
            docs[name] = {"ms": ms, "bytes": size, "text_chars": len(res["text"])}
        for name, uri in (("transcript", f"harn-state:/transcripts/{big_transcript}.md"),
                          ("run", f"harn-state:/runs/{big_run}.md")):
            ms, res, size = c.request("workspace/textDocumentContent", {"uri": uri})  # opened again, unchanged
            docs[name]["again_ms"] = ms
        ms, res, size = c.request("workspace/textDocumentContent", {"uri": "harn-state:/index.md"})
        docs["index"] = {"ms": ms, "bytes": size}
        out["documents"] = docs
        # file written -> notification (debounce included); keep the transcript open so refresh may come too
        time.sleep(0.5)
        c.drain()
        app_lines = _append_lines(ns, notifies)
        lat = []
        for i in range(notifies):
            t0 = time.perf_counter()
            append(events_path, app_lines[i])
            got = c.wait_note({"harn/treeChanged", "workspace/textDocumentContent/refresh"}, 10)
            if got is None:
                raise RuntimeError("no notification within 10 s of an append")
            lat.append((got[0] - t0) * 1000)
            time.sleep(0.4)
            c.drain()
        out["notify_ms"] = pcts(lat)
        out["largest_message_bytes"] = c.largest_message
        out["server_peak_rss_kb"] = c.peak_rss_kb()
    finally:
        c.close()
    return out


def batch_lines(ns: str, n: int, tag: str) -> bytes:
    """n store events (unique ids) in Harn's line format."""
    out = []
    for i in range(n):
        value = {"text": f"batch {tag} note {i} about invoice rounding", "confidence": 0.5, "source": "chat"}
        ev = {"type": "store", "id": f"bench-{tag}-{i:05d}", "namespace": ns, "key": f"batch/{tag}/{i}", "value": value,
              "text": serde_compact(value), "tags": ["note"], "stored_at": f"2026-06-03T00:00:{i % 60:02d}.000000000+00:00"}
        out.append(serde_compact(ev) + "\n")
    return "".join(out).encode()


def wait_cache_written(project: Path, env: dict | None, timeout: float = 600) -> bool:
    """Until the project's state cache holds every namespace with its recall index."""
    from harn_ls.cache.store import ProjectCache

    env = env if env is not None else dict(os.environ)
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        info = ProjectCache(str(project), env).info()
        ns = info["namespaces"]
        if info["valid"] and ns and all(e["index"] for e in ns.values()):
            return True
        time.sleep(0.25)
    return False


def median_start(starts: list[dict]) -> dict:
    """Several `server_startup` results as one: the median of each time, the peak RSS's largest, every sample kept."""
    return {"status_s": statistics.median(s["status_s"] for s in starts),
            "recall_ready_s": statistics.median(s["recall_ready_s"] for s in starts),
            "peak_rss_kb": max(s["peak_rss_kb"] for s in starts), "n": len(starts),
            "samples_recall_ready_s": [s["recall_ready_s"] for s in starts]}


def server_startup(project: Path, env: dict) -> dict:
    """Server start -> first harn/status (project loaded) -> recallReady, seconds."""
    c = Client(project, env)
    uri_root = project.as_uri()
    try:
        t0 = time.perf_counter()
        c.request("initialize", {"processId": os.getpid(), "rootUri": uri_root,
                                 "workspaceFolders": [{"uri": uri_root, "name": "bench"}], "capabilities": {}}, timeout=900)
        c.notify("initialized", {})
        if c.wait_note({"harn/status"}, 900) is None:
            raise RuntimeError("server never reported harn/status")
        status = time.perf_counter() - t0
        while True:
            note = c.wait_note({"harn/status"}, 900)
            if note is None:
                raise RuntimeError("server never reported recallReady")
            if note[1].get("params", {}).get("recallReady"):
                break
        ready = time.perf_counter() - t0
        wait_cache_written(project, env)
        rss = c.peak_rss_kb()
    finally:
        c.close()
    return {"status_s": status, "recall_ready_s": ready, "peak_rss_kb": rss}


def _append_lines(ns: str, n: int) -> list[bytes]:
    out = []
    for i in range(n):
        value = {"text": f"note {i} written while the editor watches", "confidence": 0.9, "source": "chat"}
        ev = {"type": "store", "id": f"bench-notify-{i:05d}", "namespace": ns, "key": f"notify/{i}", "value": value,
              "text": serde_compact(value), "tags": ["note"], "stored_at": f"2026-06-02T00:00:{i % 60:02d}.000000000+00:00"}
        out.append((serde_compact(ev) + "\n").encode())
    return out


# ----------------------------------------------------------------------------- main
def machine() -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "loadavg_at_start": os.getloadavg()}


# ----------------------------------------------------------------------------- event log (issue 16)
def bench_wal_append(repeats: int = 30, background_events: int = 20_000) -> dict:
    """Live update latency for a WAL append to `.harn/events.sqlite` written by another connection:
    (a) `Workspace.apply_changes([-wal])` until the new HITL request is derived, (b) the append committed ->
    the watcher's batch applied (debounce included). The log holds `background_events` other events."""
    from harn_ls.model.workspace import Workspace
    from harn_ls.watch.observer import StateWatcher
    from tests.helpers import event_log_writer as W

    tmp = Path(tempfile.mkdtemp(prefix="harn-bench-wal-"))
    root = tmp / "proj"
    (root / ".harn").mkdir(parents=True)
    (root / "harn.toml").write_text("[project]\n")
    db = root / ".harn" / "events.sqlite"
    conn = W.open_log(str(db))
    try:
        conn.execute("BEGIN")
        for i in range(background_events):  # bulk history (one transaction; the appends below are Harn-style)
            t = f"trigger.topic{i % 20}"
            conn.execute("INSERT OR IGNORE INTO topic_heads(topic, last_id) VALUES (?, 0)", (t,))
            conn.execute("UPDATE topic_heads SET last_id = last_id + 1 WHERE topic = ?", (t,))
            (eid,) = conn.execute("SELECT last_id FROM topic_heads WHERE topic = ?", (t,)).fetchone()
            conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?)", (t, eid, "k", b'{"i":%d}' % i, "{}", i))
        conn.execute("COMMIT")
        ws = Workspace.load(str(root))
        apply_ms, e2e_ms = [], []
        for n in range(repeats):
            rid = f"hitl_approval_bench-{n}"
            env = W.approval_request(rid)
            W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
            t0 = time.perf_counter()
            ws.apply_changes([str(db) + "-wal"])
            apply_ms.append((time.perf_counter() - t0) * 1000)
            assert ws.event_logs.request(rid) is not None, "apply did not see the appended request"
        done: queue.Queue[float] = queue.Queue()
        want = {"rid": ""}

        def on_batch(paths, rescan):
            ws.apply_changes(paths) if not rescan else ws.rescan()
            if want["rid"] and ws.event_logs.request(want["rid"]) is not None:
                done.put(time.perf_counter())

        watcher = StateWatcher(ws.paths, on_batch)
        watcher.start()
        try:
            time.sleep(0.5)
            for n in range(repeats):
                rid = want["rid"] = f"hitl_escalation_bench-{n}"
                env = {"request_id": rid, "kind": "escalation", "agent": "", "trace_id": "t",
                       "requested_at": "2026-05-04T09:00:00Z", "payload": {"role": "x", "reason": "y"}}
                t0 = time.perf_counter()
                W.append(conn, "hitl.escalations", "hitl.escalation_issued", env, {"request_id": rid})
                try:
                    e2e_ms.append((done.get(timeout=5) - t0) * 1000)
                except queue.Empty:
                    e2e_ms.append(5000.0)
                while not done.empty():
                    done.get_nowait()
                time.sleep(0.05)
        finally:
            watcher.stop()
    finally:
        conn.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"background_events": background_events, "apply_ms": pcts(apply_ms), "append_to_applied_ms": pcts(e2e_ms)}


def wal_rows(w: dict) -> list:
    a, e = w["apply_ms"], w["append_to_applied_ms"]
    n = f"{w['background_events']:,}"
    return [(f"WAL append -> Workspace.apply_changes (HITL derived, {n} events)", "ms p50/p95",
             (a["p50"], a["p95"], a["min"], a["max"]), ""),
            ("WAL append -> watcher batch applied (debounce incl.)", "ms p50/p95", (e["p50"], e["p95"], e["min"], e["max"]),
             "p95 <= 300 ms")]


def compile_bytecode() -> None:
    """Write harn_ls's .pyc files first, as `pip install` does for an installed package. This
    machine sets PYTHONDONTWRITEBYTECODE=1 and the checkout is an editable install, so without
    this every fresh process would compile ~100 modules from source (about 0.2 s of each
    whole-process row) — a cost no installed harn-ls pays."""
    import compileall

    compileall.compile_dir(str(HERE.parent / "harn_ls"), quiet=1)


def start_only(samples: int) -> int:
    """The one row `warm server start -> recall ready (100k)` without the rest of the bench."""
    compile_bytecode()
    bench_cache = Path(tempfile.mkdtemp(prefix="harn-bench-cache-"))
    large = ensure_generated("large")
    ns = json.loads((large / "bench-manifest.json").read_text())["busiest_namespace"]
    proj = scratch_copy(large, [f".harn/memory/{ns}/events.jsonl"])
    try:
        env = dict(os.environ, HARN_LS_CACHE_DIR=str(bench_cache / "large"))
        env.pop("HARN_LS_CACHE", None)
        server_startup(proj, env)  # cold: fills the cache
        warm = median_start([server_startup(proj, env) for _ in range(samples)])
    finally:
        shutil.rmtree(proj.parent, ignore_errors=True)
        shutil.rmtree(bench_cache, ignore_errors=True)
    print(json.dumps(warm))
    print(f"warm server start -> recall ready (100k): median {warm['recall_ready_s']:.3f} s of {samples} "
          f"(samples {', '.join(f'{s:.3f}' for s in warm['samples_recall_ready_s'])}); "
          f"-> first status {warm['status_s']:.3f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (for a smoke run)")
    ap.add_argument("--no-huge", action="store_true", help="skip the 1M-event project")
    ap.add_argument("--huge-only", action="store_true", help="only the 1M-event project (results-huge.json)")
    ap.add_argument("--wal-only", action="store_true", help="only the event-log live-update rows")
    ap.add_argument("--start-only", type=int, metavar="N", default=0,
                    help="only the warm server start -> recall ready at 100k, N warm samples (median printed)")
    args = ap.parse_args(argv)
    if args.start_only:
        return start_only(args.start_only)
    if args.wal_only:
        w = bench_wal_append(10 if args.quick else 30)
        for label, unit, val, budget in wal_rows(w):
            print(f"{label:<62} {unit:<11} p50 {_f(val[0]):>8} p95 {_f(val[1]):>8}  {budget}")
        return 0
    started = time.perf_counter()
    compile_bytecode()
    # every state cache of this run goes to a scratch folder, never into ~/.cache
    bench_cache = Path(tempfile.mkdtemp(prefix="harn-bench-cache-"))
    os.environ["HARN_LS_CACHE_DIR"] = str(bench_cache / "default")
    os.environ.pop("HARN_LS_CACHE", None)
    if args.huge_only:
        h = bench_huge(bench_cache, args.quick)
        shutil.rmtree(bench_cache, ignore_errors=True)
        (HERE / "results-huge.json").write_text(json.dumps(h, indent=1) + "\n")
        print(huge_table(h))
        return 0
    before = previous_verdict(HERE / "results.json")
    rep = 2 if args.quick else 3
    large, small = ensure_generated("large"), ensure_generated("small")
    manifest = json.loads((large / "bench-manifest.json").read_text())
    ns = manifest["busiest_namespace"]
    ns_rel = f".harn/memory/{ns}/events.jsonl"
    results: dict = {"machine": machine(), "budgets": BUDGETS, "project": manifest,
                     "disk_bytes": {"large": disk_bytes(large), "small": disk_bytes(small)}}

    print("cold load ...", flush=True)
    results["cold_load"] = {"large": bench_cold(large, rep), "small": bench_cold(small, 5)}

    from harn_ls.model.workspace import Workspace

    print("load with progress watched / without (in process) ...", flush=True)
    results["progress_overhead"] = progress_bench.bench_progress_overhead(large, 4 if args.quick else 8)

    print("incremental + recall (in process) ...", flush=True)
    inc = {}
    ws_large = None
    for size, src in (("small", small), ("large", large)):
        proj = scratch_copy(src, [ns_rel])
        ws = Workspace.load(str(proj))
        _ = ws.recall  # as in the server (it builds the index right after loading): appends also index
        settle_gc()
        events_before = sum(s.event_count for s in ws.memory.values())  # the project's size, before the appends
        batches, deferred = bench_incremental(ws, proj / ns_rel, ns, 20 if args.quick else 50,
                                              recall_queries(manifest["seed"] + 1, 50))
        inc[size] = {"events": events_before, "batches": batches, **deferred}
        if size == "large":
            ws_large = ws
            results["recall"] = bench_recall_ws(ws, manifest["seed"], 100 if args.quick else 200, 10 if args.quick else 20)
        shutil.rmtree(proj.parent, ignore_errors=True)
    inc["ratio_large_small"] = {k: inc["large"]["batches"][k]["p50"] / inc["small"]["batches"][k]["p50"]
                                for k in ("1", "10", "100")}
    results["incremental"] = inc

    rel, ranges = busiest_source(ws_large)
    big_run = max(ws_large.runs.values(), key=lambda r: r.size or 0)
    big_tr = big_run.transcripts[0].id
    results["busiest_source"] = {"path": rel, "facts": len(ws_large.facts_by_file[rel]), "ranges": len(ranges)}
    results["big_transcript"] = {"run": big_run.id, "transcript": big_tr, "run_record_bytes": big_run.size}
    del ws_large, ws
    gc.unfreeze()
    gc.collect()

    print("server over stdio ...", flush=True)
    proj = scratch_copy(large, [ns_rel])
    try:
        results["server"] = bench_server(proj, proj / ns_rel, ns, rel, ranges, big_tr, big_run.id,
                                         100 if args.quick else 300, 10 if args.quick else 30)
    finally:
        shutil.rmtree(proj.parent, ignore_errors=True)
    print("first hover / code lens after a server start (100k) ...", flush=True)
    proj = scratch_copy(large, [])
    try:
        env = dict(os.environ, HARN_LS_CACHE_DIR=str(bench_cache / "first"))
        results["first_after_start"] = first_bench.bench_first_after_start(Client, proj, rel, ranges, env, rep)
    finally:
        shutil.rmtree(proj.parent, ignore_errors=True)
    print("whole-process CLI and server start (100k) ...", flush=True)
    proj = scratch_copy(large, [ns_rel])
    try:
        env = dict(os.environ, HARN_LS_CACHE_DIR=str(bench_cache / "large"))
        cold_start = server_startup(proj, env)  # empty cache: reads the logs, then writes the cache
        # a warm start is about a second: one sample is at the mercy of the machine's hour, so the median of three
        warm_start = median_start([server_startup(proj, env) for _ in range(1 if args.quick else 3)])
        results["server_start"] = {"large": {"cold": cold_start, "warm": warm_start}}
        results["cli"] = {"large": cli_bench.bench_cli(proj, proj / ns_rel, lambda n, tag: batch_lines(ns, n, tag),
                                                       rep, 1 if args.quick else 2, ns=ns)}
    finally:
        shutil.rmtree(proj.parent, ignore_errors=True)
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")  # the 100k rows, kept if 1M fails
    if not args.no_huge:
        results["huge"] = bench_huge(bench_cache, args.quick)
    if not args.quick:
        # Issue 3's table: the index alone at 1k / 10k / 100k records vs rank-bm25.
        print("recall index by size (bench_recall) ...", flush=True)
        results["recall_by_size"] = bench_recall.run()["recall"]
    shutil.rmtree(bench_cache, ignore_errors=True)
    print("event log WAL append (live update) ...", flush=True)
    results["wal_append"] = bench_wal_append(10 if args.quick else 30)
    results["runtime_s"] = time.perf_counter() - started
    results["verdict"] = verdict(results)
    results["verdict_before"] = before
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print()
    print(table(results))
    return 0


def bench_huge(bench_cache: Path, quick: bool) -> dict:
    """The 1M-event project: warm CLI, the cold run that fills the cache, server start on a warm cache,
    hover / code lens right after append batches, apply p95 and recall p50/p95 in process, peak RSS."""
    from harn_ls.model.workspace import Workspace

    huge = ensure_generated("huge")
    man = json.loads((huge / "bench-manifest.json").read_text())
    ns = man["busiest_namespace"]
    rel_log = f".harn/memory/{ns}/events.jsonl"
    out: dict = {"project": man, "disk_bytes": disk_bytes(huge)}
    proj = scratch_copy(huge, [rel_log])
    cache = bench_cache / "huge"
    env = dict(os.environ, HARN_LS_CACHE_DIR=str(cache))
    try:
        print("1M: whole-process CLI ...", flush=True)
        out["cli"] = cli_bench.bench_cli(proj, proj / rel_log, lambda n, tag: batch_lines(ns, n, tag),
                                         2 if quick else 3, 0, cache=cache, ns=ns)
        print("1M: server start on a warm cache ...", flush=True)
        # the last CLI run left the cache valid but for its own appended batch: write it back once more
        subprocess.run([sys.executable, "-m", "harn_ls", "recall", str(proj), "warm", "-k", "1"], env=env,
                       stdout=subprocess.DEVNULL, check=True)
        out["server_start_warm"] = server_startup(proj, env)
        print("1M: in-process apply and recall ...", flush=True)
        os.environ["HARN_LS_CACHE_DIR"] = str(cache)
        t = time.perf_counter()
        ws = Workspace.load(str(proj), cache=True)
        _ = ws.recall  # the index restored from the cache
        out["inprocess_warm_load_with_index_s"] = time.perf_counter() - t
        # A server settles a cache-restored index once recall is ready (lsp/project.py
        # settle_recall): every record decoded, each namespace's term dict built. The rows below
        # are measured from that state, as a server's would be; the first recall before it (term
        # lists scanned, then the dicts built) is reported on its own.
        t = time.perf_counter()
        ws.recall.recall(recall_queries(man["seed"] + 2, 1)[0], k=10)
        out["first_recall_before_settle_ms"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        for step in ws.recall_settle_steps():
            while not step():
                pass
        out["inprocess_settle_s"] = time.perf_counter() - t
        settle_gc()
        out["apply"], out["apply_deferred"] = bench_incremental(ws, proj / rel_log, ns, 10 if quick else 20,
                                                                recall_queries(man["seed"] + 1, 50))
        out["recall"] = bench_recall_ws(ws, man["seed"], 50 if quick else 200, 5 if quick else 10)
        rel, ranges = busiest_source(ws)
        del ws
        gc.unfreeze()
        gc.collect()
        print("1M: server hover / code lens after append batches ...", flush=True)
        subprocess.run([sys.executable, "-m", "harn_ls", "recall", str(proj), "warm", "-k", "1"], env=env,
                       stdout=subprocess.DEVNULL, check=True)
        out["server"] = bench_server(proj, proj / rel_log, ns, rel, ranges, "", "", 50 if quick else 100,
                                     10 if quick else 20, env=env, docs=False)
        print("1M: first hover / code lens after a server start ...", flush=True)
        out["first_after_start"] = first_bench.bench_first_after_start(Client, proj, rel, ranges, env, 2 if quick else 3)
    finally:
        shutil.rmtree(proj.parent, ignore_errors=True)
    return out


def huge_table(h: dict) -> str:
    out = [f"1M-event project: {h['project']['events']:,} events, memory logs {h['disk_bytes']['memory_logs'] / 1e6:.0f} MB"]
    for label, _u, v, budget, _how in cli_bench.rows("1M", h["cli"]):
        w = v["wall"]
        out.append(f"{label:<62} {_f(w['median']):>8} {_f(w['min']):>7} {_f(w['max']):>7} {_f(v['cpu']['median']):>7} "
                   f"{v['rss_mb']['median']:>7.0f}  {budget}")
    ss = h.get("server_start_warm", {})
    if ss:
        out.append(f"server start -> status {ss['status_s']:.3g} s, -> recall ready {ss['recall_ready_s']:.3g} s (warm cache)")
    if "inprocess_warm_load_with_index_s" in h:
        out.append(f"in-process warm load + recall index: {h['inprocess_warm_load_with_index_s']:.3g} s")
    if "inprocess_settle_s" in h:
        out.append(f"in-process: first recall before the settle {h['first_recall_before_settle_ms']:.3g} ms; "
                   f"the settle a server does after recallReady (records decoded, term dicts built) "
                   f"{h['inprocess_settle_s']:.3g} s")
    for k, v in h.get("apply", {}).items():
        out.append(f"apply {k:>3} events: p50 {v['p50']:.3g} ms p95 {v['p95']:.3g} ms (n {v['n']}; "
                   f"longest collector pass {v.get('gc_max_ms', 0):.3g} ms)")
        for slow in v.get("slow_samples", []):
            out.append(f"  a sample over {2 * APPLY_SLOW_MS:g} ms: {slow['wall_ms']:.3g} ms wall, "
                       f"{slow['thread_cpu_ms']:.3g} ms on the CPU, {slow['gc_ms']:.3g} ms collecting, "
                       f"{slow['steal_ticks']} ticks of CPU steal")
    for label, _unit, v, _ in deferred_rows(h.get("apply_deferred", {}), "1M", ""):
        out.append(f"{label}: p50 {v[0]:.3g} ms p95 {v[1]:.3g} ms")
    rc = h.get("recall", {})
    if rc:
        v = rc["all_namespaces_ms"]
        out.append(f"recall top-10 all namespaces ({rc['records']:,} records): p50 {v['p50']:.3g} ms p95 {v['p95']:.3g} ms")
        if "rank_bm25_busiest_namespace_ms" in rc:
            v = rc["rank_bm25_busiest_namespace_ms"]
            out.append(f"rank-bm25 same queries, {rc['busiest_namespace']}: p50 {v['p50']:.3g} ms p95 {v['p95']:.3g} ms")
        v = rc["busiest_namespace_ms"]
        out.append(f"harn-ls same queries, {rc['busiest_namespace']}: p50 {v['p50']:.3g} ms p95 {v['p95']:.3g} ms")
    hs = h.get("server", {})
    for key in ("hover_ms", "code_lens_ms", "hover_after_append_ms", "code_lens_after_append_ms"):
        if key in hs:
            out.append(f"{key}: p50 {hs[key]['p50']:.3g} p95 {hs[key]['p95']:.3g}")
    for label, _u, v, _b in first_bench.rows("1M", h["first_after_start"]) if "first_after_start" in h else ():
        out.append(f"{label}: median {v['median']:.3g} ms [{v['min']:.3g}-{v['max']:.3g}]")
    if "append_to_notification_ms" in hs:
        a = hs["append_to_notification_ms"]
        out.append(f"append batch -> client notified: first batch after start {a['first']:.4g} ms, "
                   f"then p50 {a['rest']['p50']:.3g} p95 {a['rest']['p95']:.3g} ms")
    if "server_peak_rss_kb" in hs:
        mem = h["disk_bytes"]["memory_logs"]
        out.append(f"server peak RSS {hs['server_peak_rss_kb'] / 1024:.0f} MB = {hs['server_peak_rss_kb'] * 1024 / mem:.2f}x "
                   f"of the memory logs ({mem / 1e6:.0f} MB)")
    out.append(f"load average now: {os.getloadavg()}")
    return "\n".join(out)


def deferred_rows(d: dict, at: str, recall_budget: str) -> list[tuple]:
    """Table rows of the recall-index work an apply leaves queued (see bench_incremental)."""
    rows = []
    if "index_update_ms" in d:
        v = d["index_update_ms"]["100"]
        rows.append((f"index update of a 100-event batch, deferred, at {at}", "ms p50/p95",
                     (v["p50"], v["p95"], v["min"], v["max"]), "(server: when quiet)"))
    if "first_recall_after_100_ms" in d:
        v = d["first_recall_after_100_ms"]
        rows.append((f"first recall top-10 after a 100-event batch, at {at}", "ms p50/p95",
                     (v["p50"], v["p95"], v["min"], v["max"]), recall_budget))
    return rows


def verdict(r: dict) -> dict:
    cold = r["cold_load"]["large"]
    inc = r["incremental"]
    srv = r["server"]
    worst_apply = max(inc["large"]["batches"][k]["p50"] for k in ("1", "10", "100"))
    worst_ratio = max(inc["ratio_large_small"].values())
    logs = r["disk_bytes"]["large"]["total"]
    rss_ratio = srv["server_peak_rss_kb"] * 1024 / logs
    rss_ratio_memory_logs = srv["server_peak_rss_kb"] * 1024 / r["disk_bytes"]["large"]["memory_logs"]
    worst_apply_p95_small = max(inc["small"]["batches"][k]["p95"] for k in ("1", "10", "100"))
    checks = {
        "cold load / bare orjson": (cold["ratio"]["median"], BUDGETS["load_ratio"]),
        "apply <=100 events, ms (worst p50 at 100k)": (worst_apply, BUDGETS["apply_ms"]),
        "apply 100k/1k ratio (worst)": (worst_ratio, BUDGETS["apply_ratio"]),
        "hover p95 ms": (srv["hover_ms"]["p95"], BUDGETS["hover_p95_ms"]),
        "code lens p95 ms": (srv["code_lens_ms"]["p95"], BUDGETS["lens_p95_ms"]),
        "code lens resolve p95 ms": (srv["code_lens_resolve_ms"]["p95"], BUDGETS["lens_p95_ms"]),
        "recall top-10 p95 ms": (r["recall"]["all_namespaces_ms"]["p95"], BUDGETS["recall_p95_ms"]),
        "file written -> notified p95 ms": (srv["notify_ms"]["p95"], BUDGETS["notify_p95_ms"]),
        "largest response bytes": (srv["largest_message_bytes"], BUDGETS["largest_response_bytes"]),
        "server peak RSS / on-disk bytes (all state files)": (rss_ratio, BUDGETS["rss_ratio"]),
        "server peak RSS / on-disk bytes (memory logs only)": (rss_ratio_memory_logs, BUDGETS["rss_ratio"]),
        # issue 32 asks for 2x of the memory logs where design.md allows 3x: both judged, each by name
        "server peak RSS / memory-log bytes (issue 32)": (rss_ratio_memory_logs, 2.0),
        "apply <=100 events, ms (worst p95 at 1k)": (worst_apply_p95_small, BUDGETS["apply_ms"]),
    }
    cli = r.get("cli", {}).get("large")
    if cli:
        base = cli["orjson"]["wall"]["median"]
        if "inspect_cold" in cli:
            checks["100k inspect --json cold / orjson parse (wall)"] = (cli["inspect_cold"]["wall"]["median"] / base, 2.0)
            if "orjson_all" in cli:  # issue 32's second baseline: a parse of every file inspect reads
                checks["100k inspect --json cold / orjson parse of all files inspect reads (wall)"] = (
                    cli["inspect_cold"]["wall"]["median"] / cli["orjson_all"]["wall"]["median"], 2.0)
        checks["100k inspect --json warm / orjson parse (wall)"] = (cli["inspect_warm"]["wall"]["median"] / base, 0.6)
        checks["100k recall --json warm / orjson parse (wall)"] = (cli["recall_warm"]["wall"]["median"] / base, 1.0)
    po = r.get("progress_overhead")
    if po:
        checks["100k load with progress watched / without (load thread CPU)"] = (po["ratio"]["median"], 1.02)
    ss = r.get("server_start", {}).get("large")
    if ss:
        checks["100k server start -> recall ready, warm cache (s)"] = (ss["warm"]["recall_ready_s"], 1.0)
        checks["100k server start -> recall ready, cold cache (s)"] = (ss["cold"]["recall_ready_s"], 2.0)  # issue 32
    if "hover_after_append_ms" in srv:
        checks["hover p95 right after an append batch (ms)"] = (srv["hover_after_append_ms"]["p95"], BUDGETS["hover_p95_ms"])
        checks["code lens p95 right after an append batch (ms)"] = (srv["code_lens_after_append_ms"]["p95"],
                                                                    BUDGETS["lens_p95_ms"])
    h = r.get("huge")
    if h:
        if "recall" in h:
            checks["1M recall top-10 p95 ms"] = (h["recall"]["all_namespaces_ms"]["p95"], BUDGETS["recall_p95_ms"])
        if "apply" in h:
            checks["1M apply 100 events p95 ms"] = (h["apply"]["100"]["p95"], BUDGETS["apply_ms"])
        if "apply_deferred" in h:
            checks["1M first recall after a 100-event batch p95 ms"] = (
                h["apply_deferred"]["first_recall_after_100_ms"]["p95"], BUDGETS["recall_p95_ms"])
        hs = h.get("server", {})
        for key, label in (("hover_after_append_ms", "1M hover p95 right after an append batch (ms)"),
                           ("code_lens_after_append_ms", "1M code lens p95 right after an append batch (ms)")):
            if key in hs:
                checks[label] = (hs[key]["p95"], BUDGETS["hover_p95_ms"])
        if "server_peak_rss_kb" in hs:
            checks["1M server peak RSS / memory-log bytes"] = (hs["server_peak_rss_kb"] * 1024 / h["disk_bytes"]["memory_logs"],
                                                             BUDGETS["rss_ratio"])
        hc = h.get("cli")
        if hc:
            base = hc["orjson"]["wall"]["median"]
            checks["1M inspect --json warm / orjson parse (wall)"] = (hc["inspect_warm"]["wall"]["median"] / base, 0.6)
            checks["1M recall --json warm / orjson parse (wall)"] = (hc["recall_warm"]["wall"]["median"] / base, 1.0)
    return {k: {"value": v, "budget": b, "met": v <= b} for k, (v, b) in checks.items()}


def previous_verdict(path: Path) -> dict:
    """The last run's judged values by budget name (from the results.json this run will replace): what
    the table prints as "before". Empty when there is none or it cannot be read."""
    try:
        old = json.loads(path.read_text())
        return {k: v["value"] for k, v in old.get("verdict", {}).items() if isinstance(v.get("value"), (int, float))}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def budget_lines(judged: dict, before: dict) -> list[str]:
    """MET / MISS per budget, with the value of the run before (`previous_verdict`) when there was one."""
    lines = ["budgets (before = the run whose bench/results.json this one replaced):"] if before else []
    for k, v in judged.items():
        was = f"; before {_f_against(before[k], v['budget'])}" if k in before else ("; new row" if before else "")
        lines.append(f"{'MET ' if v['met'] else 'MISS'} {k}: {_f_against(v['value'], v['budget'])} "
                     f"(budget {_f(v['budget'])}{was})")
    return lines


def _f(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"


def _f_against(v: float, budget: float) -> str:
    """`_f(v)`, with more digits when those would print it equal to a budget it is judged against
    (1.0025 s against 1 s: "1.003", not "1")."""
    for digits in (3, 4, 5, 6):
        text = f"{v:.{digits}g}" if abs(v) < 100 else f"{v:,.0f}"
        if v == budget or float(text.replace(",", "")) != budget:
            return text
    return repr(v)


def table(r: dict) -> str:
    rows = []
    cold = r["cold_load"]
    for size in ("small", "large"):
        c = cold[size]
        rows.append((f"cold Workspace.load ({size}, {c['lines']} lines)", "s", c["load_s"], ""))
        rows.append((f"bare orjson parse of the JSONL ({size})", "s", c["bare_orjson_s"], ""))
        rows.append((f"load / orjson ratio ({size})", "x", c["ratio"], "<= 2x" if size == "large" else ""))
        rows.append((f"load + recall index build ({size})", "s", c["load_with_recall_index_s"], ""))
        rows.append((f"(load + recall index) / orjson ({size})", "x", c["ratio_with_recall_index"], ""))
    for size in ("small", "large"):
        inc = r["incremental"][size]
        for k, v in inc["batches"].items():
            rows.append((f"apply {k:>3} appended events at {inc['events']:,} events", "ms p50/p95",
                         (v["p50"], v["p95"], v["min"], v["max"]), "<= 5 ms" if size == "large" else ""))
    for size in ("small", "large"):
        inc = r["incremental"][size]
        rows += deferred_rows(inc, f"{inc['events']:,} events", "")
    for k, v in r["incremental"]["ratio_large_small"].items():
        rows.append((f"apply {k} events: 100k / 1k (p50)", "x", v, "<= 1.5x"))
    srv = r["server"]
    bs = r["busiest_source"]
    if "server_load_s" in srv:
        rows.append(("server start -> first harn/status (project loaded)", "s", srv["server_load_s"], ""))
    if "server_ready_s" in srv:
        rows.append(("server start -> recall index ready (built in steps)", "s", srv["server_ready_s"], ""))
    for key, label in (("hover_ms", f"hover over stdio ({bs['facts']} facts on file)"),
                       ("code_lens_ms", f"codeLens over stdio ({srv['code_lens_count']} lenses)"),
                       ("code_lens_resolve_ms", "codeLens/resolve over stdio")):
        v = srv[key]
        rows.append((label, "ms p50/p95", (v["p50"], v["p95"], v["min"], v["max"]), "p95 <= 10 ms"))
    rc = r["recall"]
    v = rc["all_namespaces_ms"]
    rows.append((f"recall top-10, all namespaces ({rc['records']:,} records)", "ms p50/p95",
                 (v["p50"], v["p95"], v["min"], v["max"]), "<= 20 ms"))
    v = rc["busiest_namespace_ms"]
    rows.append((f"recall top-10, {rc['busiest_namespace']} ({rc['busiest_records']:,})", "ms p50/p95",
                 (v["p50"], v["p95"], v["min"], v["max"]), ""))
    if "rank_bm25_busiest_namespace_ms" in rc:
        v = rc["busiest_namespace_bm25_queries_ms"]
        rows.append((f"recall top-10, {rc['busiest_namespace']}, the {v['n']} rank-bm25 queries", "ms p50/p95",
                     (v["p50"], v["p95"], v["min"], v["max"]), ""))
        v = rc["rank_bm25_busiest_namespace_ms"]
        rows.append((f"rank-bm25 get_scores+top10, same namespace, same {v['n']} queries", "ms p50/p95",
                     (v["p50"], v["p95"], v["min"], v["max"]), "(reference)"))
    v = srv["notify_ms"]
    rows.append(("file written -> harn/treeChanged at client", "ms p50/p95", (v["p50"], v["p95"], v["min"], v["max"]),
                 "p95 <= 300 ms"))
    d = srv["documents"]
    rows.append(("open 10 MB transcript (textDocumentContent)", "bytes", d["transcript"]["bytes"], "<= 1 MB"))
    for name in ("transcript", "run"):
        if "again_ms" in d[name]:
            rows.append((f"{name} page of the 10 MB record: first open", "ms", d[name]["ms"], ""))
            rows.append((f"{name} page of the 10 MB record: opened again, unchanged", "ms", d[name]["again_ms"], ""))
    rows.append(("largest response of the whole session", "bytes", srv["largest_message_bytes"], "<= 1 MB"))
    logs = r["disk_bytes"]["large"]
    rows.append((f"server peak RSS (on-disk {logs['total'] / 1e6:.0f} MB: logs {logs['memory_logs'] / 1e6:.0f} + "
                 f"runs {logs['run_records'] / 1e6:.0f})", "MB", srv["server_peak_rss_kb"] / 1024,
                 f"{srv['server_peak_rss_kb'] * 1024 / logs['total']:.2f}x (<= 3x)"))
    if "server" in r and "hover_after_append_ms" in srv:
        for key, label in (("hover_after_append_ms", "hover right after a 100-event append batch"),
                           ("code_lens_after_append_ms", "codeLens right after a 100-event append batch")):
            v = srv[key]
            rows.append((label, "ms p50/p95", (v["p50"], v["p95"], v["min"], v["max"]), "p95 <= 10 ms"))
    if "first_after_start" in r:
        rows.extend(first_bench.rows("100k", r["first_after_start"]))
    ss = r.get("server_start", {}).get("large")
    if ss:
        for kind in ("cold", "warm"):
            rows.append((f"server start -> first harn/status, {kind} cache (100k)", "s", ss[kind]["status_s"], ""))
            n = f", median of {ss[kind]['n']}" if ss[kind].get("n", 1) > 1 else ""
            rows.append((f"server start -> recall ready, {kind} cache (100k{n})", "s", ss[kind]["recall_ready_s"],
                         "<= 1 s" if kind == "warm" else ""))
    h = r.get("huge")
    if h:
        ev = h["project"]["events"]
        if "server_start_warm" in h:
            rows.append((f"server start -> first harn/status, warm cache ({ev:,})", "s", h["server_start_warm"]["status_s"], ""))
            rows.append((f"server start -> recall ready, warm cache ({ev:,})", "s", h["server_start_warm"]["recall_ready_s"], ""))
        if "apply" in h:
            v = h["apply"]["100"]
            rows.append((f"apply 100 appended events at {ev:,} events", "ms p50/p95",
                         (v["p50"], v["p95"], v["min"], v["max"]), "<= 5 ms"))
        if "apply_deferred" in h:
            rows += deferred_rows(h["apply_deferred"], f"{ev:,} events", "p95 <= 20 ms")
        if "recall" in h:
            v = h["recall"]["all_namespaces_ms"]
            rows.append((f"recall top-10, all namespaces ({h['recall']['records']:,} records)", "ms p50/p95",
                         (v["p50"], v["p95"], v["min"], v["max"]), "<= 20 ms"))
            if "rank_bm25_busiest_namespace_ms" in h["recall"]:
                v = h["recall"]["rank_bm25_busiest_namespace_ms"]
                rows.append((f"rank-bm25 get_scores+top10, {h['recall']['busiest_namespace']} ({ev:,})", "ms p50/p95",
                             (v["p50"], v["p95"], v["min"], v["max"]), "(reference)"))
        hs = h.get("server", {})
        for key, label in (("hover_ms", f"hover over stdio ({ev:,})"), ("code_lens_ms", f"codeLens over stdio ({ev:,})"),
                           ("hover_after_append_ms", f"hover right after a 100-event append batch ({ev:,})"),
                           ("code_lens_after_append_ms", f"codeLens right after a 100-event append batch ({ev:,})")):
            if key in hs:
                v = hs[key]
                rows.append((label, "ms p50/p95", (v["p50"], v["p95"], v["min"], v["max"]), "p95 <= 10 ms"))
        if "first_after_start" in h:
            rows.extend(first_bench.rows(f"{ev:,}", h["first_after_start"]))
        if "server_peak_rss_kb" in hs:
            mem = h["disk_bytes"]["memory_logs"]
            rows.append((f"server peak RSS ({ev:,}; memory logs {mem / 1e6:.0f} MB)", "MB", hs["server_peak_rss_kb"] / 1024,
                         f"{hs['server_peak_rss_kb'] * 1024 / mem:.2f}x of memory logs (<= 3x)"))
    if "wal_append" in r:
        rows.extend(wal_rows(r["wal_append"]))
    lines = [f"{'measure':<62} {'unit':<11} {'median / p50':>12} {'min':>9} {'max':>9} {'p95':>9}  budget"]
    for label, unit, val, budget in rows:
        if isinstance(val, dict):
            cols = (_f(val["median"]), _f(val["min"]), _f(val["max"]), "")
        elif isinstance(val, tuple):
            cols = (_f(val[0]), _f(val[2]), _f(val[3]), _f(val[1]))
        else:
            cols = (_f(val), "", "", "")
        lines.append(f"{label:<62} {unit:<11} {cols[0]:>12} {cols[1]:>9} {cols[2]:>9} {cols[3]:>9}  {budget}")
    lines.append("")
    lines.append("whole process (fresh `python -m harn_ls ...` each run; wall s median [min-max], cpu s = user+sys of the child)")
    lines.append(f"{'measure':<62} {'wall s':>8} {'[min':>7} {'max]':>7} {'cpu s':>7} {'RSS MB':>7}  vs orjson parse")
    for size, res in (("100k", r.get("cli", {}).get("large")), ("1M", (r.get("huge") or {}).get("cli"))):
        if not res:
            continue
        for label, _unit, v, budget, _how in cli_bench.rows(size, res):
            w = v["wall"]
            lines.append(f"{label:<62} {_f(w['median']):>8} {_f(w['min']):>7} {_f(w['max']):>7} "
                         f"{_f(v['cpu']['median']):>7} {v['rss_mb']['median']:>7.0f}  {budget}")
    lines.append("")
    lines += budget_lines(r["verdict"], r.get("verdict_before") or {})
    m = r["machine"]
    lines.append(f"\nmachine: {m['nproc']} cores, {m['cpu']}, Python {m['python']}; bench runtime {r['runtime_s']:.0f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
