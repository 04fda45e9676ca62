"""The fast paths added for `make bench` give the same results as the plain ones."""

from __future__ import annotations

import random
import struct

from harn_ls.formats import harn_json
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.recall import NamespaceIndex


def _exact(value) -> str:
    out: list[str] = []
    harn_json._encode(value, out, harn=False)
    return "".join(out)


def test_serde_compact_fast_path_matches_exact_encoder():
    rng = random.Random(7)
    values = [1e16, 1e-7, 1.5e300, -0.0, 0.0, 2**70, -(2**64), "e+ in text", "\x08\x0c\x00\x7f\u2028é",
              {"a": [1, 2.5, None, True, {"b": 1e21}]}, (1, 2), float("nan"), float("inf")]
    values += [struct.unpack("d", rng.randbytes(8))[0] for _ in range(5000)]
    values += [rng.random() * 10 ** rng.randint(-20, 25) for _ in range(5000)]
    for v in values:
        assert harn_json.serde_compact(v) == _exact(v), repr(v)


def _line(n: int, value: dict) -> JsonlLine:
    return JsonlLine(n, 0, value)


def test_delta_nets_records_stored_and_removed_in_one_batch():
    ns = MemoryNamespace("n", "/tmp/n/events.jsonl")
    store = lambda i, rid: _line(i, {"type": "store", "id": rid, "namespace": "n", "key": rid, "value": rid,  # noqa: E731
                                     "text": rid, "tags": [], "stored_at": f"2026-01-01T00:00:0{i}Z"})
    first = ns.apply_lines([store(1, "a")])
    assert [r.id for r in first.added] == ["a"]
    delta = ns.apply_lines([
        store(2, "b"), store(3, "c"),
        _line(4, {"type": "update", "id": "b", "namespace": "n", "value": "b2", "updated_at": "x"}),
        _line(5, {"type": "forget", "id": "f", "namespace": "n", "predicate": {}, "forgotten_ids": ["c", "a"],
                  "forgotten_at": "y"}),
    ])
    assert [(r.id, r.value) for r in delta.added] == [("b", "b2")]
    assert [r.id for r in delta.removed] == ["a"]
    assert [(r.id, r.value) for r in ns.records()] == [("b", "b2")]


def test_index_remove_undoes_add():
    ns = MemoryNamespace("n", "/tmp/n/events.jsonl")
    delta = ns.apply_lines([_line(1, {"type": "store", "id": "a", "namespace": "n", "key": "alpha-key",
                                      "value": {"text": "alpha beta beta"}, "text": "alpha beta beta",
                                      "tags": ["tag one"], "stored_at": "2026-01-01T00:00:00Z"})])
    idx = NamespaceIndex("n")
    idx.apply_delta(delta)
    assert idx.tf("beta", 0) == 4 and idx.df("alpha") == 1 and "tag" in idx.boosts
    idx.remove(0)
    assert idx.postings == {} and idx.boosts == {} and idx.total_tokens == 0


def test_recall_asks_numpy_for_no_blas_thread_pool_unless_told_otherwise():
    import os
    import subprocess
    import sys

    code = "import os, harn_ls.recall, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "1", out.stderr
    out = subprocess.run([sys.executable, "-c", code], env=env | {"OPENBLAS_NUM_THREADS": "3"}, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "3", out.stderr
