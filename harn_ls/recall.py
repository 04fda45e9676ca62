"""Memory recall with Harn's exact ranking (harn-formats §C.5/§C.6).

Pure core: no pygls, never writes. One `NamespaceIndex` per namespace holds an
inverted index over the namespace's *active* records and is updated from the
`MemoryDelta`s that `MemoryNamespace.apply_lines` returns, so an appended line
costs O(tokens of the records it touches), never a rebuild.

Scoring replicates Harn's `score_records`/`score_bm25` term by term, in the
same order of floating-point operations as the formula is written (query
terms summed in query order, duplicates included; the field boosts summed
separately and then added), so exact ties in Harn are exact ties here too:

    idf   = ln(1 + (N - df + 0.5) / (df + 0.5))
    bm25 += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    boost = sum over query terms of (0.4 if term in key tokens) + (0.25 if in tag tokens)

Only documents containing at least one query term are visited (postings of
the query terms). That is complete: every key/tag token is also a token of
the searchable text (`key \\n text \\n tags \\n value`), so a record with a
boost is always in the postings, and a record outside them scores 0 and is
dropped by Harn's `score > 0` rule. idf is always > 0, so every visited
record scores > 0.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import compress
from operator import add
from typing import Any, Iterable, Literal

from harn_ls.formats.harn_json import serde_compact, sha256_hex
from harn_ls.formats.memory import DEFAULT_CONFIG, MemoryDelta, MemoryRecord

K1 = 1.2
B = 0.75
KEY_BOOST = 0.4
TAG_BOOST = 0.25
DEFAULT_K = 5
MAX_K = 100

Mode = Literal["lexical", "semantic", "hybrid", "mixed"]

# --------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------
# Rust's `char::is_alphanumeric` is Unicode Alphabetic ∪ Numeric (Nd/Nl/No).
# Python's `str.isalnum` (= regex `[^\W_]`) covers a strict subset of that:
# it misses the Other_Alphabetic combining marks (Indic vowel signs such as
# U+093F "ि", Hebrew points, Arabic harakat, circled letters Ⓐ, ...) and
# letters assigned after Python's Unicode version (14.0 on 3.11). Without
# them "हिन्दी" would split into different tokens than Harn's. The table
# below is exactly (Alphabetic ∪ N) minus isalnum, generated once from the
# `regex` module's Unicode tables (Unicode 16/17; a Rust toolchain on an
# older Unicode may still split on the handful of letters new in 17).
# There are no code points where Python says alphanumeric and Rust does not.
_RUST_ONLY_ALNUM = """
    345 363-36F 5B0-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-657 659-65F 670 6D6-6DC 6E1-6E4
    6E7-6E8 6ED 711 730-73F 7A6-7B0 816-817 81B-823 825-827 829-82C 88F 897 8D4-8DF 8E3-8E9
    8F0-903 93A-93B 93E-94C 94E-94F 955-957 962-963 981-983 9BE-9C4 9C7-9C8 9CB-9CC 9D7 9E2-9E3
    A01-A03 A3E-A42 A47-A48 A4B-A4C A51 A70-A71 A75 A81-A83 ABE-AC5 AC7-AC9 ACB-ACC AE2-AE3 AFA-
    AFC B01-B03 B3E-B44 B47-B48 B4B-B4C B56-B57 B62-B63 B82 BBE-BC2 BC6-BC8 BCA-BCC BD7 C00-C04
    C3E-C44 C46-C48 C4A-C4C C55-C56 C5C C62-C63 C81-C83 CBE-CC4 CC6-CC8 CCA-CCC CD5-CD6 CDC
    CE2-CE3 CF3 D00-D03 D3E-D44 D46-D48 D4A-D4C D57 D62-D63 D81-D83 DCF-DD4 DD6 DD8-DDF DF2-DF3
    E31 E34-E3A E4D EB1 EB4-EB9 EBB-EBC ECD F71-F83 F8D-F97 F99-FBC 102B-1036 1038 103B-103E
    1056-1059 105E-1060 1062-1064 1067-106D 1071-1074 1082-108D 108F 109A-109D 1712-1713
    1732-1733 1752-1753 1772-1773 17B6-17C8 1885-1886 18A9 1920-192B 1930-1938 1A17-1A1B
    1A55-1A5E 1A61-1A74 1ABF-1AC0 1ACC-1ACE 1B00-1B04 1B35-1B43 1B80-1B82 1BA1-1BA9 1BAC-1BAD
    1BE7-1BF1 1C24-1C36 1C89-1C8A 1DD3-1DF4 24B6-24E9 2DE0-2DFF A674-A67B A69E-A69F A7CB-A7CF
    A7D2 A7D4 A7DA-A7DC A7F1 A802 A80B A823-A827 A880-A881 A8B4-A8C3 A8C5 A8FF A926-A92A
    A947-A952 A980-A983 A9B4-A9BF A9E5 AA29-AA36 AA43 AA4C-AA4D AA7B-AA7D AAB0 AAB2-AAB4
    AAB7-AAB8 AABE AAEB-AAEF AAF5 ABE3-ABEA FB1E 10376-1037A 105C0-105F3 10940-10959 10A01-10A03
    10A05-10A06 10A0C-10A0F 10D24-10D27 10D40-10D65 10D69 10D6F-10D85 10EAB-10EAC 10EC2-10EC7
    10EFA-10EFC 11000-11002 11038-11045 11073-11074 11080-11082 110B0-110B8 110C2 11100-11102
    11127-11132 11145-11146 11180-11182 111B3-111BF 111CE-111CF 1122C-11234 11237 1123E-11241
    112DF-112E8 11300-11303 1133E-11344 11347-11348 1134B-1134C 11357 11362-11363 11380-11389
    1138B 1138E 11390-113B5 113B7-113C0 113C2 113C5 113C7-113CA 113CC-113CD 113D1 113D3
    11435-11441 11443-11445 114B0-114C1 115AF-115B5 115B8-115BE 115DC-115DD 11630-1163E 11640
    116AB-116B5 116D0-116E3 1171D-1172A 1182C-11838 11930-11935 11937-11938 1193B-1193C 11940
    11942 119D1-119D7 119DA-119DF 119E4 11A01-11A0A 11A35-11A39 11A3B-11A3E 11A51-11A5B
    11A8A-11A97 11B60-11B67 11BC0-11BE0 11BF0-11BF9 11C2F-11C36 11C38-11C3E 11C92-11CA7
    11CA9-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D41 11D43 11D47 11D8A-11D8E 11D90-11D91
    11D93-11D96 11DB0-11DDB 11DE0-11DE9 11EF3-11EF6 11F00-11F10 11F12-11F3A 11F3E-11F40
    11F50-11F59 1342F 13441-13446 13460-143FA 16100-1612E 16130-16139 16D40-16D6C 16D70-16D79
    16EA0-16EB8 16EBB-16ED3 16F4F 16F51-16F87 16F8F-16F92 16FF0-16FF6 187F8-187FF 18CFF
    18D09-18D1E 18D80-18DF2 1B132 1B155 1BC9E 1CCF0-1CCF9 1D2C0-1D2D3 1DF25-1DF2A 1E000-1E006
    1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E030-1E06D 1E08F 1E4D0-1E4EB 1E4F0-1E4F9
    1E5D0-1E5ED 1E5F0-1E5FA 1E6C0-1E6DE 1E6E0-1E6F5 1E6FE-1E6FF 1E947 1F130-1F149 1F150-1F169
    1F170-1F189 2B739-2B73F 2CEA2-2CEAD 2EBF0-2EE5D 31350-33479
