"""Server start from a warm state cache (lsp/project.py): the facts of unchanged namespaces stay in
the cache's form until recall is ready, and nothing a client can ask for sees the difference."""

from __future__ import annotations

import asyncio

import pytest

from harn_ls.lsp.project import Project
from harn_ls.workspace import Workspace
from tests.unit.test_cache import FACTS, append, cache_env, cold, event, ids_in, project, snapshot  # noqa: F401  (fixtures)
from tests.unit.test_cache_rows import fill

FACT_NS = "project/facts"


def _start(project) -> Project:
    async def on_changes(_proj, _changes) -> None:
        return None
    return Project(str(project), on_changes)


def test_status_before_facts_are_decoded_equals_a_cold_load(project, cache_env):
    fill(project)
    cold_ws = Workspace.load(str(project))
    assert cold_ws.facts  # the sample project has facts: the test means something

    async def scenario():
        proj = _start(project)
        await proj.load()
        # what the start path reads (status, problems), without decoding any fact
        early = await proj.run_before_facts(lambda: (
            sorted(proj.ws.deferred_fact_namespaces()), proj.ws.counts(), [p.code for p in proj.ws.problems()],
            len(proj.ws.facts)))
        await proj.warm_recall()
        still = await proj.run_before_facts(lambda: sorted(proj.ws.deferred_fact_namespaces()))
        # any other request decodes them first
        seen = await proj.run(lambda: (sorted(proj.ws.deferred_fact_namespaces()), snapshot(proj.ws)))
        proj.close()
        return early, still, seen

    early, still, (left, snap) = asyncio.run(scenario())
    deferred, counts, codes, decoded = early
    assert FACT_NS in deferred and decoded < len(cold_ws.facts)
    assert counts == cold_ws.counts()
    assert codes == [p.code for p in cold_ws.problems()]
    assert still == deferred  # recall became ready without them
    assert left == []
    assert snap == snapshot(cold_ws)


def test_settle_decodes_the_facts_first(project, cache_env):
    fill(project)

    async def scenario():
        proj = _start(project)
        await proj.load()
        await proj.warm_recall()
        steps = []
        real_run = proj.run

        async def watched(fn, *args):
            steps.append(getattr(fn, "__name__", "?"))
            return await real_run(fn, *args)

        proj.run = watched
        await proj.settle_recall()
        proj.run = real_run
        left = await proj.run_before_facts(lambda: sorted(proj.ws.deferred_fact_namespaces()))
        snap = await proj.run(lambda: snapshot(proj.ws))
        proj.close()
        return steps, left, snap

    steps, left, snap = asyncio.run(scenario())
    assert steps[0] == "_decode_facts_if_deferred"
    assert left == []
    assert snap == cold(project)


@pytest.mark.parametrize("kind", ["store", "update"])
def test_an_append_before_the_facts_are_decoded_equals_a_cold_load(project, cache_env, kind):
    fill(project)
    log = project / FACTS
    rid = "start-1" if kind == "store" else ids_in(log)[0]

    async def scenario():
        applied = asyncio.Event()

        async def on_changes(_proj, _changes) -> None:
            applied.set()

        proj = Project(str(project), on_changes)
        await proj.load()
        append(log, event(kind, rid, FACT_NS, 1))
        # the watcher's batch runs on the project thread as the model is (no request came first)
        proj._on_batch_from_thread({str(log)}, False)
        await asyncio.wait_for(applied.wait(), 30)
        left = await proj.run_before_facts(lambda: sorted(proj.ws.deferred_fact_namespaces()))
        snap = await proj.run(lambda: snapshot(proj.ws))
        proj.close()
        return left, snap

    left, snap = asyncio.run(scenario())
    # an update decodes the namespace it changes; stores leave its cached facts undecoded (state_tail.py)
    assert (FACT_NS in left) == (kind == "store")
    assert snap == cold(project)
