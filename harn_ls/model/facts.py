"""The workspace's facts: the indexes by id and by file, and the facts of namespaces restored
from the state cache, decoded only when something needs them (mixed into `Workspace`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harn_ls.model.change_kinds import ChangeSet

if TYPE_CHECKING:
    from typing import TypeAlias

    from harn_ls.cache.store import ProjectCache
    from harn_ls.formats.fact_types import Fact
    from harn_ls.formats.facts import FactEntry, FactsSource
    from harn_ls.formats.problems import Problem

    # (namespace, seq): a fact's place, the memory record holding it
    FactKey: TypeAlias = tuple[str, int]

# Annotations name `Workspace` (harn_ls/model/workspace.py) without importing it: that module imports this one.


class FactsPart:
    """Fact indexes and deferred cached facts (mixed into `Workspace`)."""

    # Set by `Workspace.__init__` (harn_ls/model/workspace.py), declared here for the methods below.
    facts: dict[FactKey, Fact]
    facts_by_id: dict[str, Fact]
    _fact_keys_by_id: dict[str, list[FactKey]]  # duplicate ids: the last one shown
    facts_by_file: dict[str, set[FactKey]]
    fact_file_stamps: dict[str, int]  # renewed as a file's facts change: model/fact_spans.py
    _fact_stamp: int
    _fact_problems: dict[FactKey, list[Problem]]
    _pending_facts: dict[str, FactsSource]  # memory_only/defer_facts: cached facts not decoded (unless changed)
    _project_cache: ProjectCache | None

    def _fact_entries(self, ns: str) -> list[FactEntry]:
        """[(seq, fact or None, problems)] of a namespace, in an order consistent with both `facts`
        and `_fact_problems` (so a restore rebuilds both dicts in the same order)."""
        if ns in self._pending_facts:  # saving a namespace whose cached facts were never decoded
            self._restore_pending_facts(ns, ChangeSet())
        f_keys = [k for k in self.facts if k[0] == ns]
        p_keys = [k for k in self._fact_problems if k[0] == ns]
        in_p = set(p_keys)
        order: list[FactKey] = []
        i = 0
        for k in f_keys:
            if k in in_p:
                while p_keys[i] != k:
                    order.append(p_keys[i])
                    i += 1
                i += 1
            order.append(k)
        order += p_keys[i:]
        return [(k[1], self.facts.get(k), self._fact_problems.get(k, [])) for k in order]

    def _restore_facts(self, ns: str, facts: FactsSource, changes: ChangeSet) -> None:
        """Index the facts of a namespace restored from the cache (`facts()` decodes them)."""
        for seq, fact, problems in facts():
            key = (ns, seq)
            if problems:
                self._fact_problems[key] = problems
            if fact is not None:
                self.facts[key] = fact
                self._index_fact(fact, key, changes)

    def _restore_pending_facts(self, ns: str, changes: ChangeSet) -> None:
        """Decode the deferred cached facts of `ns` into place before the facts of lines appended
        since (read while they stayed deferred): the order a load that decoded them first gives
        (dict order decides which duplicate id is shown, and the order a save writes)."""
        facts = self._pending_facts.pop(ns)
        tail = [k for k in self.facts if k[0] == ns]
        tail_problems = [(k, p) for k, p in self._fact_problems.items() if k[0] == ns]
        if not tail and not tail_problems:
            self._restore_facts(ns, facts, changes)
            return
        tail_facts = [(k, self.facts[k]) for k in tail]
        for key, fact in reversed(tail_facts):  # (last first: each still finds the ones before it)
            self._unindex_fact(fact, key, changes)
        for key, _fact in tail_facts:
            del self.facts[key]
        for key, _p in tail_problems:
            del self._fact_problems[key]
        self._restore_facts(ns, facts, changes)
        for key, problems in tail_problems:
            self._fact_problems.setdefault(key, problems)  # (a cached one is back in place already)
        for key, fact in tail_facts:
            self.facts[key] = fact
            self._index_fact(fact, key, changes)

    def _index_fact(self, fact: Fact, key: FactKey, changes: ChangeSet) -> None:
        self.facts_by_id[fact.id] = fact
        self._fact_keys_by_id.setdefault(fact.id, []).append(key)
        for ev in fact.evidence:
            if ev.range is not None:
                self.facts_by_file.setdefault(ev.range.path, set()).add(key)
                changes.fact_files.add(ev.range.path)
                self._fact_stamp += 1
                self.fact_file_stamps[ev.range.path] = self._fact_stamp

    def _unindex_fact(self, fact: Fact, key: FactKey, changes: ChangeSet) -> None:
        keys = self._fact_keys_by_id.get(fact.id, [])
        if key in keys:
            keys.remove(key)
        if self.facts_by_id.get(fact.id) is fact:
            if keys:  # duplicate ids: the last remaining one is shown
                self.facts_by_id[fact.id] = self.facts[keys[-1]]
            else:
                del self.facts_by_id[fact.id]
        if not keys:
            self._fact_keys_by_id.pop(fact.id, None)
        for ev in fact.evidence:
            if ev.range is not None:
                in_file = self.facts_by_file.get(ev.range.path)
                if in_file is not None:
                    in_file.discard(key)
                    if not in_file:
                        del self.facts_by_file[ev.range.path]
                changes.fact_files.add(ev.range.path)
                self._fact_stamp += 1
                self.fact_file_stamps[ev.range.path] = self._fact_stamp

    # ---------------------------------------------------- deferred cached facts
    def deferred_fact_namespaces(self) -> set[str]:
        return set(self._pending_facts)

    # (a deferred namespace was restored from the state cache: `_project_cache` is set while one is pending)
    def cached_inspect_facts(self, ns: str) -> tuple[list[str], list[int], bytes] | None:
        """(ids, ends, body) of a deferred namespace's printed facts (ProjectCache.inspect_facts)."""
        return self._project_cache.inspect_facts(ns) if ns in self._pending_facts else None  # type: ignore[union-attr]

    def cached_fact_count(self, ns: str) -> int:
        """How many facts a deferred namespace's cache entry holds (0 when not deferred)."""
        return self._project_cache.fact_summaries[ns][0] if ns in self._pending_facts else 0  # type: ignore[union-attr]

    def cached_inspect_fact_body(self, ns: str) -> memoryview | None:
        """The printed facts of a deferred namespace, to print whole (ProjectCache.inspect_fact_body)."""
        return self._project_cache.inspect_fact_body(ns) if ns in self._pending_facts else None  # type: ignore[union-attr]

    def materialize_facts(self) -> None:
        """Decode every deferred namespace's cached facts into `facts` and the fact indexes."""
        for ns in list(self._pending_facts):
            self._restore_pending_facts(ns, ChangeSet())

    def facts_for_file(self, rel_path: str) -> list[Fact]:
        keys = self.facts_by_file.get(rel_path, ())
        return [self.facts[k] for k in sorted(keys) if k in self.facts]

