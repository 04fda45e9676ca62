"""Memory recall with Harn's exact ranking (harn-formats §C.5/§C.6).

Pure core: no pygls, never writes. One `NamespaceIndex` per namespace holds an
inverted index over the namespace's *active* records and is updated from the
`MemoryDelta`s that `MemoryNamespace.apply_lines` returns, so an appended line
costs O(tokens of the records it touches), never a rebuild.

Scoring replicates Harn's `score_records`/`score_bm25` term by term, in the
same order of floating-point operations as the formula is written (query
terms summed in query order, duplicates included; the field boosts summed
separately and then added), so exact ties in Harn are exact ties here too:

    idf   = log1p((N - df + 0.5) / (df + 0.5))
    bm25 += idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl))
    boost = fold over query terms: (boost + (0.4 if term in key tokens)) + (0.25 if in tag tokens)
    score = bm25 + boost

This is the arithmetic of current Harn's `score_bm25`/`bm25_score`/
`exact_field_boost` in `crates/harn-vm/src/stdlib/memory.rs` (burin-labs/harn
094874f4, which uses `.ln_1p()`; older builds such as e45362cf wrote
`(x + 1.0).ln()`, which can differ from log1p in the last bit), term for
term and in Rust's evaluation order, so scores are bit-identical to Harn's
(`math.log1p` is the same libm `log1p` Rust's `f64::ln_1p` calls).

Only documents containing at least one query term are visited (postings of
the query terms). That is complete: every key/tag token is also a token of
the searchable text (`key \\n text \\n tags \\n value`), so a record with a
boost is always in the postings, and a record outside them scores 0 and is
dropped by Harn's `score > 0` rule. idf is always > 0, so every visited
record scores > 0.

Storage is numpy arrays (see `NamespaceIndex`): postings as (slot, tf/flags)
pairs in a term-sorted array plus an append-only overflow, about 6 bytes a
posting, and scoring evaluates the formula elementwise over a term's
postings. rank-bm25 (`BM25Okapi`) is used only as a cross-check in tests
and as the reference in `make bench`: it rescans the whole corpus per query
(~25 ms on 28k records vs ~0.6 ms here), has no incremental update, and its
idf differs from Harn's, so it cannot serve the editor.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from itertools import compress, count, repeat
from operator import is_
from typing import Any, Iterable, Literal

import numpy as np

try:  # the C counting loop behind collections.Counter, without Counter's per-call overhead
    from collections import _count_elements  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - other Pythons
    def _count_elements(mapping: dict, iterable: Iterable) -> None:
        get = mapping.get
        for elem in iterable:
            mapping[elem] = get(elem, 0) + 1

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
    __slots__ = ("record", "slot", "vec_hash")

    def __init__(self, record: MemoryRecord, slot: int) -> None:
        self.record = record
        self.slot = slot  # dense document slot in the index arrays
        self.vec_hash: str | None = None  # sha256 of the searchable text, computed lazily


# --------------------------------------------------------------------------
# Record analysis: term frequencies and field flags in one pass
# --------------------------------------------------------------------------
# `tokenize(key \n text \n tags \n json)` is the concatenation of the four
# parts' tokens ("\n" never joins a token), so the parts are tokenized
# separately. That lets a record whose JSON value renders to exactly its
# text (every dict value: Harn stores `text = compact JSON of value`) or to
# its quoted text (a string value without escapes) tokenize the text once
# and count it twice — the tokens are provably the same.
#
# ASCII parts are split with str.translate + str.split (every non-alphanumeric
# byte becomes a space, A-Z fold), which keeps the 1-byte tokens; they are
# removed from the counts afterwards (`_SINGLES`), cheaper than filtering
# every token.

_ASCII_SPLIT = str.maketrans({c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)})
_SINGLES = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # every 1-byte token after ASCII folding
_TF_BITS = 40
_TF_MASK = (1 << _TF_BITS) - 1
_KEY_FLAG = 1 << _TF_BITS  # analysis value = tf | KEY_FLAG | TAG_FLAG
_TAG_FLAG = 2 << _TF_BITS


def _raw_tokens(text: str) -> list[str]:
    """`tokenize` without dropping 1-byte tokens."""
    if text.isascii():
        return text.translate(_ASCII_SPLIT).split()
    return _UNICODE_TOKEN.findall(text.translate(_ASCII_LOWER))


def analyze(record: MemoryRecord) -> tuple[dict[str, int], int]:
    """(term -> tf | key/tag flags, token count) of a record's searchable text.

    Equal to `Counter(tokenize(searchable_text(record)))` in the low bits, with
    `_KEY_FLAG` set on the key's tokens and `_TAG_FLAG` on the tags' tokens."""
    text = record.text
    tt = _raw_tokens(text)
    js = serde_compact(record.value)
    counts: dict[str, int] = {}
    _count_elements(counts, tt)
    if js == text or (len(js) == len(text) + 2 and js[0] == '"' and js[-1] == '"' and js.startswith(text, 1)):
        _count_elements(counts, tt)
        n = 2 * len(tt)
    else:
        tj = _raw_tokens(js)
        _count_elements(counts, tj)
        n = len(tt) + len(tj)
    tk = _raw_tokens(record.key)
    if tk:
        _count_elements(counts, tk)
        n += len(tk)
    tg = _raw_tokens(" ".join(record.tags)) if record.tags else ()
    if tg:
        _count_elements(counts, tg)
        n += len(tg)
    for s in _SINGLES.intersection(counts):
        n -= counts.pop(s)
    if tk:
        for t in set(tk):
            if t in counts:
                counts[t] |= _KEY_FLAG
    if tg:
        for t in set(tg):
            if t in counts:
                counts[t] |= _TAG_FLAG
    return counts, n


# Harn's per-query-term field boost, `(0.4 if in key) + (0.25 if in tags)`,
# indexed by the 2-bit flag code (1 = key, 2 = tag) stored with each posting.
_BOOST_OF_FLAGS = [(KEY_BOOST if code & 1 else 0.0) + (TAG_BOOST if code & 2 else 0.0) for code in range(4)]

_OVERFLOW_MIN = 1 << 15  # postings appended before they are merged into the sorted main arrays
_DEAD_MIN = 1024  # dead slots tolerated before the slots are renumbered (and at most a quarter of them)
_BATCH_MIN = 8  # records per apply() from which the vectorised add path pays off
_EMPTY_I32 = np.zeros(0, dtype=np.int32)


def _grown(arr: np.ndarray, need: int) -> np.ndarray:
    """`arr` with capacity >= need (doubling), contents kept."""
    if need <= len(arr):
        return arr
    out = np.zeros(max(need, 2 * len(arr), 64), dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


def _small_uint(values: np.ndarray) -> np.ndarray:
    """The narrowest unsigned dtype that holds the (non-negative) codes."""
    top = int(values.max()) if len(values) else 0
    dtype = np.uint16 if top < 1 << 16 else np.uint32 if top < 1 << 32 else np.int64
    return values.astype(dtype, copy=False)


class NamespaceIndex:
    """Inverted index over one namespace's active records, in numpy arrays.

    Documents live in dense *slots* (per-slot arrays: dl, alive; a slot ->
    record list). A posting is a (slot, code) pair with `code = tf << 2 |
    flags` (flags: 1 = the term is a key token, 2 = a tag token). Postings
    are kept in a term-sorted main array (CSR: `_off[term]` .. `_off[term +
    1]`, about 6 bytes a posting) plus an append-only overflow that new
    records go to (a plain-list tail of it makes a single add nearly free of
    numpy calls); the overflow is merged into the main arrays when it
    outgrows 1/8 of them, so each posting is moved O(1) times amortised.

    df of a term = `_df[term]` + its overflow postings, where `_df` counts
    the live main postings minus the dead overflow ones: a removal decrements
    `_df` wherever the posting lives, and a merge adds the overflow counts.
    Removing a record marks its slot dead (re-tokenizing the record to find
    its terms, so no per-record term list is kept); dead postings are
    dropped at the next merge, and slots are renumbered (and terms no record
    uses forgotten) once a quarter of the slots are dead.

    Scoring vectorises Harn's formula over the postings of each query term,
    in query order, accumulating into a float64 buffer per slot; numpy
    evaluates the same IEEE operations in the same order as the scalar
    formula, so every score is bit-identical to it, and the field boosts are
    summed in a separate buffer and added last, as Harn does.
    """

    def __init__(self, namespace: str, config: dict | None = None, ns_dir: str | None = None) -> None:
        self.namespace = namespace
        self.config: dict = dict(config) if config else dict(DEFAULT_CONFIG)
        self.ns_dir = ns_dir  # `<memory root>/<namespace>`, for the vector cache
        self.docs: dict[int, _Doc] = {}  # seq -> doc
        self.total_tokens = 0
        self._vectors: dict[str, list[float]] = {}  # content hash -> cached vector
        # terms
        self._tid: dict[str, int] = {}
        self._terms: list[str] = []
        self._df = np.zeros(0, dtype=np.int64)  # live main postings - dead overflow postings, per term id
        # slots
        self._nslots = 0
        self._dl = np.zeros(0, dtype=np.int32)  # max(1, tokens)
        self._alive = np.zeros(0, dtype=bool)
        self._srec: list[MemoryRecord | None] = []  # slot -> record (None once dead)
        self._ndead = 0  # dead slots
        self._dead_postings = 0  # postings (main or overflow) that point at dead slots
        # main postings, sorted by term (CSR)
        self._off = np.zeros(1, dtype=np.int64)
        self._pslot = _EMPTY_I32
        self._pcode: np.ndarray = np.zeros(0, dtype=np.uint16)
        # overflow postings, in arrival order: numpy arrays, then a list tail
        self._m = 0
        self._ov_term = np.zeros(0, dtype=np.int32)
        self._ov_slot = np.zeros(0, dtype=np.int32)
        self._ov_val = np.zeros(0, dtype=np.int64)  # analysis value: tf | flags << 40
        self._tail_term: list[int] = []
        self._tail_slot: list[int] = []
        self._tail_val: list[int] = []
        self._tail_dec: list[int] = []  # term ids whose _df a removal decrements
        self._norm_key: tuple[float, int] | None = None
        self._norm: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.docs)

    # -- maintenance ---------------------------------------------------------
    def _term_ids(self, terms: list[str]) -> list[int] | np.ndarray:
        """Term ids, interning new terms (a list for one record, an int32 array for a batch)."""
        tid = self._tid
        if len(terms) <= 256:
            ids = list(map(tid.get, terms))
            if None not in ids:
                return ids
            fresh = list(dict.fromkeys(compress(terms, map(is_, ids, repeat(None)))))
            self._intern(fresh)
            return list(map(tid.__getitem__, terms))
        # One C-level pass: a new term provisionally gets base + the index of its
        # first occurrence; those are then renumbered densely.
        base = len(self._terms)
        ids = np.fromiter(map(tid.setdefault, terms, count(base)), dtype=np.int64, count=len(terms))
        ids -= base  # new terms: >= 0, the index of their first occurrence
        first = np.flatnonzero(ids == np.arange(len(ids)))
        if len(first):
            fresh = [terms[i] for i in first.tolist()]
            for t in fresh:
                del tid[t]
            self._intern(fresh)
            dense = np.zeros(len(ids), dtype=np.int64)
            dense[first] = np.arange(len(first))
            new = ids >= 0
            ids[new] = dense[ids[new]]
        ids += base
        return ids.astype(np.int32)

    def _intern(self, fresh: list[str]) -> None:
        names = self._terms
        self._tid.update(zip(fresh, range(len(names), len(names) + len(fresh))))
        names += fresh
        self._df = _grown(self._df, len(names))

    def _new_slots(self, records: list[MemoryRecord], ntokens: list[int]) -> int:
        """Allocate slots for records (in order); returns the first slot."""
        first = self._nslots
        end = first + len(records)
        if end > len(self._dl):
            self._dl = _grown(self._dl, end)
            self._alive = _grown(self._alive, end)
        self._dl[first:end] = np.maximum(np.array(ntokens, dtype=np.int32), 1)
        self._alive[first:end] = True
        self._srec += records
        self.docs.update(zip([r.seq for r in records], map(_Doc, records, range(first, end))))
        self._nslots = end
        self.total_tokens += sum(ntokens)
        self._norm_key = None
        return first

    def _append_overflow(self, ids: np.ndarray, slots: np.ndarray | int, vals: list[int] | np.ndarray) -> None:
        m = self._m
        k = len(ids)
        if m + k > len(self._ov_term):
            self._ov_term = _grown(self._ov_term, m + k)
            self._ov_slot = _grown(self._ov_slot, m + k)
            self._ov_val = _grown(self._ov_val, m + k)
        self._ov_term[m : m + k] = ids
        self._ov_slot[m : m + k] = slots
        self._ov_val[m : m + k] = vals
        self._m = m + k

    def _flush(self) -> None:
        """Move the list tail into the overflow arrays and apply pending df decrements."""
        if self._tail_term:
            self._append_overflow(np.array(self._tail_term, dtype=np.int32), np.array(self._tail_slot, dtype=np.int32),
                                  self._tail_val)
            self._tail_term, self._tail_slot, self._tail_val = [], [], []
        if self._tail_dec:
            nterms = len(self._terms)
            self._df[:nterms] -= np.bincount(np.array(self._tail_dec, dtype=np.int64), minlength=nterms)
            self._tail_dec = []

    def add(self, record: MemoryRecord) -> None:
        seq = record.seq
        if seq in self.docs:
            self.remove(seq)
        counts, ntokens = analyze(record)
        slot = self._nslots
        if slot >= len(self._dl):
            self._dl = _grown(self._dl, slot + 1)
            self._alive = _grown(self._alive, slot + 1)
        self._dl[slot] = max(1, ntokens)
        self._alive[slot] = True
        self._srec.append(record)
        self.docs[seq] = _Doc(record, slot)
        self._nslots = slot + 1
        self.total_tokens += ntokens
        self._norm_key = None
        if counts:
            self._tail_term += self._term_ids(list(counts))
            self._tail_slot += [slot] * len(counts)
            self._tail_val += counts.values()
            if len(self._tail_term) >= 4096:
                self._flush()
                self._maybe_merge()

    def add_many(self, records: Iterable[MemoryRecord]) -> None:
        """Add records in one vectorised pass (same result as `add` one by one)."""
        batch: dict[int, MemoryRecord] = {}
        for r in records:  # a later record with the same sequence replaces an earlier one
            batch.pop(r.seq, None)
            batch[r.seq] = r
        stale = [seq for seq in batch if seq in self.docs]
        if stale:
            self.remove_many(stale)
        if not batch:
            return
        terms: list[str] = []
        vals: list[int] = []
        lens: list[int] = []
        ntoks: list[int] = []
        for r in batch.values():
            counts, ntokens = analyze(r)
            terms += counts
            vals += counts.values()
            lens.append(len(counts))
            ntoks.append(ntokens)
        first = self._new_slots(list(batch.values()), ntoks)
        self._flush()
        if terms:
            self._append_overflow(np.asarray(self._term_ids(terms), dtype=np.int32),
                                  np.repeat(np.arange(first, self._nslots, dtype=np.int32), lens), vals)
        self._maybe_merge()

    def _drop(self, seq: int) -> tuple[MemoryRecord, list[str]] | None:
        doc = self.docs.pop(seq, None)
        if doc is None:
            return None
        counts, ntokens = analyze(doc.record)  # the same terms add() indexed
        self._alive[doc.slot] = False
        self._srec[doc.slot] = None
        self._ndead += 1
        self._dead_postings += len(counts)
        self.total_tokens -= ntokens
        self._norm_key = None
        if doc.vec_hash is not None:
            self._vectors.pop(doc.vec_hash, None)  # content-addressed: a twin simply reloads it
        return doc.record, list(counts)

    def remove(self, seq: int) -> MemoryRecord | None:
        dropped = self._drop(seq)
        if dropped is None:
            return None
        record, terms = dropped
        self._tail_dec += map(self._tid.__getitem__, terms)
        if len(self._tail_dec) >= 4096:
            self._flush()
        self._maybe_compact()
        return record

    def remove_many(self, seqs: Iterable[int]) -> None:
        terms: list[str] = []
        for seq in seqs:
            dropped = self._drop(seq)
            if dropped is not None:
                terms += dropped[1]
        self._tail_dec += map(self._tid.__getitem__, terms)
        self._flush()
        self._maybe_compact()

    def apply(self, delta: MemoryDelta) -> None:
        """Apply one batch. Removed and added lists are netted by identity first:
        a record stored (or updated) and forgotten within the same batch never
        existed for us, and an update replaces the record at the same sequence."""
        added_ids = {id(r) for r in delta.added}
        removed_ids = {id(r) for r in delta.removed}
        removed = [r.seq for r in delta.removed if id(r) not in added_ids]
        added = [r for r in delta.added if id(r) not in removed_ids]
        if len(removed) >= _BATCH_MIN:
            self.remove_many(removed)
        else:
            for seq in removed:
                self.remove(seq)
        if len(added) >= _BATCH_MIN:
            self.add_many(added)
        else:
            for r in added:
                self.add(r)
        self._maybe_merge()

    def records(self) -> list[MemoryRecord]:
        return [d.record for d in self.docs.values()]

    # -- merging and compaction -----------------------------------------------
    def _maybe_merge(self) -> None:
        if self._m + len(self._tail_term) > max(_OVERFLOW_MIN, len(self._pslot) >> 3):
            self._merge()

    def _maybe_compact(self) -> None:
        if self._ndead > max(_DEAD_MIN, self._nslots >> 2):
            self._merge(renumber=True)
        elif self._dead_postings > max(_OVERFLOW_MIN, len(self._pslot) >> 2):
            self._merge()

    def _merge(self, renumber: bool = False) -> None:
        """Fold the overflow into the sorted main arrays, dropping dead postings;
        with `renumber`, also pack the live slots and forget unused terms."""
        self._flush()
        m = self._m
        nterms = len(self._terms)
        ov_term = self._ov_term[:m]
        self._df[:nterms] += np.bincount(ov_term, minlength=nterms)  # _df: live main postings again
        main_terms = np.repeat(np.arange(len(self._off) - 1, dtype=np.int32), np.diff(self._off))
        ov_val = self._ov_val[:m]
        ov_code = _small_uint(((ov_val & _TF_MASK) << 2) | (ov_val >> _TF_BITS))
        term = np.concatenate((main_terms, ov_term))
        slot = np.concatenate((self._pslot, self._ov_slot[:m]))
        code = np.concatenate((self._pcode, ov_code))  # the wider of the two dtypes
        del main_terms, ov_code
        if self._dead_postings:
            keep = self._alive[slot]
            term, slot, code = term[keep], slot[keep], code[keep]
            del keep
        if renumber:
            live = self._alive[: self._nslots]
            new_slot = (np.cumsum(live) - 1).astype(np.int32)
            slot = new_slot[slot]
            self._dl = self._dl[: self._nslots][live].copy()
            self._srec = [r for r in self._srec if r is not None]
            self._nslots = len(self._srec)
            self._alive = np.ones(self._nslots, dtype=bool)
            docs = self.docs
            for i, r in enumerate(self._srec):
                docs[r.seq].slot = i
            self._ndead = 0
            used = self._df[:nterms] > 0
            if not used.all():
                new_tid = (np.cumsum(used) - 1).astype(np.int32)
                term = new_tid[term]
                self._terms = list(compress(self._terms, used.tolist()))
                self._tid = dict(zip(self._terms, range(len(self._terms))))
                self._df = self._df[:nterms][used].copy()
                nterms = len(self._terms)
            self._norm_key = None
        order = np.argsort(term, kind="stable")  # main part is sorted already: a merge, not a sort
        off = np.zeros(nterms + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=nterms), out=off[1:])
        del term
        self._pslot = slot[order]
        del slot
        self._pcode = code[order]
        self._off = off
        self._m = 0
        self._dead_postings = 0
        if len(self._ov_term) > 4 * _OVERFLOW_MIN:  # give back a burst's overflow buffers
            self._ov_term = np.zeros(0, dtype=np.int32)
            self._ov_slot = np.zeros(0, dtype=np.int32)
            self._ov_val = np.zeros(0, dtype=np.int64)

    def compact(self) -> None:
        """Merge everything now (tests and idle time); results never depend on it."""
        self._merge(renumber=self._ndead > 0)

    # -- statistics ----------------------------------------------------------
    def stats(self) -> tuple[int, float]:
        """(N, avgdl) exactly as Harn computes them."""
        n = max(1, len(self.docs))
        return n, max(1, self.total_tokens) / n

    def df(self, term: str) -> int:
        tid = self._tid.get(term)
        if tid is None:
            return 0
        self._flush()
        return int(self._df[tid]) + int(np.count_nonzero(self._ov_term[: self._m] == tid))

    def _all_df(self) -> np.ndarray:
        self._flush()
        nterms = len(self._terms)
        return self._df[:nterms] + np.bincount(self._ov_term[: self._m], minlength=nterms)

    def tf(self, term: str, seq: int) -> int:
        doc = self.docs.get(seq)
        if doc is None:
            return 0
        return analyze(doc.record)[0].get(term, 0) & _TF_MASK

    def _term_postings(self, tid: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(slots, codes, df) of one term, main and overflow (dead slots included); flushed first."""
        df = int(self._df[tid])
        if tid < len(self._off) - 1:
            lo, hi = self._off[tid], self._off[tid + 1]
            slots, codes = self._pslot[lo:hi], self._pcode[lo:hi]
        else:
            slots, codes = _EMPTY_I32, self._pcode[:0]
        if self._m:
            hit = np.flatnonzero(self._ov_term[: self._m] == tid)
            if len(hit):
                df += len(hit)
                val = self._ov_val[hit]
                slots = np.concatenate((slots, self._ov_slot[hit]))
                codes = np.concatenate((codes, ((val & _TF_MASK) << 2) | (val >> _TF_BITS)))
        return slots, codes, df

    def _views(self) -> Iterable[tuple[str, list[int], list[int]]]:
        """(term, live seqs, codes) per term with live postings."""
        df = self._all_df()
        srec = self._srec
        for term, tid in self._tid.items():
            if df[tid]:
                slots, codes, _ = self._term_postings(tid)
                if self._ndead:
                    keep = self._alive[slots]
                    slots, codes = slots[keep], codes[keep]
                yield term, [srec[s].seq for s in slots.tolist()], codes.tolist()

    @property
    def postings(self) -> dict[str, dict[int, int]]:
        """Debugging view {term: {seq: tf}} of the live postings (built on each access)."""
        return {term: {s: c >> 2 for s, c in zip(seqs, codes)} for term, seqs, codes in self._views()}

    @property
    def boosts(self) -> dict[str, dict[int, float]]:
        """Debugging view {term: {seq: Harn's per-term field boost}} (built on each access)."""
        out = {}
        for term, seqs, codes in self._views():
            b = {s: _BOOST_OF_FLAGS[c & 3] for s, c in zip(seqs, codes) if c & 3}
            if b:
                out[term] = b
        return out

    # -- lexical scoring -----------------------------------------------------
    def _norms(self, avgdl: float) -> np.ndarray:
        """Per slot `k1 * (1 - b + b * dl / avgdl)`, the same operations as the scalar formula."""
        key = (avgdl, self._nslots)
        if self._norm_key != key:
            self._norm = K1 * ((1.0 - B) + (B * self._dl[: self._nslots]) / avgdl)
            self._norm_key = key
        return self._norm

    def _score(self, q: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(live slots with score > 0, their Harn lexical scores), slots ascending.

        Query terms are summed in query order, duplicates included, each
        term's BM25 part computed elementwise as `idf * tf * (k1 + 1) /
        (tf + norm)`; the field boosts are summed the same way in their own
        buffer and added last (`bm25 + boost`), exactly as Harn does."""
        n, avgdl = self.stats()
        self._flush()
        tid_get = self._tid.get
        parts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]] = {}
        order: list[str] = []
        for term in q:
            if term in parts:
                order.append(term)
                continue
            tid = tid_get(term)
            if tid is None:
                continue
            slots, codes, df = self._term_postings(tid)
            if not df:
                continue
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            tf = (codes >> 2).astype(np.float64)
            contrib = idf * (tf * (K1 + 1.0)) / (tf + self._norms(avgdl)[slots])
            flags = codes & 3
            if flags.any():  # Harn adds 0.4 (key) and then 0.25 (tag): two additions, not one of 0.65
                bslots, bvals = slots[(flags & 1) != 0], slots[(flags & 2) != 0]
            else:
                bslots = bvals = None
            parts[term] = (slots, contrib, bslots, bvals)
            order.append(term)
        if not order:
            return _EMPTY_I32, np.zeros(0)
        ns = self._nslots
        acc = np.zeros(ns)
        first = True
        touched = 0
        for term in order:
            slots, contrib = parts[term][0], parts[term][1]
            if first:
                acc[slots] = contrib  # 0.0 + x == x
                first = False
            else:
                acc[slots] += contrib  # a term's slots are distinct: one add per slot
            touched += len(slots)
        boost = None
        for term in order:
            kslots, tslots = parts[term][2], parts[term][3]
            if kslots is not None:
                if boost is None:
                    boost = np.zeros(ns)
                boost[kslots] += KEY_BOOST
                boost[tslots] += TAG_BOOST
        if touched * 8 < ns:
            cand = np.unique(np.concatenate([p[0] for p in parts.values()]))
        else:
            cand = np.flatnonzero(acc)
        if self._ndead:
            cand = cand[self._alive[cand]]
        scores = acc[cand]
        if boost is not None:
            scores = scores + boost[cand]
        return cand, scores

    def lexical_scores(self, q: list[str]) -> dict[int, float]:
        """seq -> Harn lexical score for every record with score > 0."""
        slots, scores = self._score(q)
        srec = self._srec
        return dict(zip([srec[s].seq for s in slots.tolist()], scores.tolist()))

    def explain(self, seq: int, q: list[str]) -> Explain:
        n, avgdl = self.stats()
        counts, ntokens = analyze(self.docs[seq].record)
        dl = max(1, ntokens)
        qcount: dict[str, int] = {}
        for t in q:
            qcount[t] = qcount.get(t, 0) + 1
        dfs = {t: self.df(t) for t in qcount}
        bm25 = 0.0
        boost = 0.0
        per_term: dict[str, float] = {}
        for t in q:  # same formula and order as scoring, so `lexical` equals the hit's score
            tf = counts.get(t, 0) & _TF_MASK
            if tf:
                df = dfs[t]
                idf = math.log1p((n - df + 0.5) / (df + 0.5))
                c = idf * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * dl / avgdl))
                bm25 += c
                per_term[t] = per_term.get(t, 0.0) + c
        for t in q:
            flags = counts.get(t, 0) >> _TF_BITS
            boost = boost + (KEY_BOOST if flags & 1 else 0.0) + (TAG_BOOST if flags & 2 else 0.0)
        terms: list[TermExplain] = []
        kb_total = tb_total = 0.0
        for t, count in qcount.items():
            flags = counts.get(t, 0) >> _TF_BITS
            kb = KEY_BOOST * count if flags & 1 else 0.0
            tb = TAG_BOOST * count if flags & 2 else 0.0
            kb_total += kb
            tb_total += tb
            df = dfs[t]
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            terms.append(TermExplain(t, count, counts.get(t, 0) & _TF_MASK, df, idf, per_term.get(t, 0.0), kb, tb))
        return Explain(tuple(terms), bm25, kb_total, tb_total, bm25 + boost, dl, avgdl, n)

    def top_lexical(self, q: list[str], k: int) -> list[tuple[float, int]]:
        """Top k (score, seq) in Harn order; ties at the cut are resolved exactly."""
        slots, scores = self._score(q)
        nc = len(slots)
        if not nc:
            return []
        srec = self._srec
        if nc > k:
            kth = np.partition(scores, nc - k)[nc - k]
            above = np.flatnonzero(scores > kth)
            ties = np.flatnonzero(scores == kth)
            need = k - len(above)
            if len(ties) > need:
                # Only the records tied at the k-th score need the full key.
                sl = slots.tolist()
                ties = np.array(heapq.nlargest(need, ties.tolist(), key=lambda i: (
                    srec[sl[i]].stored_at, srec[sl[i]].seq)), dtype=np.int64)
            pick = np.concatenate((above, ties))
            slots, scores = slots[pick], scores[pick]
        items = list(zip(scores.tolist(), slots.tolist()))
        items.sort(key=lambda x: (x[0], srec[x[1]].stored_at, srec[x[1]].seq), reverse=True)
        return [(s, srec[slot].seq) for s, slot in items]

    def _top(self, scores: dict[int, float], k: int) -> list[tuple[float, int]]:
        """Top k of a seq -> score mapping (semantic / hybrid scores) in Harn order."""
        if not scores:
            return []
        if len(scores) > k:
            # The k-th best *distinct* score bounds the cut from below; only the
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
    from harn_ls.safe_read import VECTOR_FILE_CAP, read_confined

    try:
        # Confined to the namespace directory (<ns>/vectors/<hint>/<hash>.json), a regular file, capped:
        # a cache entry symlinked to /dev/zero or out of the project is "unreadable", never read.
        ns_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path))))
        data = json.loads(read_confined(path, ns_dir, VECTOR_FILE_CAP))
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
        idx.add_many(records)

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
