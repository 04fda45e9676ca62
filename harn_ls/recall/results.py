"""What a recall returns: hits, per-term explanations, per-namespace outcomes, and Harn's orders."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harn_ls.formats.memory_record import MemoryRecord
from harn_ls.util.json_types import JsonObject

DEFAULT_K = 5
MAX_K = 100

Mode = Literal["lexical", "semantic", "hybrid", "mixed"]


def clamp_k(k: int | None) -> int:
    if k is None:
        return DEFAULT_K
    return max(1, min(MAX_K, int(k)))


@dataclass(frozen=True, slots=True)
class TermExplain:
    """One query term's part of a recall score."""

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
    """How a recall hit's score was made up."""

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

    def to_json(self) -> JsonObject:
        out: JsonObject = {
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
    """One recall hit: the record and its score."""

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
    """How one namespace was searched, and why when not as configured."""

    mode: Mode
    note: str
    config: JsonObject
    count: int  # active records


@dataclass(frozen=True, slots=True)
class RecallResult:
    """The answer of one recall: the hits and how each namespace was searched."""

    hits: list[Hit]
    mode: Mode  # "mixed" only when namespace=None spans namespaces ranked differently
    note: str  # empty, or why the configured backend could not be used
    config: JsonObject | None  # the queried namespace's config (None across namespaces)
    query_terms: tuple[str, ...] = ()
    k: int = DEFAULT_K
    namespaces: dict[str, NamespaceOutcome] = field(default_factory=dict)


def _newest_sort(hits: list[Hit]) -> list[Hit]:
    """Harn's order without scores: stored_at desc (string), seq desc, id asc (stable passes)."""
    hits = sorted(hits, key=lambda h: (h.id, h.namespace))
    hits.sort(key=lambda h: h.seq, reverse=True)
    hits.sort(key=lambda h: h.stored_at, reverse=True)
    return hits


def _tie_sort(hits: list[Hit]) -> list[Hit]:
    """Harn's order: score desc, then `_newest_sort`'s."""
    hits = _newest_sort(hits)
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits
