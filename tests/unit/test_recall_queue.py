"""RecallEngine.apply queues a batch's deltas and the index folds them in on its next read (or at
`settle()`): no answer may depend on when that happens. Every case compares an engine that folds
lazily with one that folds after every batch, and with a fresh build over the live records."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryDelta, MemoryNamespace
from harn_ls.model.workspace import Workspace
from harn_ls.recall import RecallEngine
from tests.unit.test_recall import store

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"
WORDS = ["ledger", "invoice", "stripe", "tax", "payout", "retry", "webhook", "refund", "a", "x9"]
QUERIES = ["ledger", "invoice tax", "retry retry webhook", "refund payout stripe", "nothing", ""]


def _answers(engine: RecallEngine) -> list:
    out = []
    for q in QUERIES:
        for ns in (None, *sorted(engine.namespaces())):
            res = engine.recall(q, k=7, namespace=ns)
            out.append([(h.namespace, h.id, h.seq, h.score) for h in res.hits])
    return out


def _configs(engine: RecallEngine) -> dict:
    return {ns: (ix.config, ix.ns_dir) for ns, ix in engine.indexes.items()}


class Twin:
    """One namespace projection feeding a lazy engine (folds on read) and an eager one (folds at once)."""

    def __init__(self, ns: str) -> None:
        self.mem = MemoryNamespace(ns, f"/nonexistent/{ns}/events.jsonl")
        self.line = 0

    def feed(self, events: list[dict], lazy: RecallEngine, eager: RecallEngine) -> None:
        lines = []
        for e in events:
            self.line += 1
            lines.append(JsonlLine(self.line, 0, e))
        delta = self.mem.apply_lines(lines)
        lazy.sync_namespace(self.mem, delta)
        eager.sync_namespace(self.mem, delta)
        eager.settle()


def _event(rng: random.Random, ns: str, n: int, ids: list[str]) -> dict:
    roll = rng.random()
    if roll < 0.15 and ids:
        return {"type": "update", "id": rng.choice(ids), "namespace": ns, "tags": [rng.choice(WORDS)],
                "updated_at": "2026-02-01T00:00:00Z"}
    if roll < 0.25 and ids:
        gone = ids.pop(rng.randrange(len(ids)))
        return {"type": "forget", "id": f"{ns}-f{n}", "namespace": ns, "predicate": {"id": gone},
                "forgotten_ids": [gone], "forgotten_at": "2026-02-01T00:00:00Z"}
    rid = f"{ns}-r{n}"
    ids.append(rid)
    return store(rid, rng.choice(WORDS), " ".join(rng.choices(WORDS, k=rng.randint(1, 12))),
                 tags=rng.sample(WORDS, rng.randint(0, 2)), stored_at=f"2026-01-{1 + n % 9:02d}T00:00:00Z", ns=ns)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["feed", "read", "drop", "config", "settle"]), st.integers(0, 1),
                          st.integers(1, 30)), min_size=1, max_size=25), st.integers(0, 1000))
def test_folding_late_never_changes_an_answer(ops, seed):
    rng = random.Random(seed)
    lazy, eager = RecallEngine(), RecallEngine()
    twins = [Twin("n0"), Twin("n1")]
    ids: list[list[str]] = [[], []]
    n = 0
    for op, which, size in ops:
        twin = twins[which]
        ns = twin.mem.namespace
        if op == "feed":
            events = []
            for _ in range(size):
                n += 1
                events.append(_event(rng, ns, n, ids[which]))
            twin.feed(events, lazy, eager)
        elif op == "drop":  # the workspace drops a vanished log's index: its queued deltas go with it
            lazy.drop(ns)
            eager.drop(ns)
            twins[which], ids[which] = Twin(ns), []
        elif op == "config":  # a later config wins over the one a queued delta carried
            config = {"backend": "bm25", "embed_model_hint": f"m{size}"}
            lazy.set_config(ns, config)
            eager.set_config(ns, config)
        elif op == "settle":
            lazy.settle()
            assert not lazy.pending
        else:
            assert _answers(lazy) == _answers(eager)
            assert _configs(lazy) == _configs(eager)
    assert _answers(lazy) == _answers(eager)
    assert _configs(lazy) == _configs(eager)
    for twin in twins:  # and equal to an index built from scratch over the live records
        if twin.mem.namespace in lazy.namespaces():
            fresh = RecallEngine()
            fresh.load(twin.mem.namespace, twin.mem.records())
            for q in QUERIES:
                got = lazy.recall(q, k=7, namespace=twin.mem.namespace).hits
                want = fresh.recall(q, k=7, namespace=twin.mem.namespace).hits
                assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]


def test_apply_only_queues_and_a_read_folds():
    engine = RecallEngine()
    twin, other = Twin("n0"), RecallEngine()
    twin.feed([store("a", "k", "ledger tax", ns="n0")], engine, other)
    assert engine.pending and engine.has_index("n0")
    assert engine._indexes == {}  # nothing folded yet
    assert engine.namespaces() == ["n0"]  # reading folds
    assert not engine.pending and len(engine.indexes["n0"]) == 1


def test_a_later_config_wins_over_a_queued_one():
    engine = RecallEngine()
    twin, other = Twin("n0"), RecallEngine()
    twin.feed([store("a", "k", "ledger", ns="n0")], engine, other)
    engine.set_config("n0", {"backend": "bm25", "embed_model_hint": "later"})
    assert engine.indexes["n0"].config == {"backend": "bm25", "embed_model_hint": "later"}


def test_the_queue_is_bounded():
    engine = RecallEngine()
    engine.PENDING_MAX = 10
    twin, other = Twin("n0"), RecallEngine()
    twin.feed([store(f"r{i}", "k", "ledger", ns="n0") for i in range(6)], engine, other)
    assert engine.pending
    twin.feed([store(f"s{i}", "k", "tax", ns="n0") for i in range(6)], engine, other)
    assert not engine.pending  # 12 queued records > 10: folded by apply itself
    assert len(engine._indexes["n0"]) == 12


def test_load_and_drop_discard_what_was_queued():
    engine = RecallEngine()
    twin, other = Twin("n0"), RecallEngine()
    twin.feed([store("a", "k", "ledger", ns="n0")], engine, other)
    engine.load("n0", [])  # rebuilt from (no) records: the queued delta is not replayed on top
    assert not engine.pending and len(engine.indexes["n0"]) == 0
    twin.feed([store("b", "k", "tax", ns="n0")], engine, other)
    engine.drop("n0")
    assert not engine.pending and engine.namespaces() == []
    engine.apply_memory_delta("n0", MemoryDelta())
    assert engine.namespaces() == ["n0"] and len(engine.indexes["n0"]) == 0


def test_workspace_settle_folds_the_batch_and_equals_a_cold_load(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(SAMPLE, project)
    ws = Workspace.load(str(project))
    assert not ws.fold_recall_queue()  # no index yet: nothing to fold
    ws.recall  # noqa: B018 - build it
    log = project / ".harn/memory/agent/notes/events.jsonl"
    with open(log, "a") as fh:
        for i in range(12):
            fh.write('{"type":"store","id":"q%d","namespace":"agent/notes","key":"k%d","value":"ledger refund %d",'  # noqa: UP031 (JSON template)
                     '"text":"ledger refund %d","tags":[],"stored_at":"2026-11-29T00:00:%02dZ"}\n' % (i, i, i, i, i))
    ws.apply_changes([str(log)])
    assert ws._recall.pending
    assert ws.fold_recall_queue() and not ws._recall.pending
    assert not ws.fold_recall_queue()
    cold = Workspace.load(str(project))
    for q in ("ledger refund", "invoice stripe", ""):
        got = [(h.namespace, h.id, h.score) for h in ws.recall.recall(q, k=20).hits]
        assert got == [(h.namespace, h.id, h.score) for h in cold.recall.recall(q, k=20).hits]