"""


def _extra_class(table: str) -> str:
    parts = []
    for item in table.split():
        lo, _, hi = item.partition("-")
        parts.append(re.escape(chr(int(lo, 16))) + ("-" + re.escape(chr(int(hi, 16))) if hi else ""))
    return "".join(parts)


_EXTRA = _extra_class(_RUST_ONLY_ALNUM)
# ASCII-only text (the common case) cannot contain any of the extra code
# points, and every 1-char ASCII token is 1 UTF-8 byte: `{2,}` drops it while
# still splitting there (a maximal run of length 1 simply does not match).
_ASCII_TOKEN = re.compile(r"[^\W_]{2,}")
_UNICODE_TOKEN = re.compile(r"(?:[^\W_]|[" + _EXTRA + r"])+")
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def is_token_char(ch: str) -> bool:
    """Rust `char::is_alphanumeric` for one character."""
    return bool(_UNICODE_TOKEN.fullmatch(ch))


def tokenize(text: str) -> list[str]:
    """Harn's `tokenize`: split on non-alphanumerics, ASCII-lowercase, drop 1-byte tokens."""
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    # str.lower would also fold non-ASCII letters; Harn keeps their case.
    toks = _UNICODE_TOKEN.findall(text.translate(_ASCII_LOWER))
    return [t for t in toks if len(t) > 1 or ord(t) > 0x7F]


