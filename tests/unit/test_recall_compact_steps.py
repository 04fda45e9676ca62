"""A server compacts the recall indexes a stepped build left with overflow postings before the state
cache save (`Workspace.recall_compact_steps`, lsp/project.py `_fold_recall`), a namespace at a time:
answers never change, every such index ends up compact (the save then finds nothing to merge and
writes the same payloads), and a lazily restored index is left as it is (compacting decodes it)."""

from __future__ import annotations

from harn_ls.cache.store import ProjectCache
from harn_ls.model.workspace import Workspace
from harn_ls.recall import RecallEngine
from harn_ls.recall.docs import _LazyDocs
from tests.unit.test_cache import cache_env, cold, project, snapshot  # noqa: F401  (fixtures)
from tests.unit.test_cache_rows import answers, fill


def _stepped(project) -> Workspace:
    """A workspace whose recall index was built as a server builds it: a few records a step."""
    ws = Workspace.load(str(project), cache=True)
    engine = RecallEngine()
    for step in ws.recall_build_steps(chunk=2):
        step(engine)
    assert ws.adopt_recall(engine, ws.generation)
    return ws


def test_compact_steps_leave_every_index_compact_and_answers_unchanged(project, cache_env):
    expected, expected_snapshot = answers(Workspace.load(str(project))), cold(project)
    ws = _stepped(project)
    ws.fold_recall_queue()
    indexes = ws._recall._indexes
    assert any(idx._m or idx._tail_term for idx in indexes.values())  # the stepped build left overflow postings
    done = [step() for step in ws.recall_compact_steps()]
    assert any(done)
    assert all(idx._m == 0 and not idx._tail_term and not idx._dead_postings for idx in indexes.values())
    assert not any(step() for step in ws.recall_compact_steps())  # nothing left to do
    assert answers(ws) == expected
    assert snapshot(ws) == expected_snapshot


def test_the_save_after_compact_steps_writes_the_same_index(project, cache_env, tmp_path, monkeypatch):
    """The save compacts each index it writes anyway: compacted before or by the save, the index
    payloads are the same bytes."""
    payloads = []
    for compact_first in (False, True):
        monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / f"cache-{compact_first}"))
        ws = _stepped(project)
        if compact_first:
            ws.fold_recall_queue()
            for step in ws.recall_compact_steps():
                step()
        assert ws.save_cache()
        cache = ProjectCache(str(project))
        payloads.append({ns: {name: cache.read_payload(d) for name, d in cache.index_entry(ns).items()
                              if isinstance(d, dict)} for ns in ws.memory})
    assert payloads[0] == payloads[1]


def test_compact_steps_leave_a_lazily_restored_index_undecoded(project, cache_env):
    expected = fill(project)
    ws = Workspace.load(str(project), cache=True)
    lazy = [ns for ns, idx in ws.recall.indexes.items() if isinstance(idx.docs, _LazyDocs)]
    assert lazy
    assert not any(step() for step in ws.recall_compact_steps())
    assert all(isinstance(ws.recall.indexes[ns].docs, _LazyDocs) for ns in lazy)
    assert answers(ws) == expected


def test_folding_a_delta_at_a_time_equals_settle(project, cache_env):
    """`fold_recall_delta` (RecallEngine.settle_one) folds the queued deltas one by one, in arrival
    order per namespace: the indexes answer as after one `settle`, and nothing is left queued."""
    expected = answers(Workspace.load(str(project)))
    whole, one_by_one = _stepped(project), _stepped(project)
    assert one_by_one._recall.pending
    whole.fold_recall_queue()
    folded = 0
    while one_by_one.fold_recall_delta():
        folded += 1
    assert folded > 1 and not one_by_one._recall.pending and one_by_one._recall._pending_records == 0
    assert not one_by_one.fold_recall_delta()
    for ns, idx in whole._recall._indexes.items():
        other = one_by_one._recall._indexes[ns]
        assert sorted(idx.docs) == sorted(other.docs) and idx.total_tokens == other.total_tokens
    assert answers(one_by_one) == answers(whole) == expected


def test_compact_steps_leave_a_namespace_with_queued_deltas_for_after_the_fold(project, cache_env):
    ws = _stepped(project)
    engine = ws._recall
    first = sorted(engine._pending)[0]
    engine.settle(first)  # one namespace folded (with overflow postings), the others still queued
    queued = set(engine._pending)
    assert queued and first not in queued
    assert engine._indexes[first]._m or engine._indexes[first]._tail_term
    assert any(step() for step in ws.recall_compact_steps())
    assert engine._pending.keys() == queued  # nothing folded by the compaction
    assert not engine._indexes[first]._m and not engine._indexes[first]._tail_term
    while ws.fold_recall_delta():
        pass
    for step in ws.recall_compact_steps():
        step()
    assert all(not idx._m and not idx._tail_term for idx in engine._indexes.values())
