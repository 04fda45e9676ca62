"""Recall: tokenizer, Harn-parity BM25 ranking, incremental index, vectors, rendering."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.formats.harn_json import serde_compact, sha256_hex
from harn_ls.formats.jsonl import JsonlLine, JsonlTail
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace
from harn_ls.formats.memory_record import MemoryRecord, memory_record, value_text
from harn_ls.recall import (
    RecallEngine,
    clamp_k,
    cosine,
    is_token_char,
    sanitize_model_hint,
    searchable_text,
    tokenize,
    vector_cache_path,
)
from harn_ls.render.recall import recall_json, render_recall_markdown
from tests.helpers.samples import SAMPLES  # noqa: E402

VECTORS = {v["id"]: v for v in json.loads((SAMPLES / "recall-vectors.json").read_text())["vectors"]}
ID_VECTORS = {v["id"]: v for v in json.loads((SAMPLES / "id-vectors.json").read_text())["vectors"]}


def lines_of(events: list[dict | str]) -> list[JsonlLine]:
    return [JsonlLine(i + 1, 0, json.loads(e) if isinstance(e, str) else e) for i, e in enumerate(events)]


def store(rid: str, key: str, value, tags=(), stored_at="2026-01-01T00:00:00Z", text=None, ns="t") -> dict:
    return {"type": "store", "id": rid, "namespace": ns, "key": key, "value": value,
            "text": value_text(value) if text is None else text, "tags": sorted(set(tags)), "stored_at": stored_at}


def forget(ids, ns="t") -> dict:
    return {"type": "forget", "id": "f-" + "-".join(ids), "namespace": ns, "predicate": {"id": list(ids)},
            "forgotten_ids": list(ids), "forgotten_at": "2026-12-01T00:00:00Z"}


def update(rid, ns="t", **fields) -> dict:
    return {"type": "update", "id": rid, "namespace": ns, **fields, "updated_at": "2026-12-01T00:00:00Z"}


class Live:
    """A namespace fed through MemoryNamespace + RecallEngine, exactly as the workspace does."""

    def __init__(self, ns: str = "t", path: str = "/nonexistent/t/events.jsonl") -> None:
        self.mem = MemoryNamespace(ns, path)
        self.engine = RecallEngine()
        self.engine.sync_namespace(self.mem, MemoryDelta())
        self.line = 0

    def feed(self, *events: dict) -> None:
        lines = []
        for e in events:
            self.line += 1
            lines.append(JsonlLine(self.line, 0, e))
        self.engine.sync_namespace(self.mem, self.mem.apply_lines(lines))

    def recall(self, query, k=5, explain=False):
        return self.engine.recall(query, k=k, namespace=self.mem.namespace, explain=explain)


# ---------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------


def test_tokenize_sample_vectors():
    for case in ID_VECTORS["memory-tokenize"]["computed"]:
        assert tokenize(case["input"]) == case["tokens"], case["input"]


def test_tokenize_ascii_lowercase_only_and_byte_length():
    # ASCII-only lowercasing: É, Ä, Σ keep their case; A..Z fold.
    assert tokenize("ÉCOLE École ΣΟΦΙΑ Straße") == ["École", "École", "ΣΟΦΙΑ", "straße"]
    # 1-byte tokens dropped, a lone non-ASCII letter (2+ UTF-8 bytes) kept.
    assert tokenize("a b 9 _ é 中 ß x") == ["é", "中", "ß"]
    assert tokenize("I a") == []


def test_tokenize_digits_and_separators():
    assert tokenize("v2 2026-05-02T09:14:03 3.14 x9") == ["v2", "2026", "05", "02t09", "14", "03", "14", "x9"]
    # underscore, hyphen, dots, slashes, emoji all split; numbers in other scripts count as digits
    assert tokenize("snake_case kebab-case a.b/cd 🚀ok ٣٤ ⅫIV") == ["snake", "case", "kebab", "case", "cd", "ok",
                                                                  "٣٤", "ⅫIV".replace("IV", "iv")]


def test_tokenize_rust_alphanumeric_marks():
    # U+093F DEVANAGARI VOWEL SIGN I is Other_Alphabetic: Rust keeps it inside the
    # token although Python's isalnum() is False; the virama U+094D is not alphabetic.
    assert not "\u093f".isalnum() and is_token_char("\u093f")
    assert not is_token_char("\u094d")
    assert tokenize("हिन्दी") == ["हिन", "दी"]
    # Circled letters (So, Other_Alphabetic) are alphanumeric in Rust too.
    assert is_token_char("Ⓐ") and tokenize("ⒶⒷ") == ["ⒶⒷ"]
    # Combining acute accent is not alphabetic: it splits.
    assert tokenize("cafe\u0301s") == ["cafe"]


def test_tokenizer_agrees_with_isalnum_outside_the_extra_table():
    # Every code point Python calls alphanumeric is a token char (no Python-only chars).
    for cp in list(range(0, 0x3000)) + list(range(0xA000, 0xAC00)):
        ch = chr(cp)
        if ch.isalnum():
            assert is_token_char(ch), hex(cp)


def test_searchable_text_layout():
    r = memory_record(id="m", namespace="t", key="alice", value={"text": "x", "n": 1.0}, text="T",
                     tags=("a", "b"), stored_at="s", seq=0, line_no=1)
    assert searchable_text(r) == 'alice\nT\na b\n{"text":"x","n":1.0}'


# ---------------------------------------------------------------------------
# Hand-computed ranking
# ---------------------------------------------------------------------------


def test_hand_computed_scores():
    # Three records, text == value (string values), no tags unless given.
    #  d1 key "deploy"  value "deploy staging"  -> tokens deploy, deploy, staging, "deploy staging" again as JSON
    #     searchable: 'deploy\ndeploy staging\n\n"deploy staging"' -> [deploy, deploy, staging, deploy, staging] (5)
    #  d2 key "notes"   value "staging db down", tags [ops] -> [notes, staging, db, down, ops, staging, db, down] (8)
    #  d3 key "misc"    value "lunch"  -> [misc, lunch, lunch] (3)
    live = Live()
    live.feed(store("d1", "deploy", "deploy staging", stored_at="2026-01-01T00:00:01Z"),
              store("d2", "notes", "staging db down", tags=["ops"], stored_at="2026-01-01T00:00:02Z"),
              store("d3", "misc", "lunch", stored_at="2026-01-01T00:00:03Z"))
    N = 3
    avgdl = (5 + 8 + 3) / N  # 16/3
    k1, b = 1.2, 0.75
    # query "deploy": df=1 -> idf = ln(1 + (3-1+0.5)/(1+0.5)) = ln(1 + 2.5/1.5) = ln(8/3)
    idf_deploy = math.log(8 / 3)
    tf, dl = 3, 5
    bm = idf_deploy * tf * 2.2 / (tf + k1 * (1 - b + b * dl / avgdl))
    # key boost: "deploy" is the key's token -> +0.4
    expected_d1 = bm + 0.4
    res = live.recall("deploy")
    assert [h.id for h in res.hits] == ["d1"]
    assert res.hits[0].score == pytest.approx(expected_d1, abs=1e-12)
    # by hand: idf = ln(8/3) = 0.980829; norm = 1.2 * (0.25 + 0.75 * 5 / (16/3)) = 1.2 * 0.953125 = 1.14375
    #          3 * 2.2 / (3 + 1.14375) = 6.6 / 4.14375 = 1.592760; x idf = 1.562226; + 0.4 = 1.962226
    assert res.hits[0].score == pytest.approx(1.962226, abs=1e-6)

    # query "staging ops": staging df=2 -> idf = ln(1 + 1.5/2.5) = ln(1.6); ops df=1 -> ln(8/3)
    idf_st = math.log(1.6)
    d1 = idf_st * 2 * 2.2 / (2 + k1 * (1 - b + b * 5 / avgdl))
    d2 = idf_st * 2 * 2.2 / (2 + k1 * (1 - b + b * 8 / avgdl)) + idf_deploy * 1 * 2.2 / (1 + k1 * (1 - b + b * 8 / avgdl)) + 0.25
    res = live.recall("staging ops", explain=True)
    assert [h.id for h in res.hits] == ["d2", "d1"]
    assert res.hits[0].score == pytest.approx(d2, abs=1e-12)
    assert res.hits[1].score == pytest.approx(d1, abs=1e-12)
    ex = res.hits[0].explain
    assert [(t.term, t.tf, t.df) for t in ex.terms] == [("staging", 2, 2), ("ops", 1, 1)]
    assert ex.tag_boost == 0.25 and ex.key_boost == 0.0
    assert ex.lexical == res.hits[0].score
    assert ex.terms[1].idf == pytest.approx(idf_deploy)

    # Repeated query words count twice, boosts included: "deploy deploy" = 2 x ("deploy").
    res2 = live.recall("deploy deploy")
    assert res2.hits[0].score == pytest.approx(2 * expected_d1, abs=1e-12)
    # No matching token -> nothing (score <= 0 dropped).
    assert live.recall("kubernetes").hits == []


def test_key_and_tag_boost_without_other_text():
    # "ops" appears only as a tag; "alpha" only in the key: both score via BM25 + boost.
    live = Live()
    live.feed(store("a", "alpha", "zzz yyy", tags=["ops"]), store("b", "beta", "zzz www"))
    r = live.recall("ops alpha", explain=True)
    assert [h.id for h in r.hits] == ["a"]
    ex = r.hits[0].explain
    assert ex.key_boost == pytest.approx(0.4) and ex.tag_boost == pytest.approx(0.25)


# ---------------------------------------------------------------------------
# Harn's vectors (recall-vectors.json)
# ---------------------------------------------------------------------------


def test_vector_recall_and_forget():
    v = VECTORS["memory-unit-recall-and-forget"]
    lines = lines_of(v["computed"]["events_jsonl_lines"])
    live = Live(v["namespace"])
    live.engine.sync_namespace(live.mem, live.mem.apply_lines(lines[:2]))
    for rid, toks in v["computed"]["tokens"].items():
        rec = live.mem.get(rid)
        assert searchable_text(rec) == v["computed"]["searchable_text"][rid]
        assert tokenize(searchable_text(rec)) == toks
    res = live.engine.recall(v["query"], k=100, namespace=v["namespace"])
    assert res.hits[0].id == v["asserted"]["first_result_id"] and res.hits[0].score > 0
    assert len(res.hits) == v["asserted"]["implied_result_count"]
    for hit, want in zip(res.hits, v["computed"]["ranking"], strict=True):
        assert hit.id == want["id"] and abs(hit.score - want["score"]) < 1e-9
    live.engine.sync_namespace(live.mem, live.mem.apply_lines(lines[2:]))
    assert live.engine.recall(v["query"], namespace=v["namespace"]).hits == []
    assert live.engine.recall("", namespace=v["namespace"]).hits == []  # no active records left


def test_vector_conformance_primitives():
    v = VECTORS["memory-conformance-primitives"]
    live = Live(v["namespace"])
    calls = [c for c in v["calls"] if c["call"] == "memory_store"]
    live.feed(*[store(f"id-{i}", c["key"], c["value"], tags=c["tags_given"], stored_at=c["options"]["now"],
                      ns=v["namespace"]) for i, c in enumerate(calls)])
    for i, c in enumerate(calls):
        rec = live.mem.get(f"id-{i}")
        assert list(rec.tags) == v["computed"]["stored_tags"][c["key"]]
        assert rec.text == v["computed"]["stored_text"][c["key"]]
    res = live.recall("rust preference", k=2)
    assert len(res.hits) == 1 and res.hits[0].key == "alice-profile"
    assert abs(res.hits[0].score - v["computed"]["recall_rust_preference"][0]["score"]) < 1e-9
    live.feed(forget(["id-0", "id-1"], ns=v["namespace"]))
    assert live.recall("rust", k=5).hits == []


def test_vector_facts_recall():
    v = VECTORS["facts-conformance-store-recall-invalidate"]
    live = Live("agent/facts")
    live.feed(*[json.loads(line) for line in v["computed"]["memory_events_jsonl_lines"]])
    res = live.recall("examples", k=v["computed"]["recall_limit_used"])
    want = v["computed"]["recall_examples_bm25"]
    assert [h.key for h in res.hits] == [w["key"] for w in want]
    for h, w in zip(res.hits, want, strict=True):
        assert abs(h.score - w["score"]) < 1e-9
    # invalidate the claim (forget by its tag): "Alice" no longer recalled
    claim = res.hits[0].id
    live.feed(forget([claim], ns="agent/facts"))
    assert live.recall("Alice", k=5).hits == []


def test_vector_real_events_file():
    v = VECTORS["memory-real-events-jsonl-coordination"]
    path = SAMPLES / v["data_file"]
    live = Live("coordination-test", str(path))
    live.engine.sync_namespace(live.mem, live.mem.apply_lines(JsonlTail(str(path)).read_new().lines))
    assert [r.id for r in live.mem.records()] == v["computed"]["active_record_ids"]
    res = live.recall(v["computed"]["recall"]["query"])
    want = v["computed"]["recall"]["results"]
    assert [h.key for h in res.hits] == [w["key"] for w in want]
    assert abs(res.hits[0].score - want[0]["score"]) < 1e-9


def test_vector_update_overlay_and_unknown():
    v = VECTORS["memory-unit-update-overlay"]
    live = Live(v["namespace"])
    live.feed(*v["events_appended_in_order"])
    assert len(live.mem.records()) == v["asserted"]["active_record_count"]
    hit = live.recall("alice").hits[0]
    assert hit.record.status == "accepted" and hit.record.flags["auto_surface"] is True
    live2 = Live(VECTORS["memory-unit-update-unknown-id"]["namespace"])
    live2.feed(*VECTORS["memory-unit-update-unknown-id"]["events_appended_in_order"])
    assert live2.recall("").hits == []


def test_vector_sanitize_cosine_and_cache(tmp_path):
    for case in VECTORS["memory-unit-sanitize-model-hint"]["asserted"]:
        assert sanitize_model_hint(case["input"]) == case["output"]
    c = VECTORS["memory-unit-cosine"]["asserted"]
    assert abs(cosine(c[0]["a"], c[0]["b"])) < 1e-9
    assert abs(cosine(c[1]["a"], c[1]["b"]) - 1) < 1e-9
    assert cosine(c[2]["a"], c[2]["b"]) == 0.0
    cache = VECTORS["memory-unit-vector-cache-roundtrip"]
    p = vector_cache_path(str(tmp_path / cache["namespace"]), cache["model_hint"], cache["hashed_text"])
    assert os.path.relpath(p, tmp_path) == cache["computed"]["relative_path"]
    assert sha256_hex(cache["hashed_text"]) == cache["computed"]["content_hash"]


def test_vector_open_last_wins_shown_and_falls_back(tmp_path):
    v = VECTORS["memory-unit-open-event-last-wins"]
    live = Live(v["namespace"], str(tmp_path / "agent/cfg/events.jsonl"))
    live.feed(*v["events_appended_in_order"], store("m1", "alice", "alice likes rust", ns=v["namespace"]))
    res = live.recall("rust")
    assert res.config["backend"] == "hybrid" and res.config["bm25_weight"] == 0.4
    assert res.config["cosine_weight"] == 0.6 and res.config["embed_dim"] == 3
    assert res.mode == "lexical" and "lexical" in res.note and "no usable vector" in res.note
    md = render_recall_markdown(res, "rust", v["namespace"])
    assert "backend **hybrid**" in md and "bm25 0.4 / cosine 0.6" in md and "lexical" in md


# ---------------------------------------------------------------------------
# Semantic / hybrid from the vector cache
# ---------------------------------------------------------------------------


def _write_vec(ns_dir: Path, hint: str, text: str, vec: list[float]) -> None:
    p = Path(vector_cache_path(str(ns_dir), hint, text))
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(serde_compact({"model": hint, "dim": len(vec), "vector": vec}))


def test_semantic_and_hybrid_with_cached_vectors(tmp_path):
    ns_dir = tmp_path / "vec"
    live = Live("vec", str(ns_dir / "events.jsonl"))
    live.feed({"type": "open", "id": "o", "namespace": "vec", "backend": "vector", "embed_model_hint": "m/1",
               "embed_dim": 2, "opened_at": "2026-01-01T00:00:00Z"},
              store("a", "alpha", "rust code", ns="vec"), store("b", "beta", "python code", ns="vec"),
              store("c", "gamma", "cooking", ns="vec"))
    vecs = {"a": [1.0, 0.0], "b": [0.6, 0.8], "c": [-1.0, 0.0]}
    for rid, vec in vecs.items():
        _write_vec(ns_dir, "m/1", searchable_text(live.mem.get(rid)), vec)
    _write_vec(ns_dir, "m/1", "rust", [1.0, 1.0])
    res = live.recall("rust", explain=True)
    assert res.mode == "semantic" and res.note == ""
    # cos(q, a) = 1/sqrt2 = 0.70711; cos(q, b) = 1.4/sqrt2 = 0.98995; c negative -> dropped
    assert [h.id for h in res.hits] == ["b", "a"]
    assert res.hits[0].score == pytest.approx(1.4 / math.sqrt(2), abs=1e-12)
    assert res.hits[1].explain.cosine == pytest.approx(1 / math.sqrt(2), abs=1e-12)

    live.feed({"type": "open", "id": "o2", "namespace": "vec", "backend": "hybrid", "embed_model_hint": "m/1",
               "embed_dim": 2, "bm25_weight": 0.4, "cosine_weight": 0.6, "opened_at": "2026-01-02T00:00:00Z"})
    res = live.recall("rust", explain=True)
    assert res.mode == "hybrid"
    # lexical: only "a" has "rust" (tf 2 in text + JSON copy, dl 5, N 3, df 1)
    lex_a = live.engine.indexes["vec"].lexical_scores(["rust"])[live.mem.get("a").seq]
    want_a = 0.4 * (lex_a / max(1.0, lex_a)) + 0.6 * (1 / math.sqrt(2))
    want_b = 0.4 * 0.0 + 0.6 * (1.4 / math.sqrt(2))
    got = {h.id: h.score for h in res.hits}
    assert set(got) == {"a", "b"}
    assert got["a"] == pytest.approx(want_a, abs=1e-12) and got["b"] == pytest.approx(want_b, abs=1e-12)
    assert "hybrid score" in render_recall_markdown(res, "rust", "vec")

    # A record without a cached vector -> lexical fallback, said plainly.
    live.feed(store("d", "delta", "rust again", ns="vec"))
    res = live.recall("rust")
    assert res.mode == "lexical" and "lacks vectors for 1 of 4 records" in res.note


# ---------------------------------------------------------------------------
# Ties, k, empty query, namespaces
# ---------------------------------------------------------------------------


def test_tie_breaking_stored_at_then_seq():
    live = Live()
    # identical content -> identical scores
    live.feed(store("x1", "k", "same words here", stored_at="2026-01-01T00:00:00Z"),
              store("x2", "k", "same words here", stored_at="2026-01-03T00:00:00Z"),
              store("x3", "k", "same words here", stored_at="2026-01-02T00:00:00Z"),
              store("x4", "k", "same words here", stored_at="2026-01-03T00:00:00Z"))
    res = live.recall("words", k=10)
    assert len({h.score for h in res.hits}) == 1
    # stored_at desc, then seq desc (x4 was appended after x2)
    assert [h.id for h in res.hits] == ["x4", "x2", "x3", "x1"]
    assert [h.id for h in live.recall("words", k=2).hits] == ["x4", "x2"]


def test_tie_across_namespaces_id_asc():
    eng = RecallEngine()
    for ns, rid in (("n1", "zz"), ("n2", "aa")):
        m = MemoryNamespace(ns, f"/nonexistent/{ns}/events.jsonl")
        eng.sync_namespace(m, m.apply_lines(lines_of([store(rid, "k", "hello world", ns=ns)])))
    res = eng.recall("hello", namespace=None)
    assert [h.id for h in res.hits] == ["aa", "zz"]  # same score, stored_at, seq -> id asc
    assert res.mode == "lexical" and set(res.namespaces) == {"n1", "n2"}


def test_namespace_none_uses_each_namespace_statistics():
    eng = RecallEngine()
    m1 = MemoryNamespace("n1", "/x/n1/events.jsonl")
    eng.sync_namespace(m1, m1.apply_lines(lines_of([store("a", "k", "rust", ns="n1"), store("b", "k", "go", ns="n1")])))
    m2 = MemoryNamespace("n2", "/x/n2/events.jsonl")
    eng.sync_namespace(m2, m2.apply_lines(lines_of([store("c", "k", "rust", ns="n2")])))
    res = eng.recall("rust", namespace=None)
    alone1 = eng.recall("rust", namespace="n1").hits[0].score
    alone2 = eng.recall("rust", namespace="n2").hits[0].score
    assert {h.id: h.score for h in res.hits} == {"a": alone1, "c": alone2}
    assert [h.id for h in res.hits] == ["a", "c"]  # n1's df=1 of N=2 beats n2's df=1 of N=1
    assert eng.recall("rust", namespace="missing").hits == []


def test_k_clamp_and_empty_query_newest_first():
    assert (clamp_k(None), clamp_k(0), clamp_k(-3), clamp_k(7), clamp_k(1000)) == (5, 1, 1, 7, 100)
    live = Live()
    live.feed(*[store(f"r{i}", "k", f"w{i} text", stored_at=f"2026-01-{1 + i % 3:02d}T00:00:00Z") for i in range(120)])
    assert len(live.recall("text", k=1000).hits) == 100
    assert len(live.recall("text", k=0).hits) == 1
    res = live.recall("  a ! ", k=4)  # no token survives -> newest first, score 0
    assert [h.score for h in res.hits] == [0.0] * 4
    assert [h.id for h in res.hits] == ["r119", "r116", "r113", "r110"]  # stored_at 01-03, seq desc


def test_forget_and_update_effects_on_statistics():
    live = Live()
    live.feed(store("a", "ka", "apple banana"), store("b", "kb", "banana cherry"), store("c", "kc", "cherry"))
    before = live.recall("banana", k=10)
    assert {h.id for h in before.hits} == {"a", "b"}
    live.feed(update("a", value="kiwi only"))
    after = live.recall("banana", k=10)
    assert [h.id for h in after.hits] == ["b"]
    assert live.recall("kiwi").hits[0].id == "a"
    idx = live.engine.indexes["t"]
    assert idx.df("banana") == 1 and idx.df("apple") == 0
    live.feed(forget(["b"]))
    assert live.recall("banana").hits == [] and idx.df("cherry") == 1
    # tombstones are permanent: re-storing b stays hidden
    live.feed(store("b", "kb", "banana again"))
    assert live.recall("banana").hits == []
    # store + forget in one batch never reaches the index
    live.feed(store("z", "kz", "zebra"), forget(["z"]))
    assert live.recall("zebra").hits == [] and idx.df("zebra") == 0


def test_render_and_json():
    live = Live()
    live.feed(store("a", "alpha|pipe", "rust `code`", tags=["t1"]))
    res = live.recall("rust", explain=True)
    out = recall_json(res)
    assert out[0].keys() >= {"id", "key", "namespace", "score", "stored_at", "tags", "sequence", "explain"}
    assert out[0]["explain"]["terms"][0]["term"] == "rust"
    assert "explain" not in recall_json(live.recall("rust"))[0]
    md = render_recall_markdown(res, "rust", "t")
    # the key is a code span in a heading (not a table: no `\|` needed); the text is escaped prose
    assert "### 1. `alpha|pipe`" in md and "| `rust` |" in md and "backend **bm25**" in md
    assert "rust \\`code\\`" in md
    assert "No record scores" in render_recall_markdown(live.recall("nothing"), "nothing", "t")


# ---------------------------------------------------------------------------
# Differential: incremental engine vs a from-scratch implementation of §C.5
# ---------------------------------------------------------------------------


def reference_recall(records: list[MemoryRecord], query: str, k: int) -> list[tuple[str, float]]:
    """Straight from the spec: rebuild everything, score every record, four stable sorts."""
    q = tokenize(query)
    k = max(1, min(100, k))
    if not q:
        ordered = sorted(records, key=lambda r: r.id)
        ordered.sort(key=lambda r: r.seq, reverse=True)
        ordered.sort(key=lambda r: r.stored_at, reverse=True)
        return [(r.id, 0.0) for r in ordered[:k]]
    docs = [tokenize(searchable_text(r)) for r in records]
    n = max(1, len(docs))
    avgdl = max(1, sum(len(d) for d in docs)) / n
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    scored = []
    for r, d in zip(records, docs, strict=True):
        bm25 = 0.0
        if d:
            dl = max(1, len(d))
            for t in q:
                tf = d.count(t)
                if tf > 0:
                    idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    bm25 += idf * tf * (1.2 + 1.0) / (tf + 1.2 * (1.0 - 0.75 + 0.75 * dl / avgdl))
        key_t = set(tokenize(r.key))
        tag_t = {x for tag in r.tags for x in tokenize(tag)}
        boost = 0.0
        for t in q:
            boost += (0.4 if t in key_t else 0.0) + (0.25 if t in tag_t else 0.0)
        score = bm25 + boost
        if score > 0:
            scored.append((score, r))
    scored.sort(key=lambda x: x[1].id)
    scored.sort(key=lambda x: x[1].seq, reverse=True)
    scored.sort(key=lambda x: x[1].stored_at, reverse=True)
    scored.sort(key=lambda x: x[0], reverse=True)
    return [(r.id, s) for s, r in scored[:k]]


WORDS = ["rust", "Rust", "python", "deploy", "staging", "a", "b", "db", "ops", "alice", "bob", "é", "École",
         "ÉCOLE", "x9", "v2", "2026", "中文", "हिन्दी", "profile", "preference", "the", "and", "cache"]
word_lists = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
values = st.one_of(word_lists, st.builds(lambda t, n: {"text": t, "n": n}, word_lists, st.integers(-5, 5)),
                   st.lists(word_lists, max_size=3))
ids = st.sampled_from([f"id{i}" for i in range(12)])
stamps = st.sampled_from([f"2026-01-0{i}T00:00:00Z" for i in range(1, 5)])
event = st.one_of(
    st.builds(lambda rid, key, v, tags, at: ("store", store(rid, key, v, tags=tags, stored_at=at)),
              ids, word_lists, values, st.lists(st.sampled_from(WORDS), max_size=3), stamps),
    st.builds(lambda rid, v: ("update", update(rid, value=v)), ids, values),
    st.builds(lambda rid, tags: ("update", update(rid, tags=sorted(set(tags)))), ids,
              st.lists(st.sampled_from(WORDS), max_size=2)),
    st.builds(lambda rid: ("forget", forget([rid])), ids),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(event, min_size=1, max_size=6), min_size=1, max_size=8),
       queries=st.lists(st.tuples(word_lists, st.integers(-2, 120)), min_size=1, max_size=4))
def test_differential_incremental_vs_reference(batches, queries):
    live = Live()
    for batch in batches:
        live.feed(*[e for _, e in batch])
        for query, k in queries:
            got = [(h.id, h.score) for h in live.recall(query, k=k).hits]
            want = reference_recall(live.mem.records(), query, k)
            assert [g[0] for g in got] == [w[0] for w in want], query
            for (_, gs), (_, ws) in zip(got, want, strict=True):
                assert abs(gs - ws) <= 1e-9
    # and a cold rebuild of the same namespace gives the same answers
    cold = RecallEngine()
    cold.load("t", live.mem.records())
    for query, k in queries:
        assert [(h.id, h.score) for h in cold.recall(query, k=k, namespace="t").hits] == \
               [(h.id, h.score) for h in live.recall(query, k=k).hits]


def test_pruned_top_k_equals_full_scoring():
    # Frequent + rare terms on a bigger corpus exercise the MaxScore path.
    import random

    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(400)]
    weights = [1 / (i + 1) for i in range(400)]
    live = Live()
    live.feed(*[store(f"r{i}", rng.choice(vocab[:50]), " ".join(rng.choices(vocab, weights, k=rng.randint(5, 40))),
                      tags=rng.sample(vocab[:20], 1), stored_at=f"2026-01-{1 + i % 28:02d}T00:00:00Z")
                for i in range(3000)])
    idx = live.engine.indexes["t"]
    for _ in range(60):
        q = tokenize(" ".join(rng.choices(vocab, weights, k=rng.randint(1, 4))))
        for k in (1, 5, 10):
            assert idx.top_lexical(q, k) == idx._top(idx.lexical_scores(q), k)
    # and against the from-scratch reference
    for query in ("w0 w1 w250", "w3 w399", "w0"):
        got = [(h.id, h.score) for h in live.recall(query, k=10).hits]
        want = reference_recall(live.mem.records(), query, 10)
        assert [g[0] for g in got] == [w[0] for w in want]
        assert all(abs(a[1] - b[1]) <= 1e-9 for a, b in zip(got, want, strict=True))


# ---------------------------------------------------------------------------
# Cross-check with rank_bm25 (Harn's idf and parameters plugged in)
# ---------------------------------------------------------------------------


def test_cross_check_rank_bm25():
    from rank_bm25 import BM25Okapi

    class HarnBM25(BM25Okapi):
        """rank_bm25's Okapi scorer with Harn's idf (never negative, no epsilon floor)."""

        def _calc_idf(self, nd):
            for word, freq in nd.items():
                self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    import random

    rng = random.Random(3)
    vocab = ["alpha", "beta", "gamma", "delta", "rust", "python", "deploy", "cache", "db", "ops", "école", "中文"]
    live = Live()
    live.feed(*[store(f"r{i}", rng.choice(vocab), " ".join(rng.choices(vocab, k=rng.randint(1, 12))),
                      tags=rng.sample(vocab, rng.randint(0, 2))) for i in range(90)])  # <= k=100: all hits
    records = live.mem.records()
    corpus = [tokenize(searchable_text(r)) for r in records]
    bm = HarnBM25(corpus, k1=1.2, b=0.75)
    for query in ("rust deploy", "alpha", "ops db école", "中文 cache cache"):
        q = tokenize(query)
        base = bm.get_scores(q)
        expected = {}
        for r, s in zip(records, base, strict=True):
            kt, tt = set(tokenize(r.key)), {x for t in r.tags for x in tokenize(t)}
            s = float(s) + sum((0.4 if t in kt else 0.0) + (0.25 if t in tt else 0.0) for t in q)
            if s > 0:
                expected[r.id] = s
        got = {h.id: h.score for h in live.recall(query, k=100).hits}
        assert got.keys() == expected.keys()
        for rid, s in got.items():
            assert abs(s - expected[rid]) < 1e-9


# ---------------------------------------------------------------------------
# numpy-backed index: analysis, bulk build, merges and compaction change nothing
# ---------------------------------------------------------------------------

from collections import Counter  # noqa: E402
from contextlib import contextmanager  # noqa: E402

from harn_ls.recall import NamespaceIndex, analyze  # noqa: E402
from harn_ls.recall import index as recall_mod  # noqa: E402
from harn_ls.recall import tokenizer as tokenizer_mod  # noqa: E402


@contextmanager
def tiny_thresholds():
    """Merge, compact and batch at every opportunity, so those paths run on small corpora."""
    saved = (recall_mod._OVERFLOW_MIN, recall_mod._DEAD_MIN, recall_mod._BATCH_MIN)
    recall_mod._OVERFLOW_MIN, recall_mod._DEAD_MIN, recall_mod._BATCH_MIN = 3, 1, 2
    try:
        yield
    finally:
        recall_mod._OVERFLOW_MIN, recall_mod._DEAD_MIN, recall_mod._BATCH_MIN = saved


TEXTS = WORDS + ['quote " inside', "back\\slash", "tab\there", "new\nline", "ctl\x01x", "naïve Ünïcode", "ab", "A",
                 "9z", "e\u0301", "𝔘𝔫𝔦", "x_y", "Ⓐb", "٣٤"]
texts = st.lists(st.sampled_from(TEXTS), max_size=6).map(" ".join)
any_values = st.one_of(texts, st.builds(lambda t, n: {"text": t, "n": n}, texts, st.integers(-5, 5)),
                       st.lists(texts, max_size=3), st.integers(-100, 100), st.none(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(key=texts, value=any_values, text=st.one_of(st.none(), texts), tags=st.lists(texts, max_size=3))
def test_analyze_equals_counting_the_tokens_of_the_searchable_text(key, value, text, tags):
    r = memory_record(id="m", namespace="t", key=key, value=value, text=value_text(value) if text is None else text,
                     tags=tuple(tags), stored_at="s", seq=0, line_no=1)
    counts, n = analyze(r)
    tokens = tokenize(searchable_text(r))
    assert n == len(tokens)
    assert {t: v & recall_mod._TF_MASK for t, v in counts.items()} == Counter(tokens)
    key_t, tag_t = set(tokenize(r.key)), {x for tag in r.tags for x in tokenize(tag)}
    for t, v in counts.items():
        assert bool(v & tokenizer_mod._KEY_FLAG) == (t in key_t) and bool(v & tokenizer_mod._TAG_FLAG) == (t in tag_t)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(event, min_size=1, max_size=6), min_size=1, max_size=8),
       queries=st.lists(st.tuples(word_lists, st.integers(-2, 120)), min_size=1, max_size=4))
def test_differential_with_constant_merging_and_compaction(batches, queries):
    with tiny_thresholds():
        test_differential_incremental_vs_reference.hypothesis.inner_test(batches, queries)


def _corpus(n: int, seed: int) -> list[dict]:
    import random

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(300)]
    return [store(f"r{i}", rng.choice(vocab[:40]) + f"-{i % 7}",
                  rng.choice([" ".join(rng.choices(vocab, weights, k=rng.randint(0, 30))),
                              {"text": " ".join(rng.choices(vocab, weights, k=rng.randint(1, 20))), "n": i}]),
                  tags=rng.sample(vocab[:15], rng.randint(0, 2)), stored_at=f"2026-01-{1 + i % 5:02d}T00:00:00Z")
            for i in range(n)]


def _answers(engine: RecallEngine, ns: str, queries: list[str]) -> list:
    out = []
    for q in queries:
        for k in (1, 3, 10, 100):
            res = engine.recall(q, k=k, namespace=ns, explain=True)
            out.append([(h.id, h.score, h.explain) for h in res.hits])
    return out


def test_bulk_build_merges_and_compaction_match_one_by_one_adds():
    import random

    rng = random.Random(11)
    events = _corpus(1500, 5)
    rids = [e["id"] for e in events]
    # updates and forgets in between: dead slots, stale postings, renumbering, terms whose df drops to 0
    for i in range(0, 1500, 3):
        events.append(update(rids[i], value=f"w{rng.randint(0, 299)} w{rng.randint(0, 299)} fresh{i}"))
    events.append(forget(rng.sample(rids, 700)))
    queries = ["w0", "w1 w2 w3", "w0 w0 w299", "w5 w17", "fresh3 w0", "w250 w251 w252 w253", "w10 w11 w12"]

    one = Live()  # one event per batch: single adds, removes, no merge until the overflow is big
    for e in events:
        one.feed(e)
    many = Live()
    many.feed(*events)  # one big batch: the vectorised paths
    with tiny_thresholds():
        tiny = Live()  # merging and renumbering constantly
        for i in range(0, len(events), 37):
            tiny.feed(*events[i:i + 37])
    cold = RecallEngine()
    cold.load("t", one.mem.records())

    want = _answers(one.engine, "t", queries)
    assert want[0] and any(len(a) == 100 for a in want)
    for other in (many.engine, tiny.engine, cold):
        assert _answers(other, "t", queries) == want
    idx = one.engine.indexes["t"]
    stats = (idx.stats(), [idx.df(t) for t in ("w0", "w1", "fresh3", "w299")])
    idx.compact()
    assert (idx.stats(), [idx.df(t) for t in ("w0", "w1", "fresh3", "w299")]) == stats
    assert _answers(one.engine, "t", queries) == want
    for query in queries[:3]:  # and the spec itself
        got = [(h.id, h.score) for h in one.recall(query, k=10).hits]
        ref = reference_recall(one.mem.records(), query, 10)
        assert [g[0] for g in got] == [r[0] for r in ref]
        assert all(abs(a[1] - b[1]) <= 1e-9 for a, b in zip(got, ref, strict=True))


def test_compaction_renumbers_slots_and_forgets_dead_terms():
    with tiny_thresholds():
        idx = NamespaceIndex("n")
        recs = [memory_record(id=f"r{i}", namespace="n", key=f"k{i}", value=f"common uniq{i}", text=f"common uniq{i}",
                             tags=("tg",) if i % 2 else (), stored_at=f"2026-01-0{1 + i % 3}", seq=i, line_no=i + 1)
                for i in range(40)]
        idx.add_many(recs)
        for r in recs[:30]:
            idx.remove(r.seq)
        idx.compact()
        assert len(idx) == 10 and idx._nslots == 10 and idx._ndead == 0
        assert "uniq3" not in idx._tid and idx.df("uniq35") == 1 and idx.df("common") == 10
        assert sorted(idx.docs[s].slot for s in idx.docs) == list(range(10))
        assert set(idx.postings["common"]) == set(range(30, 40))
        assert idx.boosts["tg"] == {s: 0.25 for s in range(31, 40, 2)}
        top = idx.top_lexical(["common"], 3)
        # untagged records are shorter and score higher; equal scores: stored_at desc, then seq desc
        assert [seq for _, seq in top] == [38, 32, 34] and top[0][0] == top[2][0] > idx.top_lexical(["common"], 10)[-1][0]


def test_vectorised_scores_are_bit_identical_to_the_scalar_formula():
    live = Live()
    live.feed(*_corpus(800, 9))
    idx = live.engine.indexes["t"]
    n, avgdl = idx.stats()
    for q in (["w0"], ["w1", "w0", "w1"], ["w3", "w40", "w0", "w7"]):
        got = idx.lexical_scores(q)
        assert got
        for seq, score in got.items():
            ex = idx.explain(seq, q)  # the scalar formula, in Harn's order
            assert score == ex.lexical and ex.n_docs == n and ex.avgdl == avgdl


def test_a_remembered_vector_of_another_dimension_is_refused_like_a_read_one(tmp_path):
    """A vector kept in the namespace's memo from a read that expected no dimension must not skip the
    dimension check of a later query (the file read refuses it; the memo must say the same)."""
    import orjson

    from harn_ls.recall.vectors import _load_vector

    vdir = tmp_path / "vectors" / "m"
    vdir.mkdir(parents=True)
    (vdir / "h4.json").write_bytes(orjson.dumps({"model": "m", "dim": 4, "vector": [1, 0, 0, 0]}))
    memo: dict[str, list[float]] = {}
    assert _load_vector(memo, str(vdir), "h4", None) == ([1.0, 0.0, 0.0, 0.0], "")
    assert "h4" in memo
    from_file = _load_vector({}, str(vdir), "h4", 3)
    from_memo = _load_vector(memo, str(vdir), "h4", 3)
    assert from_file == from_memo == (None, "dimension mismatch: 4 vs 3 (Harn reports an error)")
    assert _load_vector(memo, str(vdir), "h4", 4) == ([1.0, 0.0, 0.0, 0.0], "")
