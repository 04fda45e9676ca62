"""Recall scores bit-identical to Harn's `score_bm25` (crates/harn-vm/src/stdlib/memory.rs @094874f4).

The reference below is a literal transcription of Harn's Rust, evaluated in
pure Python floats (IEEE doubles, same operation order as Rust evaluates it):

    let idf = ((total_docs - df + 0.5) / (df + 0.5)).ln_1p();
    idf * (freq * (k1 + 1.0)) / (freq + k1 * (1.0 - b + b * doc_len / avg_len))
    ... .sum()                                 // per query term, in query order
    query_terms.iter().fold(0.0, |score, term| score + (0.4|0.0) + (0.25|0.0))
    score = bm25_score(..) + exact_field_boost(..)

Every score harn-ls returns (vectorised path, scalar `explain` path, cold
rebuild) is compared with `==`, and the ranking with Harn's order
(score desc, stored_at desc, sequence desc, id asc), near-ties included.
"""

from __future__ import annotations

import itertools
import json
import math
import random

from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace
from harn_ls.formats.memory_record import value_text
from harn_ls.recall import RecallEngine, searchable_text, tokenize
from tests.helpers.samples import SAMPLES

# ----------------------------------------------------------------- Harn, transcribed

def harn_score_bm25(records, query: str) -> list[tuple[str, float]]:
    """`score_bm25` line by line; records = active MemoryRecords in file order."""
    query_terms = tokenize(query)
    if not query_terms:
        return []
    docs = [tokenize(searchable_text(r)) for r in records]
    total_docs = float(max(len(docs), 1))
    avg_len = float(max(sum(len(d) for d in docs), 1)) / total_docs
    doc_freq: dict[str, int] = {}
    for doc in docs:
        for term in set(doc):
            doc_freq[term] = doc_freq.get(term, 0) + 1
    scored = []
    for record, doc in zip(records, docs, strict=True):
        score = _bm25_score(query_terms, doc, doc_freq, total_docs, float(max(len(doc), 1)), avg_len) \
            + _exact_field_boost(query_terms, record)
        if score > 0.0:
            scored.append((score, record.stored_at, record.seq, record.id))
    # sort_by(score desc).then_with(newest_first): stored_at desc, sequence desc, id asc
    scored.sort(key=lambda s: s[3])
    scored.sort(key=lambda s: (s[0], s[1], s[2]), reverse=True)
    return [(rid, score) for score, _, _, rid in scored]


def _bm25_score(query_terms, doc, doc_freq, total_docs, doc_len, avg_len) -> float:
    if not doc:
        return 0.0
    tf: dict[str, int] = {}
    for term in doc:
        tf[term] = tf.get(term, 0) + 1
    k1 = 1.2
    b = 0.75
    total = -0.0  # Rust's f64 `Sum` starts from -0.0
    for term in query_terms:
        freq = float(tf.get(term, 0))
        if freq == 0.0:
            value = 0.0
        else:
            df = float(doc_freq.get(term, 0))
            idf = math.log1p((total_docs - df + 0.5) / (df + 0.5))
            value = idf * (freq * (k1 + 1.0)) / (freq + k1 * (1.0 - b + b * doc_len / avg_len))
        total = total + value
    return total


def _exact_field_boost(query_terms, record) -> float:
    key = set(tokenize(record.key))
    tags = {t for tag in record.tags for t in tokenize(tag)}
    score = 0.0
    for term in query_terms:
        score = score + (0.4 if term in key else 0.0) + (0.25 if term in tags else 0.0)
    return score


def old_order_term(idf_ln, freq, doc_len, avg_len) -> float:
    """What harn-ls computed before: `(idf * tf) * (k1 + 1)` with `ln(1 + x)`."""
    return idf_ln * freq * (1.2 + 1.0) / (freq + 1.2 * (1.0 - 0.75 + 0.75 * doc_len / avg_len))


# ----------------------------------------------------------------- corpus

WORDS = ["deploy", "staging", "rust", "python", "alice", "bob", "db", "ops", "cache", "notes", "release",
         "profile", "preference", "x9", "v2", "école", "ÉCOLE", "中文"]


def _store(i: int, rng: random.Random) -> dict:
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]
    value = " ".join(words) if rng.random() < 0.7 else {"text": " ".join(words), "n": rng.randint(0, 3)}
    tags = sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 3))})
    key = rng.choice(WORDS) + ("-" + rng.choice(WORDS) if rng.random() < 0.5 else "")
    # few distinct timestamps: many exact score ties are broken by stored_at / sequence
    return {"type": "store", "id": f"r{i:04d}", "namespace": "t", "key": key, "value": value,
            "text": value_text(value), "tags": tags, "stored_at": f"2026-01-0{rng.randint(1, 4)}T00:00:00Z"}


def _feed(events: list[dict]) -> tuple[MemoryNamespace, RecallEngine]:
    mem = MemoryNamespace("t", "/nonexistent/t/events.jsonl")
    engine = RecallEngine()
    engine.sync_namespace(mem, MemoryDelta())
    # in a few batches, as the watcher appends them (exercises the incremental index)
    for start in range(0, len(events), 97):
        batch = [JsonlLine(start + i + 1, 0, e) for i, e in enumerate(events[start:start + 97])]
        engine.sync_namespace(mem, mem.apply_lines(batch))
    return mem, engine


