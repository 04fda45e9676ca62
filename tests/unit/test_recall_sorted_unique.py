"""recall's candidate slots: `_sorted_unique` stands in for np.unique (whose first call imports
numpy.ma) and must give exactly what np.unique gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.recall.index import _sorted_unique


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=60), st.sampled_from([np.int32, np.int64, np.intp]))
def test_sorted_unique_equals_np_unique(values, dtype):
    arr = np.array(values, dtype=dtype)
    got = _sorted_unique(np.concatenate([arr]))
    want = np.unique(arr)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
