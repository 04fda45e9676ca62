"""A restored namespace builds its records when first needed, long after the server froze its model
(lsp/project.py). What the build makes (a seq -> record dict and an id map as big as the log) must
not stay in the cyclic collector's view: at 1M events every later pass walked a 262k-entry dict,
~20 ms each, in the middle of some apply or hover. The project thread collects once and freezes
after the task that built it, and only then."""

from __future__ import annotations

import asyncio
import gc
import threading

from harn_ls.formats.memory import MemoryNamespace, builds_here
from tests.unit.test_cache import cache_env, project  # noqa: F401  (fixtures)
from tests.unit.test_cache_rows import NS, fill


def _in_collector_view(obj: object) -> bool:
    """Whether a collector pass would walk `obj` (it is in generation 0, 1 or 2, not frozen)."""
    return any(o is obj for gen in (0, 1, 2) for o in gc.get_objects(gen))


def test_a_namespace_built_after_the_freeze_leaves_the_collector_view(project, cache_env):
    from harn_ls.lsp.project import Project  # (the server layer: only for this test)

    fill(project)

    async def scenario() -> dict:
        async def on_changes(_proj, _changes) -> None:
            return None

        proj = Project(str(project), on_changes)
        try:
            await proj.load()
            await proj.warm_recall()
            await proj.settle_recall()
            space = await proj.run(lambda: proj.ws.memory[NS])
            built_before = await proj.run(lambda: space.materialized)
            builds, frozen = await proj.run(builds_here), gc.get_freeze_count()
            # a task that builds nothing: whatever it makes stays where the collector looks
            kept = await proj.run(lambda: [[i] for i in range(100)])
            frozen_after_plain = gc.get_freeze_count()
            plain_young = _in_collector_view(kept)
            # a request that needs the namespace's records builds them on the project thread
            n_active = await proj.run(lambda: len(space.active))
            active, by_id = vars(space)["active"], vars(space)["_by_id"]
            built = await proj.run(builds_here) - builds
            return {"built_before": built_before, "builds": built, "n_active": n_active,
                    "plain_kept_frozen_count": frozen_after_plain == frozen, "plain_young": plain_young,
                    "active_young": _in_collector_view(active), "by_id_young": gc.is_tracked(by_id) and _in_collector_view(by_id),
                    "frozen_grew": gc.get_freeze_count() > frozen_after_plain}
        finally:
            proj.close()

    try:
        got = asyncio.run(scenario())
    finally:
        gc.unfreeze()  # (the rest of the test process keeps a collector that looks at everything)
    assert got["built_before"] is False  # the settle leaves the namespace to be built when needed
    assert got["builds"] == 1 and got["n_active"] > 0
    assert got["plain_kept_frozen_count"] and got["plain_young"]  # no freeze after a task that built nothing
    assert got["frozen_grew"]
    assert not got["active_young"] and not got["by_id_young"]  # the build's containers: out of the collector's view


def test_builds_are_counted_per_thread_once_per_restored_namespace():
    built = []

    def loader(space: MemoryNamespace) -> None:
        built.append(space.namespace)
        space.active, space._by_id, space.forgotten, space.hidden, space.forgets = {}, {}, set(), [], []

    summary = {"seq": 0, "config": {}, "open_event": None, "event_count": 0, "last_event_at": None, "sizes": (0, 0, 0)}
    a = MemoryNamespace.restored("a", "/p/a/events.jsonl", summary, [], loader)
    b = MemoryNamespace.restored("b", "/p/b/events.jsonl", summary, [], loader)
    c = MemoryNamespace.restored("c", "/p/c/events.jsonl", summary, [], loader)
    before = builds_here()
    a.active, a.forgotten, a.hidden  # noqa: B018  (three lazy reads: one build)
    assert builds_here() - before == 1 and a.materialized and not b.materialized
    b.records()
    assert builds_here() - before == 2 and built == ["a", "b"]
    plain = MemoryNamespace("p", "/p/p/events.jsonl")
    plain.records()  # a namespace read from its log is never "built"
    assert builds_here() - before == 2
    # a build on another thread (another project's) is not counted on this one
    other = threading.Thread(target=lambda: c.records())
    other.start()
    other.join()
    assert built == ["a", "b", "c"] and builds_here() - before == 2
