"""Seeded generator of a large synthetic Harn project for `make bench`.

    python bench/generate.py OUT_DIR [--size large|small] [--seed N]

large (default): 100k memory events across namespaces (store / update /
forget / open), 10k facts with `file_range` evidence over 500 source files,
1k run records whose inline transcripts vary in length (one ~10 MB), 200
pending skill proposals, 50 checkpoint files. small: the same shape scaled
to 1k memory events (for scaling ratios).

Every memory event line is written the way Harn writes it: `serde_json`
compact text (`serde_compact`), fields in Harn's order (store: type, id,
namespace, key, value, text, tags, stored_at, then optional fields), one
event per line. Run records are pretty JSON, checkpoints sorted pretty JSON,
as in fixtures/generate.py (whose helpers are reused here).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def _load_fixtures():
    """fixtures/generate.py as a module (its name clashes with this file's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("harn_fixtures_generate", HERE.parent / "fixtures" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


fx = _load_fixtures()
from bench_recall import make_vocab  # noqa: E402

from harn_ls.formats.harn_json import serde_compact, stringify  # noqa: E402

SIZES = {
    # events: memory events in total (all namespaces, facts and pattern learning included)
    "large": dict(events=100_000, facts=10_000, sources=500, runs=1_000, proposals=200, checkpoints=50,
                  observations=1_500, big_transcript_bytes=10_000_000),
    # huge: the 1M-event project of `make bench` (about 1 GB of memory logs; fewer, smaller run records)
    "huge": dict(events=1_000_000, facts=20_000, sources=500, runs=200, proposals=200, checkpoints=50,
                 observations=1_500, big_transcript_bytes=2_000_000),
    "small": dict(events=1_000, facts=100, sources=20, runs=20, proposals=10, checkpoints=5,
                  observations=30, big_transcript_bytes=200_000),
}
DEFAULT_SEED = 20260511
BASE_MS = fx.ms("2026-03-01T00:00:00.000Z")
# (namespace, share of the plain memory events); the busiest one gets the appends in the benchmark
NAMESPACES = [
    ("agent/notes", 0.34),
    ("workspace/acme", 0.22),
    ("team/decisions", 0.14),
    ("agent/sessions/2026-05", 0.12),
    ("user/preferences", 0.08),
    ("research/vendors", 0.06),
    ("ops/incidents", 0.04),
]
BUSIEST_NAMESPACE = NAMESPACES[0][0]
TAGS = ["profile", "preference", "decision", "todo", "incident", "deploy", "review", "customer", "api", "bug",
        "plan", "note", "billing", "security", "oncall", "testing", "release", "stripe", "webhooks", "ledger"]
ZIPF_S = 1.07


class Words:
    """Zipf-distributed pseudo-words (bench_recall's vocabulary), for text that tokenizes like prose."""

    def __init__(self, rng: random.Random, n: int = 20_000) -> None:
        self.rng = rng
        self.vocab = make_vocab(rng, n)
        total = 0.0
        self.cum = []
        for rank in range(1, n + 1):
            total += 1.0 / rank**ZIPF_S
            self.cum.append(total)

    def take(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def sentence(self, lo: int, hi: int) -> str:
        w = self.take(self.rng.randint(lo, hi))
        w[0] = w[0].capitalize()
        return " ".join(w) + "."


def iso_ns(ms_value: int, rng: random.Random) -> str:
    """Harn's `stored_at`: RFC 3339 with nanoseconds and +00:00."""
    t = time.gmtime(ms_value // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{ms_value % 1000:03d}{rng.randint(0, 999_999):06d}+00:00"


def iso_ms(ms_value: int) -> str:
    t = time.gmtime(ms_value // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{ms_value % 1000:03d}Z"


# --------------------------------------------------------------------------- sources
def make_source(rng: random.Random, words: Words, idx: int) -> str:
    """A plausible Python module: functions with docstrings, constants, branches."""
    lines = [f'"""{words.sentence(6, 14)}"""', "", "from decimal import Decimal", ""]
    target = rng.randint(120, 600)
    n = 0
    while len(lines) < target:
        n += 1
        name = "_".join(w.lower() for w in words.take(2)) + f"_{idx}_{n}"
        lines.append(f"def {name}(value, rate=Decimal(\"0.{rng.randint(1, 99):02d}\")):")
        lines.append(f'    """{words.sentence(5, 12)}"""')
        for _ in range(rng.randint(2, 12)):
            kind = rng.random()
            var = words.take(1)[0].lower()
            if kind < 0.3:
                lines.append(f"    if value > {rng.randint(1, 10_000)}:")
                lines.append(f"        value = value * rate  # {words.sentence(3, 8)}")
            elif kind < 0.6:
                lines.append(f"    {var} = value + {rng.randint(1, 999)}")
            else:
                lines.append(f"    log(\"{words.sentence(3, 7)}\", value)")
        lines.append("    return value")
        lines.append("")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- memory
class EventLog:
    def __init__(self, ns: str) -> None:
        self.ns = ns
        self.lines: list[str] = []
        self.live: list[str] = []  # ids that can still be updated / forgotten

    def add(self, event: dict) -> None:
        self.lines.append(serde_compact(event))


def store_event(rid: str, ns: str, key: str, value, tags: list[str], stored_at: str, **extra) -> dict:
    """Harn's `store` line: type, id, namespace, key, value, text, tags, stored_at, then optional fields."""
    return fx.store_event(rid, ns, key, value, tags, stored_at, **extra)


def plain_events(log: EventLog, n: int, rng: random.Random, words: Words, clock: list[int], label: str) -> None:
    """n events of a memory namespace: ~86% store, ~9% update, ~5% forget, an `open` first."""
    ns = log.ns
    clock[0] += 1000
    log.add({"type": "open", "id": fx.uuid7(clock[0], f"{label} open"), "namespace": ns, "backend": "bm25",
             "embed_model_hint": "default", "bm25_weight": 0.5, "cosine_weight": 0.5,
             "opened_at": iso_ns(clock[0], rng)})
    i = 1
    while i < n:
        clock[0] += rng.randint(50, 90_000)
        r = rng.random()
        at = iso_ns(clock[0], rng)
        if r < 0.09 and log.live:
            rid = rng.choice(log.live)
            ev = {"type": "update", "id": rid, "namespace": ns}
            if rng.random() < 0.5:
                ev["value"] = {"text": words.sentence(8, 40), "revision": rng.randint(2, 9)}
            ev["tags"] = sorted(set(rng.sample(TAGS, rng.randint(1, 3))))
            if rng.random() < 0.3:
                ev["flags"] = {"pinned": True}
            ev["updated_at"] = at
            log.add(ev)
        elif r < 0.14 and log.live:
            k = 1 if rng.random() < 0.8 else rng.randint(2, 5)
            ids = []
            for _ in range(min(k, len(log.live))):
                ids.append(log.live.pop(rng.randrange(len(log.live))))
            pred = {"id": ids[0]} if len(ids) == 1 else {"tag": rng.choice(TAGS)}
            log.add(fx.forget_event(fx.uuid7(clock[0], f"{label} forget {i}"), ns, pred, ids, at))
        else:
            rid = fx.uuid7(clock[0], f"{label} {i}")
            # descriptive slugs, as agents choose them ("debug/stripe-sandbox"); a few carry a number
            key = "/".join(w.lower() for w in words.take(rng.randint(2, 3)))
            if rng.random() < 0.1:
                key += f"-{rng.randint(2, 400)}"
            if rng.random() < 0.35:
                value = words.sentence(10, 70)
            else:
                value = {"text": words.sentence(10, 60), "confidence": round(rng.random(), 2),
                         "source": rng.choice(("chat", "tool", "probe", "review"))}
                if rng.random() < 0.3:
                    value["refs"] = [f"src/pkg{rng.randint(0, 9)}/mod_{rng.randint(0, 499)}.py"]
            extra = {}
            if rng.random() < 0.25:
                extra["provenance"] = {"agent": "claude-code", "run_id": "run_" + fx.uuid7(clock[0], f"{label} run {i}")}
            if rng.random() < 0.1:
                extra["status"] = rng.choice(("proposed", "accepted"))
            log.add(store_event(rid, ns, key, value, rng.sample(TAGS, rng.randint(0, 3)), at, **extra))
            log.live.append(rid)
        i += 1


def fact_events(log: EventLog, n_facts: int, sources: dict[str, list[str]], rng: random.Random, words: Words,
                clock: list[int]) -> None:
    """n facts with file_range evidence (Zipf-ish over files, so one file is busy), a few invalidated."""
    ns = log.ns
    paths = sorted(sources)
    weights = [1.0 / (r + 1) ** 0.7 for r in range(len(paths))]
    kinds = fx.FACT_SPECS
    fact_ids = []
    for i in range(n_facts):
        clock[0] += rng.randint(50, 20_000)
        kind = ("observation", "claim", "decision", "constraint", "hypothesis")[rng.randrange(5)]
        evidence = []
        for _ in range(1 if rng.random() < 0.8 else 2):
            path = rng.choices(paths, weights=weights)[0]
            lines = sources[path]
            start = rng.randint(1, max(1, len(lines) - 6))
            end = min(len(lines), start + rng.choice((0, 0, 1, 2, 4)))
            ref = f"{path}:{start}" if start == end else f"{path}:{start}-{end}"
            item = {"kind": "file_range", "ref": ref}
            if rng.random() < 0.9:
                snippet = "\n".join(lines[start - 1:end]).strip()
                if snippet:
                    item["snippet"] = snippet
            evidence.append(item)
        if rng.random() < 0.1:
            evidence.append({"kind": "user_input", "ref": words.sentence(4, 10)})
        prov = {"agent": "claude-code", "run_id": "run_" + fx.uuid7(clock[0] - 60_000, f"fact run {i % 997}")}
        claim = words.sentence(6, 24)
        fid = fx.fact_id(kind, claim, evidence, prov)
        env = {"schema": "harn.fact.v1", "id": fid, "kind": kind, "claim": claim, "evidence": evidence,
               "confidence": round(rng.uniform(0.2, 1.0), 2), "provenance": prov, "asserted_at": iso_ms(clock[0])}
        env = fx.sort_keys(env)
        log.add(store_event(fid, ns, f"fact:{kind}:{fid}", env, fx.fact_tags(kind, evidence, []),
                            iso_ns(clock[0] + 2, rng), text=stringify(env), provenance=prov))
        fact_ids.append(fid)
        if i and i % 40 == 0 and rng.random() < 0.7:  # invalidate an older fact now and then
            gone = fact_ids.pop(rng.randrange(len(fact_ids)))
            clock[0] += 10
            at = iso_ns(clock[0], rng)
            log.add(fx.forget_event(fx.uuid7(clock[0], f"fact forget {i}"), ns, {"id": gone}, [gone], at))
    del kinds


def pattern_events(log: EventLog, n_proposals: int, n_obs: int, rng: random.Random, words: Words,
                   clock: list[int]) -> None:
    """Observations, a state record and n pending proposals (the shape of fixtures' pattern learning)."""
    now = iso_ms(clock[0])
    state_id = f"state_{fx.pl_record_suffix(now, 'bench state')}"
    log.add(fx.pl_store("state", "state", state_id, {"enabled": True, "suppressed_until": {}, "updated_at": now}, now))
    tools_pool = ["grep", "read-file", "edit-file", "run-tests", "bash", "write-file", "git-log", "http-get"]
    for i in range(n_obs):
        clock[0] += rng.randint(1000, 600_000)
        at = iso_ms(clock[0])
        o = {"id": fx.uuid4(f"bench observation {i}"), "session_id": f"sess-{i // 3:05d}",
             "prompt": words.sentence(5, 16), "tool_sequence": rng.sample(tools_pool, rng.randint(1, 5)),
             "observed_at": at, "source_id": "", "run_id": "", "evidence_kind": ""}
        log.add(fx.pl_store("observation", f"observation:{o['id']}", o["id"], o, at))
    clock[0] += 60_000
    now = iso_ms(clock[0])
    log.add(fx.forget_event(fx.uuid7(clock[0], "bench pl refresh"), fx.PL_NS,
                            {"tag": "pattern_learning:pending"}, [], now))
    seen = set()
    made = 0
    while made < n_proposals:
        prompts = [words.sentence(5, 12) for _ in range(3)]
        tools = rng.sample(tools_pool, rng.randint(2, 5))
        if rng.random() < 0.6:
            p = fx.prompt_proposal(prompts, tools, rng.randint(2, 12), now)
        else:
            p = fx.tool_proposal(tools, rng.randint(2, 12), prompts, now)
        if p["id"] in seen:
            continue
        seen.add(p["id"])
        rid = f"pending_{p['id'].replace('-', '_')}_{fx.pl_record_suffix(now, 'bench pending ' + p['id'])}"
        log.add(fx.pl_store("pending", f"pending:{p['id']}", rid, p, now))
        made += 1


# --------------------------------------------------------------------------- runs
def transcript(rng: random.Random, words: Words, label: str, base_ms: int, target_bytes: int) -> dict:
    """A transcript of about target_bytes (messages + derived events roughly double the text)."""
    tb = fx.TranscriptBuilder(label, base_ms)
    tb.message("system", fx.SYSTEM_PROMPT)
    tb.message("user", words.sentence(8, 30))
    size = 600
    n = 0
    while size < target_bytes:
        n += 1
        call = f"toolu_{n:05d}"
        tool = rng.choice(("read_file", "shell", "grep", "edit_file"))
        tb.message("assistant", [{"text": words.sentence(6, 30)}, fx.tool_call(call, tool, {"arg": words.sentence(2, 6)})])
        out_len = int(min(200_000, rng.lognormvariate(6.5, 1.1)))
        body = []
        blen = 0
        while blen < out_len:
            s = words.sentence(6, 20)
            body.append(s)
            blen += len(s) + 1
        text = "\n".join(body)
        tb.message("tool_result", [fx.tool_result(call, tool, text)], kind="tool_result")
        if rng.random() < 0.05:
            tb.event("compaction", "system", "Transcript compacted via summarize", "internal",
                     metadata={"mode": "auto", "strategy": "summarize", "archived_messages": rng.randint(4, 40)})
        size += 2 * (len(text) + 400)
    tb.message("assistant", words.sentence(10, 40))
    return tb.build(state=rng.choice(("archived", "archived", "active", "abandoned")), summary=words.sentence(8, 20))


def write_runs(root: Path, cfg: dict, rng: random.Random, words: Words) -> None:
    out = fx.Out(root)
    n = cfg["runs"]
    big_at = n // 2
    for i in range(n):
        start = BASE_MS + i * 3_600_000 + rng.randint(0, 1_000_000)
        run_id = "run_" + fx.uuid7(start, f"bench run {i}")
        if i == big_at:
            target = cfg["big_transcript_bytes"]
        else:
            target = int(min(400_000, rng.lognormvariate(9.6, 1.0)))  # median ~15 KB
        tr = transcript(rng, words, f"bench run {i}", start + 5000, target)
        t0 = iso_ms(start)[:19] + "Z"
        t1 = iso_ms(start + 60_000)[:19] + "Z"
        status = rng.choice(("completed", "completed", "completed", "failed"))
        stages = [fx.stage(f"stage_{k}", f"node_{k}", "completed", "success", t0, t1, words.sentence(3, 10))
                  for k in range(rng.randint(1, 5))]
        u = fx.usage(rng.randint(1000, 90_000), rng.randint(100, 5000), rng.randint(1000, 300_000),
                     rng.randint(1, 20), round(rng.random(), 4), ["claude-sonnet-4-5"])
        rec = fx.run_record(run_id, f"pipeline-{i % 17}", words.sentence(4, 10), status, t0, t1, stages, tr, u,
                            metadata={"pipeline": f"pipelines/p{i % 17}.harn"})
        out.text(f".harn-runs/{run_id}.json", fx.pretty(rec))


def write_checkpoints(root: Path, cfg: dict, rng: random.Random, words: Words) -> None:
    out = fx.Out(root)
    for i in range(cfg["checkpoints"]):
        data = {}
        for k in range(rng.randint(2, 12)):
            name = f"stage_{k}_{words.take(1)[0].lower()}"
            if rng.random() < 0.4:
                data[name] = fx.keyed({"source_sha": f"{rng.getrandbits(40):010x}", "k": k},
                                      {"rows": rng.randint(0, 9999), "note": words.sentence(3, 12)})
            elif rng.random() < 0.5:
                data[name] = words.sentence(5, 40)
            else:
                data[name] = {"ok": True, "count": rng.randint(0, 500)}
        out.text(f".harn/checkpoints/pipeline-{i:02d}.json", json.dumps(fx.sort_keys(data), indent=2))


# --------------------------------------------------------------------------- main
def generate(dest: Path, size: str = "large", seed: int = DEFAULT_SEED) -> dict:
    cfg = SIZES[size]
    rng = random.Random(seed)
    words = Words(rng)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    out = fx.Out(dest)
    out.text("harn.toml", '[package]\nname = "bench-project"\nversion = "0.1.0"\n')
    sources: dict[str, list[str]] = {}
    for i in range(cfg["sources"]):
        rel = f"src/pkg{i % 10}/mod_{i}.py"
        text = make_source(rng, words, i)
        out.text(rel, text)
        sources[rel] = text.split("\n")
    clock = [BASE_MS]
    logs: list[EventLog] = []

    facts = EventLog("project/facts")
    fact_events(facts, cfg["facts"], sources, rng, words, clock)
    logs.append(facts)
    pl = EventLog(fx.PL_NS)
    pattern_events(pl, cfg["proposals"], cfg["observations"], rng, words, clock)
    logs.append(pl)
    remaining = cfg["events"] - len(facts.lines) - len(pl.lines)
    if remaining < len(NAMESPACES) * 10:
        raise SystemExit(f"size {size}: facts and pattern learning leave no room for plain memory events")
    for j, (ns, share) in enumerate(NAMESPACES):
        n = remaining - sum(int(remaining * s) for _, s in NAMESPACES[1:]) if j == 0 else int(remaining * share)
        log = EventLog(ns)
        plain_events(log, n, rng, words, [BASE_MS + j * 7_919], ns)
        logs.append(log)
    total = 0
    for log in logs:
        out.text(f".harn/memory/{log.ns}/events.jsonl", "".join(line + "\n" for line in log.lines))
        total += len(log.lines)
    write_checkpoints(dest, cfg, rng, words)
    write_runs(dest, cfg, rng, words)
    manifest = {"size": size, "seed": seed, "events": total, "namespaces": {log.ns: len(log.lines) for log in logs},
                "facts": cfg["facts"], "sources": cfg["sources"], "runs": cfg["runs"],
                "proposals": cfg["proposals"], "checkpoints": cfg["checkpoints"],
                "busiest_namespace": BUSIEST_NAMESPACE, "vocab_seed": seed}
    (dest / "bench-manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--size", choices=sorted(SIZES), default="large")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    m = generate(Path(args.out_dir), args.size, args.seed)
    print(f"wrote {args.out_dir}: {m['events']} events, {m['facts']} facts, {m['runs']} runs "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