def searchable_text(record: MemoryRecord) -> str:
    """`key \\n text \\n tags joined by space \\n compact JSON of value` (§C.5)."""
    return "\n".join((record.key, record.text, " ".join(record.tags), serde_compact(record.value)))


def sanitize_model_hint(hint: str | None) -> str:
    """Harn's cache directory name for a model hint: keep [A-Za-z0-9_-], others -> `_`."""
    out = "".join(c if (c.isascii() and c.isalnum()) or c in "-_" else "_" for c in hint or "")
    return out or "default"


def clamp_k(k: int | None) -> int:
    if k is None:
        return DEFAULT_K
    return max(1, min(MAX_K, int(k)))


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TermExplain:
    term: str
    count: int  # occurrences in the query (Harn does not deduplicate)
    tf: int
    df: int
    idf: float
    contribution: float  # BM25 part of this term, summed over its occurrences
    key_boost: float  # summed over occurrences
    tag_boost: float


@dataclass(frozen=True, slots=True)
class Explain:
    terms: tuple[TermExplain, ...]
    bm25: float
    key_boost: float
    tag_boost: float
    lexical: float  # bm25 + boosts: Harn's lexical score
    dl: int
    avgdl: float
    n_docs: int
    cosine: float | None = None  # semantic / hybrid only
    lexical_norm: float | None = None  # hybrid: lexical / max(1, max lexical)
    bm25_weight: float | None = None
    cosine_weight: float | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "terms": [
                {"term": t.term, "count": t.count, "tf": t.tf, "df": t.df, "idf": t.idf,
                 "contribution": t.contribution, "key_boost": t.key_boost, "tag_boost": t.tag_boost}
                for t in self.terms
            ],
            "bm25": self.bm25, "key_boost": self.key_boost, "tag_boost": self.tag_boost,
            "lexical": self.lexical, "dl": self.dl, "avgdl": self.avgdl, "n_docs": self.n_docs,
        }
        if self.cosine is not None:
            out["cosine"] = self.cosine
        if self.lexical_norm is not None:
            out.update(lexical_norm=self.lexical_norm, bm25_weight=self.bm25_weight, cosine_weight=self.cosine_weight)
        return out


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    key: str
    namespace: str
    score: float
    stored_at: str
    tags: tuple[str, ...]
    seq: int
    record: MemoryRecord
    explain: Explain | None = None


@dataclass(frozen=True, slots=True)
class NamespaceOutcome:
    mode: Mode
    note: str
    config: dict
    count: int  # active records


@dataclass(frozen=True, slots=True)
class RecallResult:
    hits: list[Hit]
    mode: Mode  # "mixed" only when namespace=None spans namespaces ranked differently
    note: str  # empty, or why the configured backend could not be used
    config: dict | None  # the queried namespace's config (None across namespaces)
    query_terms: tuple[str, ...] = ()
    k: int = DEFAULT_K
    namespaces: dict[str, NamespaceOutcome] = field(default_factory=dict)


def _tie_sort(hits: list[Hit]) -> list[Hit]:
    """Harn's order: score desc, stored_at desc (string), seq desc, id asc (stable passes)."""
    hits = sorted(hits, key=lambda h: (h.id, h.namespace))
    hits.sort(key=lambda h: h.seq, reverse=True)
    hits.sort(key=lambda h: h.stored_at, reverse=True)
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits


# --------------------------------------------------------------------------
# Per-namespace index
# --------------------------------------------------------------------------


class _Doc:
    __slots__ = ("record", "ntokens", "terms", "vec_hash")

    def __init__(self, record: MemoryRecord, ntokens: int, terms: tuple[str, ...] | None = None) -> None:
        self.record = record
        self.ntokens = ntokens
        self.terms = terms  # unused (None): remove() re-tokenizes the record
        self.vec_hash: str | None = None  # sha256 of the searchable text, computed lazily


_intern = sys.intern
_DL_MASK = (1 << 32) - 1
# Harn's per-query-term field boost, `(0.4 if in key) + (0.25 if in tags)`,
# stored per posting as the float Harn adds; explain maps it back.
_BOOST = {(ik, it): (KEY_BOOST if ik else 0.0) + (TAG_BOOST if it else 0.0)
          for ik in (False, True) for it in (False, True)}
_BOOST_PARTS = {v: k for k, v in _BOOST.items()}


