"""Recall benchmark: harn_ls.recall vs rank_bm25 on synthetic memory namespaces.

Builds seeded synthetic records (pseudo-word vocabulary with a Zipf-like
frequency distribution, record lengths 15-80 tokens, keys, tags, dict and
string values like real `memory_store` calls) at 1k / 10k / 100k records and
reports index build time, incremental add cost per record (new words / known words), top-10 query
latency p50/p95, and the same queries through rank_bm25's
`BM25Okapi.get_scores` (scores for all records, which is what rank_bm25 offers).

    python bench/bench_recall.py            # prints a table, returns a dict from run()
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harn_ls.formats.memory_record import MemoryRecord, memory_record, value_text  # noqa: E402
from harn_ls.recall import NamespaceIndex, RecallEngine, searchable_text, tokenize  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
VOCAB = 30_000
ZIPF_S = 1.07
QUERIES = 200
BM25_QUERIES = {1_000: 200, 10_000: 60, 100_000: 20}  # rank_bm25 is slow at 100k; fewer samples
SEED = 20260502

_SYLLABLES = ["ka", "ro", "mi", "sen", "tu", "lo", "dra", "vin", "pe", "qua", "shi", "nor", "el", "zu", "bar",
              "te", "gon", "li", "fa", "mu", "ost", "ren", "ya", "dex", "co", "ji", "wel", "un", "ha", "pri"]


def make_vocab(rng: random.Random, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4)))))
    out = sorted(words)
    rng.shuffle(out)
    return out


def make_records(n: int, seed: int = SEED) -> tuple[list[MemoryRecord], list[str], list[float]]:
    rng = random.Random(seed)
    vocab = make_vocab(rng, VOCAB)
    cum: list[float] = []
    total = 0.0
    for rank in range(1, VOCAB + 1):
        total += 1.0 / rank**ZIPF_S
        cum.append(total)
    tags_pool = ["profile", "preference", "decision", "todo", "fact", "fact:claim", "schema:harn.fact.v1",
                 "incident", "deploy", "review", "customer", "api", "bug", "plan", "note"]
    records = []
    for i in range(n):
        words = rng.choices(vocab, cum_weights=cum, k=rng.randint(15, 80))
        sentence = " ".join(words)
        if i % 3 == 0:
            value = sentence
        else:
            value = {"text": sentence, "confidence": round(rng.random(), 2), "source": rng.choice(("chat", "tool", "probe"))}
        key = f"{rng.choice(vocab[:2000])}-{rng.choice(vocab[:5000])}-{i}"
        tags = tuple(sorted(set(rng.sample(tags_pool, rng.randint(0, 3)))))
        stored_at = f"2026-05-{1 + i * 28 // max(n, 1):02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00.000000000+00:00"
        records.append(memory_record(id=f"rec-{i:07d}", namespace="bench", key=key, value=value, text=value_text(value),
                                    tags=tags, stored_at=stored_at, seq=i, line_no=i + 1))
    return records, vocab, cum


def make_queries(rng: random.Random, vocab: list[str], cum: list[float], n: int) -> list[str]:
    """1-3 word queries drawn from the same Zipf distribution as the text (users type common words too)."""
    return [" ".join(rng.choices(vocab, cum_weights=cum, k=rng.choice((1, 2, 2, 3)))) for _ in range(n)]


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def bench_size(n: int) -> dict:
    records, vocab, cum = make_records(n)
    queries = make_queries(random.Random(SEED + n), vocab, cum, QUERIES)
    gc.collect()

    # Cold build through the public engine (tokenizing + indexing every record).
    t0 = time.perf_counter()
    engine = RecallEngine()
    engine.load("bench", records)
    build_s = time.perf_counter() - t0
    idx: NamespaceIndex = engine.indexes["bench"]

    # Incremental add / remove cost on the full index (what one appended line costs).
    extra, _, _ = make_records(200, seed=SEED + 1)
    extra = [r.with_changes(seq=n + r.seq, id=f"x-{r.seq}") for r in extra]
    t0 = time.perf_counter()
    for r in extra:
        idx.add(r)
    add_us = (time.perf_counter() - t0) / len(extra) * 1e6
    t0 = time.perf_counter()
    for r in extra:
        idx.remove(r.seq)
    remove_us = (time.perf_counter() - t0) / len(extra) * 1e6
    # The extra records above come from another vocabulary (every word a new term);
    # appended memory mostly reuses known words: copies of indexed records' content.
    known = [r.with_changes(seq=2 * n + i, id=f"k-{i}")
             for i, r in enumerate(records[:200])]
    t0 = time.perf_counter()
    for r in known:
        idx.add(r)
    add_known_us = (time.perf_counter() - t0) / len(known) * 1e6
    for r in known:
        idx.remove(r.seq)

    lat = []
    hits_total = 0
    for q in queries:
        t0 = time.perf_counter()
        res = engine.recall(q, k=10, namespace="bench")
        lat.append((time.perf_counter() - t0) * 1e3)
        hits_total += len(res.hits)
    worst_q = vocab[0]  # the most frequent word: postings cover most records
    t0 = time.perf_counter()
    engine.recall(worst_q, k=10, namespace="bench")
    worst_ms = (time.perf_counter() - t0) * 1e3

    out = {
        "records": n,
        "build_s": build_s,
        "add_us_per_record": add_us,
        "add_us_per_record_known_words": add_known_us,
        "remove_us_per_record": remove_us,
        "query_ms_p50": statistics.median(lat),
        "query_ms_p95": _pct(lat, 0.95),
        "query_ms_max": max(lat),
        "query_ms_most_frequent_term": worst_ms,
        "mean_hits": hits_total / len(queries),
    }

    try:
        from rank_bm25 import BM25Okapi
    except ImportError:  # pragma: no cover - rank-bm25 is a declared dependency
        return out
    corpus = [tokenize(searchable_text(r)) for r in records]
    t0 = time.perf_counter()
    bm = BM25Okapi(corpus, k1=1.2, b=0.75)
    out["rank_bm25_build_s"] = time.perf_counter() - t0
    blat = []
    for q in queries[: BM25_QUERIES[n] if n in BM25_QUERIES else 50]:
        qt = tokenize(q)
        t0 = time.perf_counter()
        scores = bm.get_scores(qt)
        # rank_bm25 has no top-k; include the cheapest exact top-10 selection for fairness.
        sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:10]
        blat.append((time.perf_counter() - t0) * 1e3)
    out["rank_bm25_query_ms_p50"] = statistics.median(blat)
    out["rank_bm25_query_ms_p95"] = _pct(blat, 0.95)
    out["speedup_p50"] = out["rank_bm25_query_ms_p50"] / out["query_ms_p50"]
    del bm, corpus
    return out


def run(sizes: tuple[int, ...] = SIZES) -> dict:
    results = {"recall": [bench_size(n) for n in sizes],
               "budget": {"query_ms_p50_at_100k": 20.0},
               "python": sys.version.split()[0]}
    print_table(results["recall"])
    return results


def print_table(rows: list[dict]) -> None:
    head = ("records", "build s", "add µs", "add µs known", "rm µs", "p50 ms", "p95 ms", "max ms", "top-term ms",
            "bm25 build s", "bm25 p50", "bm25 p95", "speedup")
    print("  ".join(f"{h:>12}" for h in head))
    for r in rows:
        vals = (r["records"], r["build_s"], r["add_us_per_record"], r["add_us_per_record_known_words"],
                r["remove_us_per_record"], r["query_ms_p50"],
                r["query_ms_p95"], r["query_ms_max"], r["query_ms_most_frequent_term"],
                r.get("rank_bm25_build_s", float("nan")), r.get("rank_bm25_query_ms_p50", float("nan")),
                r.get("rank_bm25_query_ms_p95", float("nan")), r.get("speedup_p50", float("nan")))
        print("  ".join(f"{v:>12}" if isinstance(v, int) else f"{v:>12.2f}" for v in vals))


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    res = run(sizes)
    print(json.dumps(res, indent=1))
