"""All namespaces: one `NamespaceIndex` each, recall across them merged in Harn's order."""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, cast

from harn_ls.formats.memory import MemoryDelta
from harn_ls.formats.memory_record import MemoryRecord
from harn_ls.recall.docs import _LazyDocs
from harn_ls.recall.index import NamespaceIndex
from harn_ls.recall.results import DEFAULT_K, Explain, Hit, Mode, NamespaceOutcome, RecallResult, _newest_sort, _tie_sort, clamp_k
from harn_ls.recall.tokenizer import tokenize
from harn_ls.recall.vectors import cosine
from harn_ls.util.json_types import JsonObject

if TYPE_CHECKING:
    from harn_ls.formats.memory import MemoryNamespace

_BACKEND_MODE: dict[str, Mode] = {"bm25": "lexical", "vector": "semantic", "hybrid": "hybrid"}


class RecallEngine:
    """One `NamespaceIndex` per namespace; feed it every `MemoryDelta`.

    `apply_memory_delta` only queues a delta: the index takes the queued deltas, in order, when anything next
    reads it (`indexes` and every method below fold them in first), or at `settle()` — which a
    server calls once its client is quiet. An append batch then costs its projection, not the
    tokenizing and posting merge of its records, and the answers are the same: nothing reads an
    index without folding first. The queue is bounded (`PENDING_MAX` records), so a process that
    never recalls never holds more than that."""

    PENDING_MAX = 10_000  # queued added + removed records (about 100 batches); beyond, `apply_memory_delta` folds them in

    def __init__(self) -> None:
        self._indexes: dict[str, NamespaceIndex] = {}
        # namespace -> deltas (with the config and directory they came with) not yet in its index
        self._pending: dict[str, list[tuple[MemoryDelta, JsonObject | None, str | None]]] = {}
        self._pending_records = 0

    @property
    def indexes(self) -> dict[str, NamespaceIndex]:
        """Every namespace's index, current (queued deltas folded in first)."""
        if self._pending:
            self.settle()
        return self._indexes

    @property
    def pending(self) -> bool:
        """Whether deltas are queued (a `settle()` has work to do)."""
        return bool(self._pending)

    def has_index(self, namespace: str) -> bool:
        """Whether the namespace has (or will have, once queued deltas are in) an index; folds nothing."""
        return namespace in self._indexes or namespace in self._pending

    def settle(self, namespace: str | None = None) -> None:
        """Fold the queued deltas (of one namespace, or all) into their indexes, in arrival order."""
        names = list(self._pending) if namespace is None else [namespace] if namespace in self._pending else []
        for ns in names:
            for delta, config, ns_dir in self._pending.pop(ns):
                self._fold(ns, delta, config, ns_dir)
        if not self._pending:
            self._pending_records = 0

    def settle_one(self) -> bool:
        """`settle` a delta at a time: fold the oldest queued delta of one namespace (a server gives
        back what each one's merges freed in between). False when nothing is queued."""
        for ns, queued in self._pending.items():
            delta, config, ns_dir = queued.pop(0)
            if not queued:
                del self._pending[ns]
            self._fold(ns, delta, config, ns_dir)
            if not self._pending:
                self._pending_records = 0
            return True
        return False

    def _fold(self, ns: str, delta: MemoryDelta, config: JsonObject | None, ns_dir: str | None) -> None:
        self._index(ns, config, ns_dir).apply_delta(delta)
        self._pending_records -= len(delta.added) + len(delta.removed)

    def _index(self, namespace: str, config: JsonObject | None, ns_dir: str | None) -> NamespaceIndex:
        """The namespace's index (made when new), with `config` and `ns_dir` when given."""
        idx = self._indexes.get(namespace)
        if idx is None:
            idx = self._indexes[namespace] = NamespaceIndex(namespace)
        if config is not None:
            idx.config = dict(config)
        if ns_dir is not None:
            idx.ns_dir = ns_dir
        return idx

    def apply_memory_delta(self, namespace: str, delta: MemoryDelta, config: JsonObject | None = None,
                           ns_dir: str | None = None) -> None:
        self._pending.setdefault(namespace, []).append((delta, config, ns_dir))
        self._pending_records += len(delta.added) + len(delta.removed)
        if self._pending_records > self.PENDING_MAX:
            self.settle()

    def set_config(self, namespace: str, config: JsonObject, ns_dir: str | None = None) -> None:
        self.settle(namespace)
        self._index(namespace, config, ns_dir)

    def load(self, namespace: str, records: Iterable[MemoryRecord], config: JsonObject | None = None,
             ns_dir: str | None = None) -> None:
        """(Re)build one namespace from scratch, e.g. after its log was truncated or replaced."""
        self._discard(namespace)
        idx = self._indexes[namespace] = NamespaceIndex(namespace, config, ns_dir)
        idx.add_many(records)

    def sync_namespace(self, mem_ns: MemoryNamespace, delta: MemoryDelta) -> None:
        """Convenience for a `MemoryNamespace`: its config and directory travel with the delta."""
        self.apply_memory_delta(mem_ns.namespace, delta, mem_ns.config, os.path.dirname(mem_ns.path))

    def drop(self, namespace: str) -> None:
        self._discard(namespace)
        self._indexes.pop(namespace, None)

    def _discard(self, namespace: str) -> None:
        """Forget the queued deltas of a namespace whose index is replaced or dropped."""
        for delta, _, _ in self._pending.pop(namespace, ()):
            self._pending_records -= len(delta.added) + len(delta.removed)

    def materialize(self, namespace: str) -> None:
        """See `NamespaceIndex.materialize` (a namespace without an index is a no-op)."""
        idx = self.indexes.get(namespace)
        if idx is not None:
            idx.materialize()

    def materialize_steps(self, namespace: str) -> Iterator[None]:
        """`materialize` in short steps (`NamespaceIndex.materialize_steps`); empty without an index."""
        idx = self.indexes.get(namespace)
        return idx.materialize_steps() if idx is not None else iter(())

    def compact_steps(self) -> list[Callable[[], bool]]:
        """One step per namespace: `NamespaceIndex.compact` when the index holds postings outside its
        sorted arrays (a stepped build's overflow, dead postings), has no delta queued (that one is
        left for a step after the fold) and is not a lazily restored one (compacting decodes every
        record); True when it compacted. What a state-cache save does to each index it writes first
        (results never depend on it); a server does it before the save, a namespace at a time, and
        gives the freed memory back in between."""
        def step(ns: str) -> bool:
            idx = None if ns in self._pending else self._indexes.get(ns)
            if idx is None or isinstance(idx.docs, _LazyDocs) or not (
                    idx._m or idx._tail_term or idx._ndead or idx._dead_postings):
                return False
            idx.compact()
            return True

        return [partial(step, ns) for ns in sorted(self._indexes)]

    def namespaces(self) -> list[str]:
        return sorted(self.indexes)  # (folds queued deltas: a queued namespace may be new)

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
        hits = []
        ranked: list[tuple[float, int, NamespaceIndex]] = []  # lexical hits, made once the merged top k is known
        found: dict[str, NamespaceOutcome] = {}
        for name in self._visit_order():
            # k hits in hand: a record scoring below the k-th of them cannot make the merged top k
            scores = [h.score for h in hits] + [r[0] for r in ranked]
            floor = heapq.nlargest(k, scores)[-1] if len(scores) >= k else None
            ns_hits, found[name] = self._recall_one(self.indexes[name], query, q, k, explain, floor, ranked)
            hits.extend(ns_hits)
        if len(hits) + len(ranked) > k:  # below the k-th score a hit cannot make the cut: its record stays undecoded
            cut = heapq.nlargest(k, [h.score for h in hits] + [r[0] for r in ranked])[-1]
            ranked = [r for r in ranked if r[0] >= cut]
        hits += [self._hit(idx, seq, score, idx.explain(seq, q) if explain else None) for score, seq, idx in ranked]
        outcomes = {name: found[name] for name in sorted(found)}
        if q or any(o.mode != "lexical" for o in outcomes.values()):
            hits = _tie_sort(hits)[:k]
        else:
            hits = _newest_sort(hits)[:k]
        modes = {o.mode for o in outcomes.values()} or {"lexical"}
        mode: Mode = modes.pop() if len(modes) == 1 else "mixed"
        note = "; ".join(f"{name}: {o.note}" for name, o in outcomes.items() if o.note)
        return RecallResult(hits, mode, note, None, tuple(q), k, outcomes)

    def _visit_order(self) -> list[str]:
        """The namespaces, smallest index first: the small ones are quick to rank and their k-th
        score is a floor that lets the big ones skip most of their records. The merged top k does
        not depend on the order (a floor only drops records below k hits in hand; `_tie_sort` is a
        total order)."""
        indexes = self.indexes
        return sorted(indexes, key=lambda name: (len(indexes[name]), name))

    def _recall_one(self, idx: NamespaceIndex, query: str, q: list[str], k: int, explain: bool,
                    floor: float | None = None,
                    ranked: list[tuple[float, int, NamespaceIndex]] | None = None
                    ) -> tuple[list[Hit], NamespaceOutcome]:
        """One namespace's hits; with `ranked`, its lexical hits are added there as (score, seq, index)
        instead, for the caller to make into hits once it knows which make the merged top k."""
        config = dict(idx.config)
        wanted = _BACKEND_MODE.get(config.get("backend", "bm25"), "lexical")
        note = ""
        if wanted != "lexical":
            qv, vecs, why = idx.cached_vectors(query)
            if vecs is not None:
                # (vectors come with the query's own vector)
                hits = self._vector_hits(idx, q, cast("list[float]", qv), vecs, wanted, k, explain)
                return hits, NamespaceOutcome(wanted, "", config, len(idx))
            note = (f"backend {config.get('backend')} (model hint {config.get('embed_model_hint', 'default')!r}) "
                    f"could not be used: {why}; showing lexical BM25 recall instead")
        if not q:
            hits = [self._hit(idx, seq, 0.0) for seq in idx.newest(k)]
        elif ranked is not None:
            ranked += [(score, seq, idx) for score, seq in idx.top_lexical(q, k, floor)]
            hits = []
        else:
            hits = [self._hit(idx, seq, score, idx.explain(seq, q) if explain else None)
                    for score, seq in idx.top_lexical(q, k, floor)]
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
                    ex = replace(base, cosine=cos[seq])
                else:
                    ex = replace(base, cosine=cos[seq], lexical_norm=base.lexical / denom, bm25_weight=bw, cosine_weight=cw)
            hits.append(self._hit(idx, seq, score, ex))
        return hits

    @staticmethod
    def _hit(idx: NamespaceIndex, seq: int, score: float, ex: Explain | None = None) -> Hit:
        r = idx.docs[seq].record
        return Hit(r.id, r.key, idx.namespace, score, r.stored_at, r.tags, r.seq, r, ex)