def _merge_add(acc: dict[int, float], part: dict[int, float]) -> None:
    """acc[s] = acc.get(s, 0.0) + part[s] for every s in part, as C-level bulk operations."""
    common = acc.keys() & part.keys()
    if len(common) < len(part):
        fresh = part.keys() - common
        acc.update(zip(fresh, map(part.__getitem__, fresh)))
    if common:
        acc.update(zip(common, map(add, map(acc.__getitem__, common), map(part.__getitem__, common))))


class NamespaceIndex:
    """Inverted index over one namespace's active records; docs keyed by event sequence.

    A posting value packs `tf << 32 | dl` (dl = max(1, record tokens)): the
    BM25 part of a term depends only on that pair, and records share few
    distinct pairs, so a query computes the formula once per distinct pair
    and maps it onto the postings at C speed (dict/zip/map) instead of one
    Python-level evaluation per record. Packed values are shared objects
    (`_canon`), so this costs no memory per posting.
    """

    def __init__(self, namespace: str, config: dict | None = None, ns_dir: str | None = None) -> None:
        self.namespace = namespace
        self.config: dict = dict(config) if config else dict(DEFAULT_CONFIG)
        self.ns_dir = ns_dir  # `<memory root>/<namespace>`, for the vector cache
        self.postings: dict[str, dict[int, int]] = {}  # term -> {seq: tf << 32 | dl}
        self.boosts: dict[str, dict[int, float]] = {}  # term -> {seq: Harn's per-term field boost}
        self.docs: dict[int, _Doc] = {}
        self.total_tokens = 0
        self._canon: dict[int, int] = {}
        self._vectors: dict[str, list[float]] = {}  # content hash -> cached vector

    def __len__(self) -> int:
        return len(self.docs)

    # -- maintenance ---------------------------------------------------------
    def add(self, record: MemoryRecord) -> None:
        seq = record.seq
        if seq in self.docs:
            self.remove(seq)
        tokens = tokenize(searchable_text(record))
        dl = max(1, len(tokens))
        postings = self.postings
        get = postings.get
        canon = self._canon.setdefault
        v1 = (1 << 32) | dl
        v1 = canon(v1, v1)  # most terms occur once in a record
        # Counter counts in C; the doc keeps no term list (remove() re-tokenizes the
        # record instead): that list cost ~60 pointers per record and an intern per token.
        for t, n in Counter(tokens).items():
            if n == 1:
                v = v1
            else:
                v = (n << 32) | dl
                v = canon(v, v)
            p = get(t)
            if p is None:
                postings[t] = {seq: v}
            else:
                p[seq] = v
        key_terms = set(tokenize(record.key))
        tag_terms = {t for tag in record.tags for t in tokenize(tag)}
        if key_terms or tag_terms:
            boosts = self.boosts
            for t in key_terms | tag_terms:
                b = boosts.get(t)
                if b is None:
                    boosts[t] = b = {}
                b[seq] = _BOOST[(t in key_terms, t in tag_terms)]
        self.docs[seq] = _Doc(record, len(tokens), None)
        self.total_tokens += len(tokens)

    def remove(self, seq: int) -> MemoryRecord | None:
        doc = self.docs.pop(seq, None)
        if doc is None:
            return None
        for t in set(tokenize(searchable_text(doc.record))):  # the same terms add() indexed
            p = self.postings[t]
            del p[seq]
            if not p:
                del self.postings[t]
            b = self.boosts.get(t)
            if b is not None and b.pop(seq, None) is not None and not b:
                del self.boosts[t]
        self.total_tokens -= doc.ntokens
        if doc.vec_hash is not None:
            self._vectors.pop(doc.vec_hash, None)  # content-addressed: a twin simply reloads it
        return doc.record

    def apply(self, delta: MemoryDelta) -> None:
        """Apply one batch. Removed and added lists are netted by identity first:
        a record stored (or updated) and forgotten within the same batch never
        existed for us, and an update replaces the record at the same sequence."""
        added_ids = {id(r) for r in delta.added}
        removed_ids = {id(r) for r in delta.removed}
        for r in delta.removed:
            if id(r) not in added_ids:
                self.remove(r.seq)
        for r in delta.added:
            if id(r) not in removed_ids:
                self.add(r)

    def records(self) -> list[MemoryRecord]:
        return [d.record for d in self.docs.values()]

    # -- statistics ----------------------------------------------------------
    def stats(self) -> tuple[int, float]:
        """(N, avgdl) exactly as Harn computes them."""
        n = max(1, len(self.docs))
        return n, max(1, self.total_tokens) / n

    def df(self, term: str) -> int:
        return len(self.postings.get(term, ()))

    def tf(self, term: str, seq: int) -> int:
        return self.postings.get(term, {}).get(seq, 0) >> 32

    # -- lexical scoring -----------------------------------------------------
    def _term_scores(self, term: str, n: int, avgdl: float) -> dict[int, float]:
        post = self.postings.get(term)
        if not post:
            return {}
        df = len(post)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        part: dict[int, float] = {}
        for v in set(post.values()):
            tf = v >> 32
            dl = v & _DL_MASK
            part[v] = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))
        return dict(zip(post.keys(), map(part.__getitem__, post.values())))

    def lexical_scores(self, q: list[str]) -> dict[int, float]:
        """seq -> Harn lexical score for every record with score > 0.

        Summation follows Harn: BM25 parts added term by term in query order
        (duplicates included), the field boosts summed the same way, then
        `bm25 + boost`."""
        n, avgdl = self.stats()
        memo: dict[str, dict[int, float]] = {}
        acc: dict[int, float] | None = None
        owned = False
        for term in q:
            part = memo.get(term)
            if part is None:
                part = memo[term] = self._term_scores(term, n, avgdl)
            if not part:
                continue
            if acc is None:
                acc, owned = part, False
            else:
                if not owned:
                    acc, owned = dict(acc), True
                _merge_add(acc, part)
        if acc is None:
            return {}
        boost: dict[int, float] | None = None
        bowned = False
        for term in q:
            b = self.boosts.get(term)
            if not b:
                continue
            if boost is None:
                boost, bowned = b, False
            else:
                if not bowned:
                    boost, bowned = dict(boost), True
                _merge_add(boost, b)
        if boost:
            if not owned:
                acc = dict(acc)
            _merge_add(acc, boost)
        return acc

    def _restricted(self, table: dict[str, dict[int, Any]], term: str, cand: set[int]) -> dict[int, Any]:
        full = table.get(term)
        if not full:
            return {}
        if len(full) <= len(cand) and cand.issuperset(full.keys()):
            return full
        common = cand & full.keys()
        return dict(zip(common, map(full.__getitem__, common)))

    def candidate_scores(self, q: list[str], k: int) -> dict[int, float]:
        """Exact Harn scores for a set of records that provably holds the top k.

        MaxScore-style pruning: take the rarest query terms as "essential",
        score exactly every record containing one of them, and stop when the
        k-th best of those beats an upper bound on what any other record can
        reach with the remaining (frequent, low-idf) terms: per occurrence,
        `idf·(k1+1)` (tf/(tf+norm) < 1) plus the largest field boost. Records
        outside the candidates then score strictly less than k candidates, so
        the top k (tie-breaks included) is unchanged. Falls back to scoring
        every matching record when the bound does not bite."""
        counts: dict[str, int] = {}
        for t in q:
            counts[t] = counts.get(t, 0) + 1
        terms = sorted((t for t in counts if t in self.postings), key=lambda t: len(self.postings[t]))
        if len(terms) < 2:
            return self.lexical_scores(q)
        n, avgdl = self.stats()
        ub = {}
        for t in terms:
            df = len(self.postings[t])
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            b = self.boosts.get(t)
            ub[t] = counts[t] * (idf * (K1 + 1.0) + (max(b.values()) if b else 0.0))
        cand: set[int] = set()
        for j in range(1, len(terms)):
            cand.update(self.postings[terms[j - 1]].keys())
            if len(cand) * 2 > n:
                break  # candidates are most records: scoring everything is cheaper
            rest = sum(ub[t] for t in terms[j:])
            if rest >= 0.7 * max(ub[t] for t in terms[:j]):
                continue  # the k-th best candidate cannot beat `rest`: skip a futile scoring pass
            scores = self._scores_on(q, cand, n, avgdl)
            if len(scores) >= k:
                kth = heapq.nlargest(k, scores.values())[-1]
                if rest * (1.0 + 1e-9) < kth:
                    return scores
        return self.lexical_scores(q)

    def _scores_on(self, q: list[str], cand: set[int], n: int, avgdl: float) -> dict[int, float]:
        """lexical_scores restricted to `cand`, same summation order."""
        memo: dict[str, dict[int, float]] = {}
        acc: dict[int, float] | None = None
        for term in q:
            part = memo.get(term)
            if part is None:
                post = self._restricted(self.postings, term, cand)
                part = {}
                if post:
                    df = len(self.postings[term])
                    idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                    val: dict[int, float] = {}
                    for v in set(post.values()):
                        tf = v >> 32
                        dl = v & _DL_MASK
                        val[v] = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))
                    part = dict(zip(post.keys(), map(val.__getitem__, post.values())))
                memo[term] = part
            if part:
                if acc is None:
                    acc = dict(part)
                else:
                    _merge_add(acc, part)
        if acc is None:
            return {}
        boost: dict[int, float] | None = None
        for term in q:
            b = self._restricted(self.boosts, term, cand)
            if b:
                if boost is None:
                    boost = dict(b)
                else:
                    _merge_add(boost, b)
        if boost:
            _merge_add(acc, boost)
        return acc

    def explain(self, seq: int, q: list[str]) -> Explain:
        n, avgdl = self.stats()
        doc = self.docs[seq]
        dl = max(1, doc.ntokens)
        counts: dict[str, int] = {}
        for t in q:
            counts[t] = counts.get(t, 0) + 1
        bm25 = 0.0
        boost = 0.0
        per_term: dict[str, float] = {}
        for t in q:  # same formula and order as scoring, so `lexical` equals the hit's score
            post = self.postings.get(t, {})
            tf = post.get(seq, 0) >> 32
            if tf:
                df = len(post)
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                c = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))
                bm25 += c
                per_term[t] = per_term.get(t, 0.0) + c
        for t in q:
            boost += self.boosts.get(t, {}).get(seq, 0.0)
        terms: list[TermExplain] = []
        kb_total = tb_total = 0.0
        for t, count in counts.items():
            post = self.postings.get(t, {})
            in_key, in_tag = _BOOST_PARTS[self.boosts.get(t, {}).get(seq, 0.0)]
            kb = KEY_BOOST * count if in_key else 0.0
            tb = TAG_BOOST * count if in_tag else 0.0
            kb_total += kb
            tb_total += tb
            df = len(post)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            terms.append(TermExplain(t, count, post.get(seq, 0) >> 32, df, idf, per_term.get(t, 0.0), kb, tb))
        return Explain(tuple(terms), bm25, kb_total, tb_total, bm25 + boost, dl, avgdl, n)

    def top_lexical(self, q: list[str], k: int) -> list[tuple[float, int]]:
        """Top k (score, seq) in Harn order; ties at the cut are resolved exactly."""
        return self._top(self.candidate_scores(q, k), k)

    def _top(self, scores: dict[int, float], k: int) -> list[tuple[float, int]]:
        if not scores:
            return []
        if len(scores) > k:
            # The k-th best *distinct* score bounds the cut from below; records
            # share few distinct scores, so this stays a C-level pass. Only the
            # records at or above it get the full tie-break key.
            distinct = set(scores.values())
            kth = min(distinct) if len(distinct) <= k else heapq.nlargest(k, distinct)[-1]
            keys = list(compress(scores.keys(), map(kth.__le__, scores.values())))
        else:
            keys = list(scores)
        docs = self.docs
        # seq is unique within a namespace, so id never decides here.
        return heapq.nlargest(k, ((scores[s], s) for s in keys),
                              key=lambda x: (x[0], docs[x[1]].record.stored_at, x[1]))

    def newest(self, k: int) -> list[int]:
        docs = self.docs
        return heapq.nlargest(k, docs, key=lambda seq: (docs[seq].record.stored_at, seq))

    # -- vectors (§C.6) ------------------------------------------------------
    def _vector_dir(self) -> str | None:
        if not self.ns_dir:
            return None
        return os.path.join(self.ns_dir, "vectors", sanitize_model_hint(self.config.get("embed_model_hint")))

    def _load_vector(self, content_hash: str, expect_dim: int | None) -> tuple[list[float] | None, str]:
        if content_hash in self._vectors and self._vectors[content_hash] is not None:
            return self._vectors[content_hash], ""
        vdir = self._vector_dir()
        if vdir is None:
            return None, "no namespace directory known"
        vec, why = read_cached_vector(os.path.join(vdir, content_hash + ".json"), expect_dim)
        if vec is not None:
            self._vectors[content_hash] = vec
        return vec, why

    def cached_vectors(self, query: str) -> tuple[list[float] | None, dict[int, list[float]] | None, str]:
        """(query vector, seq -> record vector, reason) — vectors None when the cache lacks any."""
        dim = self.config.get("embed_dim")
        dim = dim if isinstance(dim, int) and dim > 0 else None
        qv, why = self._load_vector(sha256_hex(query), dim)
        if qv is None:
            return None, None, f"the embedding cache has no usable vector for this query ({why})"
        dim = dim or len(qv)
        out: dict[int, list[float]] = {}
        missing = 0
        first_why = ""
        for seq, doc in self.docs.items():
            if doc.vec_hash is None:
                doc.vec_hash = sha256_hex(searchable_text(doc.record))
            v, why = self._load_vector(doc.vec_hash, dim)
            if v is None:
                missing += 1
                first_why = first_why or f"{doc.record.id}: {why}"
            else:
                out[seq] = v
        if missing:
            return qv, None, (f"the embedding cache lacks vectors for {missing} of {len(self.docs)} records "
                              f"(first: {first_why})")
        return qv, out, ""