QUERIES = ["deploy", "rust profile", "staging staging db", "alice bob ops cache", "école ÉCOLE", "中文 notes v2",
           "release preference x9 deploy rust", "profile profile profile"]


def _corpus(seed: int, n: int) -> list[dict]:
    rng = random.Random(seed)
    return [_store(i, rng) for i in range(n)]


def test_every_score_and_rank_is_bit_identical_to_harn():
    events = _corpus(15, 900)
    mem, engine = _feed(events)
    records = mem.records()
    idx = engine.indexes["t"]
    compared = 0
    for query in QUERIES:
        want = harn_score_bm25(records, query)
        assert want, query
        got = engine.recall(query, k=100, namespace="t")
        assert [(h.id, h.score) for h in got.hits] == want[:100], query  # ids in Harn's order, scores ==
        by_seq = {r.id: r.seq for r in records}
        lexical = idx.lexical_scores(tokenize(query))  # the numpy path, every record
        assert len(lexical) == len(want)
        for rid, score in want:
            seq = by_seq[rid]
            assert lexical[seq] == score, (query, rid)
            assert idx.explain(seq, tokenize(query)).lexical == score, (query, rid)  # the scalar path
            compared += 1
    assert compared > 3000


def test_near_ties_order_as_harn_does():
    """Scores one ulp apart and exact ties must order exactly as Harn orders them.

    Records holding the same three query words with permuted counts have the
    same df and length, so their scores are the same three terms summed in a
    different order: mathematically equal, in floating point often one ulp
    apart. Harn's order (score desc, then stored_at desc, sequence desc)
    depends on that last bit."""
    one_ulp = 0
    for extra in range(6):
        for tfs in [(1, 2, 5), (1, 3, 4), (2, 3, 7), (1, 4, 6)]:
            events = []
            for i, perm in enumerate(itertools.permutations(tfs)):
                text = " ".join(w for word, t in zip(("alpha", "beta", "gamma"), perm, strict=True) for w in [word] * t)
                events.append({"type": "store", "id": f"p{i}", "namespace": "t", "key": "k", "value": text,
                               "text": text, "tags": [], "stored_at": "2026-01-01T00:00:00Z"})
            events += [{"type": "store", "id": f"f{j}", "namespace": "t", "key": "k", "value": "filler words",
                        "text": "filler words", "tags": [], "stored_at": "2026-01-01T00:00:00Z"} for j in range(extra)]
            mem, engine = _feed(events)
            want = harn_score_bm25(mem.records(), "alpha beta gamma")
            got = [(h.id, h.score) for h in engine.recall("alpha beta gamma", k=20, namespace="t").hits]
            assert got == want, (extra, tfs)
            distinct = sorted({sc for _, sc in want})
            one_ulp += sum(1 for a, b in zip(distinct, distinct[1:], strict=False) if b == math.nextafter(a, math.inf))
    assert one_ulp >= 5  # the construction really produces one-ulp near-ties


def test_the_reference_has_teeth():
    """The old operation order and ln(1+x) really differ from Harn's in the last bits on this corpus."""
    records = _feed(_corpus(15, 900))[0].records()
    docs = [tokenize(searchable_text(r)) for r in records]
    n = float(len(docs))
    avg = float(sum(len(d) for d in docs)) / n
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    differ_order = differ_log = total = 0
    for d in docs:
        for term in set(d):
            freq, dl = float(d.count(term)), float(len(d))
            x = (n - df[term] + 0.5) / (df[term] + 0.5)
            idf = math.log1p(x)
            harn = idf * (freq * 2.2) / (freq + 1.2 * (1.0 - 0.75 + 0.75 * dl / avg))
            differ_order += old_order_term(idf, freq, dl, avg) != harn
            differ_log += math.log(1.0 + x) != idf
            total += 1
    assert differ_order > total // 50, (differ_order, total)
    assert differ_log > 0


def test_harn_sample_vector_ranking():
    """recall-vectors.json `memory-unit-recall-and-forget`: ranking and (rounded) scores from the samples."""
    vectors = {v["id"]: v for v in json.loads((SAMPLES / "recall-vectors.json").read_text())["vectors"]}
    v = vectors["memory-unit-recall-and-forget"]
    events = [{"type": "store", "namespace": v["namespace"], **{k: r[k] for k in ("id", "key", "value", "text", "tags",
                                                                              "stored_at")}}
              for r in v["records_appended_in_order"]]
    mem = MemoryNamespace(v["namespace"], "/nonexistent/x/events.jsonl")
    engine = RecallEngine()
    engine.sync_namespace(mem, mem.apply_lines([JsonlLine(i + 1, 0, e) for i, e in enumerate(events)]))
    want = harn_score_bm25(mem.records(), v["query"])
    got = [(h.id, h.score) for h in engine.recall(v["query"], k=10, namespace=v["namespace"]).hits]
    assert got == want
    assert [(i, round(s, 12)) for i, s in got] == [(c["id"], c["score"]) for c in v["computed"]["ranking"]]
