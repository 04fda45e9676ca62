"""Small array and string helpers of the recall index (recall/index.py)."""

from __future__ import annotations

import numpy as np


def grown(arr: np.ndarray, need: int) -> np.ndarray:
    """`arr` with capacity >= need (doubling), contents kept."""
    if need <= len(arr):
        return arr
    out = np.zeros(max(need, 2 * len(arr), 64), dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


def own_copy(term: str) -> str:
    """A new string equal to `term`. A new term arrives as one of the batch's token strings, made
    among millions of short-lived ones of the same size; kept as it is, each pins a mostly empty
    pymalloc pool once the others are freed (~34 MB of free 64-byte blocks at 100k events). Copies
    made together sit together, and the tokens' pools are given back whole."""
    return (term + " ")[:-1]


def small_uint(values: np.ndarray) -> np.ndarray:
    """The narrowest unsigned dtype that holds the (non-negative) codes."""
    top = int(values.max()) if len(values) else 0
    dtype = np.uint16 if top < 1 << 16 else np.uint32 if top < 1 << 32 else np.int64
    return values.astype(dtype, copy=False)
