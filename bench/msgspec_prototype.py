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

- `today-bare` today's validation and records, fed line by line as the two below are (no JsonlTail);
- `struct-exact` / `struct-raw`  the record itself a `gc=False` Struct decoded from its line (item 2
             as it would be adopted, `_record_struct_way`): with today's verdicts kept for every line,
             the value parsed by orjson (exact), or kept as its JSON with a check for floats past f64.

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


def _record_struct_way(logs: list[Path], keep_value_raw: bool) -> dict:
    """The record *is* the decoded Struct (what item 2 would adopt), projected by today's
    MemoryNamespace, with the checks that keep today's verdicts (and Harn's): a line with an
    unknown field, a wrong type or anything msgspec refuses goes to orjson and today's
    field-by-field path; invalid UTF-8 is checked on the line (msgspec does not check the bytes it
    skips). `keep_value_raw`: an object or array value is kept as its JSON, unparsed; then a float
    past f64 in it (1E400, which orjson and serde_json refuse, msgspec skips) must be looked for
    first: a byte translation and three searches per line, the cheapest exact check found."""
    import msgspec
    import orjson

    from harn_ls.formats.memory import MemoryDelta, MemoryNamespace, add_seq
    from harn_ls.formats.memory_record import EMPTY_FLAGS, pack_json, shared_tags
    from harn_ls.util.shared_ints import shared

    no_raw = msgspec.Raw()

    class Record(msgspec.Struct, kw_only=True, gc=False, eq=False, forbid_unknown_fields=True,
                 tag_field="type", tag="store"):
        id: str
        namespace: str = ""
        key: str
        value: msgspec.Raw
        text: str = ""
        tags: tuple[str, ...] = ()
        stored_at: str
        seq: int = 0
        line_no: int = 0
        provenance: msgspec.Raw = no_raw
        status: str | None = None
        scope: str | None = None
        flags: msgspec.Raw = no_raw
        updated_at: str | None = None

        def with_changes(self, **changes):
            return msgspec.structs.replace(self, **{k: v for k, v in changes.items() if k != "provenance"})

    decode = msgspec.json.Decoder(Record).decode
    table = bytearray(b" " * 256)
    for c in b"0123456789":
        table[c] = ord("0")
    table[ord("e")] = table[ord("E")] = ord("e")
    table[ord("+")] = table[ord("-")] = ord("+")
    table = bytes(table)
    digits309 = b"0" * 309
    container = (ord("{"), ord("["))
    loads = orjson.loads

    def fast(raw: bytes):
        if not raw.startswith(b'{"type":"store"'):
            return None
        if not raw.isascii():
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        if keep_value_raw:
            t = raw.translate(table)
            if b"e000" in t or b"e+000" in t or digits309 in t:
                return None
        try:
            r = decode(raw)
            view = memoryview(r.value)
            if keep_value_raw and view[0] in container:
                r.value = view.tobytes()
            else:
                r.value = loads(view)
            r.provenance = None if r.provenance is no_raw else pack_json(loads(memoryview(r.provenance)))
            if r.flags is no_raw:
                r.flags = EMPTY_FLAGS
            else:
                flags = loads(memoryview(r.flags))
                if type(flags) is not dict:
                    return None
                r.flags = flags or EMPTY_FLAGS
        except (msgspec.DecodeError, orjson.JSONDecodeError, RecursionError):
            return None
        r.tags = shared_tags(r.tags)
        r.updated_at = None
        return r

    kept, records, slow = [], 0, 0
    for path in logs:
        space = MemoryNamespace(path.parent.name, str(path))
        delta = MemoryDelta()
        with open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):
                raw = line.rstrip(b"\n")
                r = fast(raw)
                if r is None:
                    slow += 1
                    try:
                        event = loads(raw)
                    except orjson.JSONDecodeError:
                        continue
                    space._apply_event(event, line_no, delta)
                    continue
                seq = space.seq
                space.seq = seq + 1
                space.event_count += 1
                r.namespace = space.namespace
                r.seq = seq = shared(seq)
                r.line_no = shared(line_no)
                space.last_event_at = r.stored_at
                if r.id in space.forgotten:
                    space.hidden.append(r)
                    continue
                space.active[seq] = r
                add_seq(space._by_id, r.id, seq)
                delta.added.append(r)
        records += len(space.active)
        kept.append(space)
    return {"records": records, "slow_lines": slow}


def way_today_bare(logs: list[Path]) -> dict:
    """Today's validation and records, fed line by line as the struct ways are (no JsonlTail, no
    density rule): what separates the decoder's share of the gap from the reader's."""
    import orjson

    from harn_ls.formats.memory import MemoryDelta, MemoryNamespace

    kept, records = [], 0
    for path in logs:
        space = MemoryNamespace(path.parent.name, str(path))
        delta = MemoryDelta()
        with open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                space._apply_event(event, line_no, delta)
        records += len(space.active)
        kept.append(space)
    return {"records": records}


def way_struct_exact(logs: list[Path]) -> dict:
    return _record_struct_way(logs, keep_value_raw=False)


def way_struct_raw(logs: list[Path]) -> dict:
    return _record_struct_way(logs, keep_value_raw=True)


WAYS = {"orjson": way_orjson, "today": way_today, "today-bare": way_today_bare, "msgspec": way_msgspec,
        "struct-exact": way_struct_exact, "struct-raw": way_struct_raw}


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
    print(f"{'way':<12} {'wall s':>8} {'cpu s':>8} {'cpu / orjson':>13} {'peak RSS MiB':>13} {'RSS / log bytes':>16}  notes")
    summary = {}
    for way, runs in results.items():
        cpu = statistics.median(r["cpu_s"] for r in runs)
        wall = statistics.median(r["wall_s"] for r in runs)
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        notes = {k: v for k, v in runs[0].items() if k not in ("way", "wall_s", "cpu_s", "peak_rss_mb")}
        summary[way] = {"wall_s": wall, "cpu_s": cpu, "cpu_ratio": cpu / base, "peak_rss_mb": rss,
                        "rss_ratio": rss * 2**20 / size, **notes}
        print(f"{way:<12} {wall:>8.3f} {cpu:>8.3f} {cpu / base:>13.2f} {rss:>13.0f} {rss * 2**20 / size:>16.2f}  {notes}")
    (HERE / "results-msgspec-prototype.json").write_text(json.dumps({"log_bytes": size, "runs": args.runs,
                                                                        "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
