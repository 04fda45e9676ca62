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
record scores > 0. For a top k, `scoring.search` also skips the records
that provably cannot reach the k-th best score (bounds per posting code and
per term, MaxScore), which changes no score and no rank.

Storage is numpy arrays (see `NamespaceIndex`): postings as (slot, tf/flags)
pairs in a term-sorted array plus an append-only overflow, about 6 bytes a
posting, and scoring evaluates the formula elementwise over a term's
postings. rank-bm25 (`BM25Okapi`) is used only as a cross-check in tests
and as the reference in `make bench`: it rescans the whole corpus per query
(~25 ms on 28k records vs ~0.6 ms here), has no incremental update, and its
idf differs from Harn's, so it cannot serve the editor.
"""

import os

# The index uses numpy elementwise only, never BLAS: without this, importing numpy starts an OpenBLAS
# thread pool per core (~0.1 s of CPU in every process that recalls). A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from harn_ls.recall.engine import RecallEngine  # noqa: E402
from harn_ls.recall.index import NamespaceIndex  # noqa: E402
from harn_ls.recall.results import Hit, RecallResult, clamp_k  # noqa: E402
from harn_ls.recall.tokenizer import analyze, is_token_char, searchable_text, tokenize  # noqa: E402
from harn_ls.recall.vectors import cosine, read_cached_vector, sanitize_model_hint, vector_cache_path  # noqa: E402

__all__ = ["Hit", "NamespaceIndex", "RecallEngine", "RecallResult", "analyze", "clamp_k", "cosine", "is_token_char",
           "read_cached_vector", "sanitize_model_hint", "searchable_text", "tokenize", "vector_cache_path"]