# --------------------------------------------------------------------------
# Vector cache and cosine (§C.5 semantic / hybrid, §C.6 file layout)
# --------------------------------------------------------------------------


def vector_cache_path(ns_dir: str, model_hint: str | None, text: str) -> str:
    """`<ns dir>/vectors/<sanitized hint>/<sha256(text)>.json`; text = searchable text or raw query."""
    return os.path.join(ns_dir, "vectors", sanitize_model_hint(model_hint), sha256_hex(text) + ".json")


def read_cached_vector(path: str, expect_dim: int | None = None) -> tuple[list[float] | None, str]:
    """Read one cache file `{"model", "dim", "vector"}`; (None, reason) when unusable."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except FileNotFoundError:
        return None, "not cached"
    except (OSError, ValueError) as exc:
        return None, f"unreadable cache file ({exc.__class__.__name__})"
    if not isinstance(data, dict) or not isinstance(data.get("vector"), list):
        return None, "cache file without a vector list"
    vec = data["vector"]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vec):
        return None, "cache file vector has non-numbers"
    dim = data.get("dim")
    if isinstance(dim, int) and dim != len(vec):
        return None, f"cache file says dim={dim} but holds {len(vec)} numbers"
    if expect_dim is not None and len(vec) != expect_dim:
        return None, f"dimension mismatch: {len(vec)} vs {expect_dim} (Harn reports an error)"
    return [float(x) for x in vec], ""


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity; 0.0 when either vector has zero norm (Harn's convention)."""
    dot = 0.0
    na = 0.0
    nb = 0.0
    for x, y in zip(a, b):
        dot += x * y
        na += x * x
        nb += y * y
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (math.sqrt(na) * math.sqrt(nb))


