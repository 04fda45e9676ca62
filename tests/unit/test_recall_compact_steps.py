"""A server compacts the recall indexes a stepped build left with overflow postings before the state
cache save (`Workspace.recall_compact_steps`, lsp/project.py `_fold_recall`), a namespace at a time:
answers never change, every such index ends up compact (the save then finds nothing to merge and
writes the same payloads), and a lazily restored index is left as it is (compacting decodes it)."""

from __future__ import annotations

from harn_ls.recall import RecallEngine
from harn_ls.recall.docs import _LazyDocs
from harn_ls.state_cache import StateCache
from harn_ls.workspace import Workspace
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
        cache = StateCache(str(project))
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
