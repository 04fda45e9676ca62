"""Issue 32, item 1: the prototype, measured before any adoption.

    python bench/msgspec_prototype.py PROJECT [--runs N]

Three ways of turning a project's memory logs into the projected records (the active stores by
sequence, ids, tombstones, the namespace's open config), each in a child process of its own so that
its peak RSS is its own, interleaved over N rounds; the median of each is printed:

- `orjson`   the floor: `orjson.loads` of every line into dicts, nothing kept beyond the list;
- `today`    harn-ls's read pipeline (JsonlTail + MemoryNamespace.apply_lines: orjson dicts,
             validated in Python, copied into MemoryRecord, interned and shared);
- `msgspec`  the design issue 32 proposes: a typed decoder written in C (msgspec) decodes, validates
             and builds each event in one step into `gc=False` Structs, a tagged union on `type`,
             values kept as `msgspec.Raw` (they are only shown), then the same projection in Python.
             A line the typed decoder refuses goes to orjson and the detailed validator for its
             message, as today (counted, not timed separately).

It needs `pip install msgspec` (not a dependency of harn-ls: the decision is what this measures).
"""



import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def memory_logs(root: Path) -> list[Path]:
    return sorted((root / ".harn" / "memory").rglob("events.jsonl"))


# ----------------------------------------------------------------------------------- the three ways
def way_orjson(logs: list[Path]) -> dict:
    import orjson

    n = 0
    for path in logs:
        values = [orjson.loads(line) for line in path.read_bytes().splitlines() if line]
        n += len(values)
    return {"events": n}


def way_today(logs: list[Path]) -> dict:
    from harn_ls.formats.jsonl import JsonlTail
    from harn_ls.formats.memory import MemoryNamespace

    kept, records = [], 0
    for path in logs:
        space = MemoryNamespace(path.parent.name, str(path))
        tail = JsonlTail(str(path))
        for batch in tail.iter_batches():
            if batch.lines:
                space.apply_lines(batch.lines)
        records += len(space.active)
        kept.append(space)
    return {"records": records}


def way_msgspec(logs: list[Path]) -> dict:
    import msgspec
    import orjson

    class Store(msgspec.Struct, tag_field="type", tag="store", gc=False):
        id: str
        namespace: str
        key: str
        value: msgspec.Raw
        stored_at: str
        text: str = ""
        tags: list[str] = []
        provenance: msgspec.Raw = msgspec.Raw()
        status: str | None = None
        scope: str | None = None
        flags: dict = {}

    class Update(msgspec.Struct, tag_field="type", tag="update", gc=False):
        id: str
        value: msgspec.Raw = msgspec.Raw()
        text: str | None = None
        tags: list[str] | None = None
        status: str | None = None
        scope: str | None = None
        updated_at: str | None = None

    class Forget(msgspec.Struct, tag_field="type", tag="forget", gc=False):
        forgotten_ids: list[str] = []
        forgotten_at: str | None = None

    class Open(msgspec.Struct, tag_field="type", tag="open", gc=False):
        backend: str
        embed_model_hint: str | None = None
        embed_dim: int | None = None
        bm25_weight: float | None = None
        cosine_weight: float | None = None
        opened_at: str | None = None

    decode = msgspec.json.Decoder(Store | Update | Forget | Open).decode
    records, refused = 0, 0
    kept = []
    for path in logs:
        active: dict[int, object] = {}
        by_id: dict[str, int] = {}
        forgotten: set[str] = set()
        config = None
        seq = 0
        with open(path, "rb") as fh:  # line by line from a buffered file, as a tail reader reads in chunks
            for line in fh:
                if line == b"\n":
                    continue
                try:
                    event = decode(line)
                except msgspec.ValidationError:
                    refused += 1
                    orjson.loads(line)  # (the detailed validator's message would come from here)
                    continue
                kind = type(event)
                if kind is Store:
                    if event.id in forgotten:
                        continue
                    # a Raw points into the line it was decoded from: copied, the line itself is freed
                    event.value = event.value.copy()
                    if event.provenance:
                        event.provenance = event.provenance.copy()
                    active[seq] = event
                    by_id[event.id] = seq
                    seq += 1
                elif kind is Update:
                    old = by_id.get(event.id)
                    if old is not None:
                        rec = active[old]
                        changes = {f: getattr(event, f) for f in ("text", "tags", "status", "scope")
                                   if getattr(event, f) is not None}
                        if event.value:
                            changes["value"] = event.value.copy()
                        active[old] = msgspec.structs.replace(rec, **changes)
                elif kind is Forget:
                    for rid in event.forgotten_ids:
                        forgotten.add(rid)
                        s = by_id.pop(rid, None)
                        if s is not None:
                            active.pop(s, None)
                else:
                    config = event
        records += len(active)
        kept.append((active, by_id, forgotten, config))
    return {"records": records, "refused_lines": refused}


WAYS = {"orjson": way_orjson, "today": way_today, "msgspec": way_msgspec}


def child(way: str, root: str) -> None:
    import gc

    gc.disable()  # as the CLI does while it loads (cli._pause_collector)
    logs = memory_logs(Path(root))
    start = time.perf_counter()
    cpu = time.process_time()
    out = WAYS[way](logs)
    out.update(way=way, wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu,
               peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", choices=sorted(WAYS))
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.project)
        return 0
    logs = memory_logs(Path(args.project))
    size = sum(p.stat().st_size for p in logs)
    results: dict[str, list[dict]] = {w: [] for w in WAYS}
    for i in range(args.runs):
        order = list(WAYS) if i % 2 == 0 else list(reversed(WAYS))
        for way in order:
            proc = subprocess.run([sys.executable, __file__, args.project, "--child", way],
                                  capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
            results[way].append(json.loads(proc.stdout))
    base = statistics.median(r["cpu_s"] for r in results["orjson"])
    print(f"memory logs: {len(logs)} files, {size / 2**20:.1f} MiB; {args.runs} interleaved runs, medians")
    print(f"{'way':<10} {'wall s':>8} {'cpu s':>8} {'cpu / orjson':>13} {'peak RSS MiB':>13} {'RSS / log bytes':>16}  notes")
    summary = {}
    for way, runs in results.items():
        cpu = statistics.median(r["cpu_s"] for r in runs)
        wall = statistics.median(r["wall_s"] for r in runs)
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        notes = {k: v for k, v in runs[0].items() if k not in ("way", "wall_s", "cpu_s", "peak_rss_mb")}
        summary[way] = {"wall_s": wall, "cpu_s": cpu, "cpu_ratio": cpu / base, "peak_rss_mb": rss,
                        "rss_ratio": rss * 2**20 / size, **notes}
        print(f"{way:<10} {wall:>8.3f} {cpu:>8.3f} {cpu / base:>13.2f} {rss:>13.0f} {rss * 2**20 / size:>16.2f}  {notes}")
    (HERE / "results-msgspec-prototype.json").write_text(json.dumps({"log_bytes": size, "runs": args.runs,
                                                                        "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