# --------------------------------------------------------------------------
# Engine: all namespaces
# --------------------------------------------------------------------------

_BACKEND_MODE: dict[str, Mode] = {"bm25": "lexical", "vector": "semantic", "hybrid": "hybrid"}


class RecallEngine:
    """One `NamespaceIndex` per namespace; feed it every `MemoryDelta`."""

    def __init__(self) -> None:
        self.indexes: dict[str, NamespaceIndex] = {}

    def _index(self, namespace: str) -> NamespaceIndex:
        idx = self.indexes.get(namespace)
        if idx is None:
            idx = self.indexes[namespace] = NamespaceIndex(namespace)
        return idx

    def apply(self, namespace: str, delta: MemoryDelta, config: dict | None = None, ns_dir: str | None = None) -> None:
        idx = self._index(namespace)
        if config is not None:
            idx.config = dict(config)
        if ns_dir is not None:
            idx.ns_dir = ns_dir
        idx.apply(delta)

    def set_config(self, namespace: str, config: dict, ns_dir: str | None = None) -> None:
        idx = self._index(namespace)
        idx.config = dict(config)
        if ns_dir is not None:
            idx.ns_dir = ns_dir

    def load(self, namespace: str, records: Iterable[MemoryRecord], config: dict | None = None,
             ns_dir: str | None = None) -> None:
        """(Re)build one namespace from scratch, e.g. after its log was truncated or replaced."""
        idx = self.indexes[namespace] = NamespaceIndex(namespace, config, ns_dir)
        for r in records:
            idx.add(r)

    def sync_namespace(self, mem_ns: Any, delta: MemoryDelta) -> None:
        """Convenience for a `MemoryNamespace`: its config and directory travel with the delta."""
        self.apply(mem_ns.namespace, delta, mem_ns.config, os.path.dirname(mem_ns.path))

    def drop(self, namespace: str) -> None:
        self.indexes.pop(namespace, None)

    def namespaces(self) -> list[str]:
        return sorted(self.indexes)

    # -- recall --------------------------------------------------------------
    def recall(self, query: str, k: int | None = DEFAULT_K, namespace: str | None = None,
               explain: bool = False) -> RecallResult:
        k = clamp_k(k)
        q = tokenize(query)
        if namespace is not None:
            idx = self.indexes.get(namespace)
            if idx is None:
                return RecallResult([], "lexical", f"no memory namespace {namespace!r}", None, tuple(q), k, {})
            hits, outcome = self._recall_one(idx, query, q, k, explain)
            return RecallResult(hits, outcome.mode, outcome.note, outcome.config, tuple(q), k, {namespace: outcome})
        # Across namespaces: each ranked with its own statistics, then merged.
        hits: list[Hit] = []
        outcomes: dict[str, NamespaceOutcome] = {}
        for name in sorted(self.indexes):
            ns_hits, outcomes[name] = self._recall_one(self.indexes[name], query, q, k, explain)
            hits.extend(ns_hits)
        if q or any(o.mode != "lexical" for o in outcomes.values()):
            hits = _tie_sort(hits)[:k]
        else:
            hits = _newest_sort(hits)[:k]
        modes = {o.mode for o in outcomes.values()} or {"lexical"}
        mode: Mode = modes.pop() if len(modes) == 1 else "mixed"
        note = "; ".join(f"{name}: {o.note}" for name, o in outcomes.items() if o.note)
        return RecallResult(hits, mode, note, None, tuple(q), k, outcomes)

    def _recall_one(self, idx: NamespaceIndex, query: str, q: list[str], k: int,
                    explain: bool) -> tuple[list[Hit], NamespaceOutcome]:
        config = dict(idx.config)
        wanted = _BACKEND_MODE.get(config.get("backend", "bm25"), "lexical")
        note = ""
        if wanted != "lexical":
            qv, vecs, why = idx.cached_vectors(query)
            if vecs is not None:
                hits = self._vector_hits(idx, q, qv, vecs, wanted, k, explain)
                return hits, NamespaceOutcome(wanted, "", config, len(idx))
            note = (f"backend {config.get('backend')} (model hint {config.get('embed_model_hint', 'default')!r}) "
                    f"could not be used: {why}; showing lexical BM25 recall instead")
        if not q:
            hits = [self._hit(idx, seq, 0.0) for seq in idx.newest(k)]
        else:
            hits = [self._hit(idx, seq, score, idx.explain(seq, q) if explain else None)
                    for score, seq in idx.top_lexical(q, k)]
        return hits, NamespaceOutcome("lexical", note, config, len(idx))

    def _vector_hits(self, idx: NamespaceIndex, q: list[str], qv: list[float], vecs: dict[int, list[float]],
                     mode: Mode, k: int, explain: bool) -> list[Hit]:
        cos = {seq: cosine(qv, v) for seq, v in vecs.items()}
        if mode == "semantic":
            scores = {seq: c for seq, c in cos.items() if c > 0.0}
        else:
            lex = idx.lexical_scores(q) if q else {}
            top = max(lex.values(), default=0.0)
            denom = max(1.0, top)
            bw = float(idx.config.get("bm25_weight", 0.5))
            cw = float(idx.config.get("cosine_weight", 0.5))
            scores = {seq: bw * (lex.get(seq, 0.0) / denom) + cw * c
                      for seq, c in cos.items() if lex.get(seq, 0.0) > 0.0 or c > 0.0}
        hits = []
        for score, seq in idx._top(scores, k):
            ex = None
            if explain:
                base = idx.explain(seq, q)
                if mode == "semantic":
                    ex = _with(base, cosine=cos[seq])
                else:
                    ex = _with(base, cosine=cos[seq], lexical_norm=base.lexical / denom, bm25_weight=bw, cosine_weight=cw)
            hits.append(self._hit(idx, seq, score, ex))
        return hits

    @staticmethod
    def _hit(idx: NamespaceIndex, seq: int, score: float, ex: Explain | None = None) -> Hit:
        r = idx.docs[seq].record
        return Hit(r.id, r.key, idx.namespace, score, r.stored_at, r.tags, r.seq, r, ex)


def _with(ex: Explain, **changes: Any) -> Explain:
    return replace(ex, **changes)


def _newest_sort(hits: list[Hit]) -> list[Hit]:
    hits = sorted(hits, key=lambda h: (h.id, h.namespace))
    hits.sort(key=lambda h: h.seq, reverse=True)
    hits.sort(key=lambda h: h.stored_at, reverse=True)
    return hits
