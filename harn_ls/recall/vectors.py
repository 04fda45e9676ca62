"""Harn's embedding cache (§C.5 semantic / hybrid, §C.6 file layout) and cosine similarity.
Reads only: vectors are written by Harn, never by harn-ls."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harn_ls.formats.harn_json import sha256_hex
from harn_ls.formats.parse_limits import loads_json
from harn_ls.recall.tokenizer import searchable_text
from harn_ls.util.json_types import JsonObject
from harn_ls.util.safe_read import VECTOR_FILE_CAP, read_confined

if TYPE_CHECKING:
    from harn_ls.recall.docs import _Doc


def sanitize_model_hint(hint: str | None) -> str:
    """Harn's cache directory name for a model hint: keep [A-Za-z0-9_-], others -> `_`."""
    out = "".join(c if (c.isascii() and c.isalnum()) or c in "-_" else "_" for c in hint or "")
    return out or "default"

def vector_cache_path(ns_dir: str, model_hint: str | None, text: str) -> str:
    """`<ns dir>/vectors/<sanitized hint>/<sha256(text)>.json`; text = searchable text or raw query."""
    return os.path.join(ns_dir, "vectors", sanitize_model_hint(model_hint), sha256_hex(text) + ".json")


def read_cached_vector(path: str, expect_dim: int | None = None) -> tuple[list[float] | None, str]:
    """Read one cache file `{"model", "dim", "vector"}`; (None, reason) when unusable."""
    try:
        # Confined to the namespace directory (<ns>/vectors/<hint>/<hash>.json), a regular file, capped:
        # a cache entry symlinked to /dev/zero or out of the project is "unreadable", never read.
        ns_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path))))
        data = loads_json(read_confined(path, ns_dir, VECTOR_FILE_CAP))
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
    for x, y in zip(a, b, strict=False):  # (the reader checks dimensions; untrusted cache bytes must not raise here)
        dot += x * y
        na += x * x
        nb += y * y
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (math.sqrt(na) * math.sqrt(nb))


def _load_vector(memo: dict[str, list[float]], vdir: str | None, content_hash: str,
                 expect_dim: int | None) -> tuple[list[float] | None, str]:
    """One content-addressed vector, from `memo` (a namespace index's) or from the cache folder `vdir`."""
    known = memo.get(content_hash)
    if known is not None:
        # kept from a read that expected no dimension (or another one): checked again, as a file read is
        if expect_dim is not None and len(known) != expect_dim:
            return None, f"dimension mismatch: {len(known)} vs {expect_dim} (Harn reports an error)"
        return known, ""
    if vdir is None:
        return None, "no namespace directory known"
    vec, why = read_cached_vector(os.path.join(vdir, content_hash + ".json"), expect_dim)
    if vec is not None:
        memo[content_hash] = vec
    return vec, why


def namespace_vectors(docs: Mapping[int, _Doc], config: JsonObject, ns_dir: str | None, memo: dict[str, list[float]],
                      query: str) -> tuple[list[float] | None, dict[int, list[float]] | None, str]:
    """(query vector, seq -> record vector, reason) for a namespace index's `docs`: the vectors are
    None when the cache lacks any (Harn then reports the gap rather than ranking a subset)."""
    vdir = os.path.join(ns_dir, "vectors", sanitize_model_hint(config.get("embed_model_hint"))) if ns_dir else None
    dim = config.get("embed_dim")
    dim = dim if isinstance(dim, int) and dim > 0 else None
    qv, why = _load_vector(memo, vdir, sha256_hex(query), dim)
    if qv is None:
        return None, None, f"the embedding cache has no usable vector for this query ({why})"
    dim = dim or len(qv)
    out: dict[int, list[float]] = {}
    missing = 0
    first_why = ""
    for seq, doc in docs.items():
        if doc.vec_hash is None:
            doc.vec_hash = sha256_hex(searchable_text(doc.record))
        v, why = _load_vector(memo, vdir, doc.vec_hash, dim)
        if v is None:
            missing += 1
            first_why = first_why or f"{doc.record.id}: {why}"
        else:
            out[seq] = v
    if missing:
        return qv, None, (f"the embedding cache lacks vectors for {missing} of {len(docs)} records "
                          f"(first: {first_why})")
    return qv, out, ""
