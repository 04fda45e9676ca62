"""Server start from a warm state cache (lsp/project.py): the facts of unchanged namespaces stay in
the cache's form until recall is ready, and nothing a client can ask for sees the difference."""

from __future__ import annotations

import asyncio

import pytest

from harn_ls.lsp.project import Project
from harn_ls.model.workspace import Workspace
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
    # an update decodes the namespace it changes; stores leave its cached facts undecoded (cache/tail.py)
    assert (FACT_NS in left) == (kind == "store")
    assert snap == cold(project)


def test_the_first_fan_out_leaves_the_facts_deferred(project, cache_env):
    """The start's first fan-out (every kind, memory too) queues a recall-index fold; it runs while
    the recall warm-up is still going and must not decode the facts the load deferred (recall-ready
    would wait for them), yet the server's answers afterwards are a cold load's."""
    # the server module (pygls, lsprotocol) is only this test's: the others drive a bare Project
    from harn_ls.lsp.server import create_server
    from harn_ls.model.change_kinds import RESCAN_KINDS
    from harn_ls.model.workspace import ChangeSet

    fill(project)

    async def scenario():
        server = create_server()
        sent = []
        server.protocol.notify = lambda method, params=None: sent.append(method)
        proj = Project(str(project), server.on_changes)
        server.projects[proj.folder_path] = proj
        await proj.load()
        await server.on_changes(proj, ChangeSet(rescanned=True, kinds=set(RESCAN_KINDS)))
        while server.background:  # the queued fold (and whatever else the fan-out spawned)
            await asyncio.gather(*list(server.background))
        left = await proj.run_before_facts(lambda: sorted(proj.ws.deferred_fact_namespaces()))
        snap = await proj.run(lambda: snapshot(proj.ws))
        proj.close()
        return sent, left, snap

    sent, left, snap = asyncio.run(scenario())
    assert "harn/status" in sent
    assert FACT_NS in left
    assert snap == cold(project)


def test_start_trace_writes_a_timeline_only_when_asked(monkeypatch, capsys):
    """HARN_LS_START_TRACE=1: one stderr line per step (wall since the process started, CPU, the
    step); off, nothing at all (stdout is the LSP stream and is never written either way)."""
    # the trace module is only this test's
    from harn_ls.lsp import start_trace

    monkeypatch.setattr(start_trace, "enabled", False)
    start_trace.mark("server created")
    assert capsys.readouterr() == ("", "")

    monkeypatch.setattr(start_trace, "enabled", True)
    monkeypatch.setattr(start_trace, "_started", start_trace._process_start_epoch())
    start_trace.mark("recall ready /p")
    start_trace.mark("settled /p")
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert [line.split(maxsplit=7)[7] for line in lines] == ["recall ready /p", "settled /p"]
    walls = [float(line.split()[2]) for line in lines]
    cpus = [float(line.split()[5]) for line in lines]
    # this process has run for a while (the test session), and the clocks only move forward
    assert 0 < walls[0] <= walls[1] and 0 < cpus[0] <= cpus[1]


def _initialize(server, root) -> None:
    uri = root.as_uri()
    server.protocol.handle_message(server.protocol.structure_message(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "p"}], "capabilities": {}}}))


def test_the_load_starts_at_initialize_and_add_folder_takes_it_over(project, cache_env):
    """A folder of the initialize request loads while the answer and `initialized` go by; nothing is
    said about it before `initialized`, and the same Project (loaded once) then serves it."""
    # the server module (pygls, lsprotocol) is only these tests'
    from harn_ls.lsp.server import create_server

    async def scenario():
        server = create_server()
        sent = []
        server.protocol._send_data = lambda data: sent.append(getattr(data, "method", None) or "response")
        _initialize(server, project)
        await server.preloading[str(project)]  # the folder's project search
        preloaded, load = server.loads[str(project)]
        await load
        before_initialized = list(sent)
        loads = []
        real_load = preloaded.load

        async def counted():
            loads.append(1)
            return await real_load()
        preloaded.load = counted
        server.protocol.handle_message(server.protocol.structure_message(
            {"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        while "harn/status" not in sent:
            await asyncio.sleep(0.01)
        taken = (server.projects.get(str(project)) is preloaded, dict(server.preloading) or dict(server.loads), loads)
        counts = await preloaded.run_before_facts(lambda: preloaded.ws.counts())
        for proj in server.projects.values():
            proj.close()
        return before_initialized, taken, counts

    before, (same, left, loads), counts = asyncio.run(scenario())
    assert before == ["response"]  # the initialize answer only
    assert same and left == {} and loads == []  # taken over, not loaded again
    assert counts == Workspace.load(str(project)).counts()


def test_a_folder_removed_before_initialized_is_never_served(project, cache_env):
    # the server module (pygls, lsprotocol) is only these tests'
    from harn_ls.lsp.server import create_server

    async def scenario():
        server = create_server()
        server.protocol._send_data = lambda data: None
        _initialize(server, project)
        await server.preloading[str(project)]  # the folder's project search
        preloaded, load = server.loads[str(project)]
        server.remove_folder(str(project))
        await asyncio.wait([load], timeout=30)
        return load.done(), preloaded.closed, dict(server.preloading) or dict(server.loads), dict(server.projects)

    stopped, closed, left, served = asyncio.run(scenario())
    assert stopped and closed and left == {} and served == {}


def test_a_folder_removed_while_its_projects_are_searched_is_never_served(project, cache_env):
    # the server module (pygls, lsprotocol) is only these tests'
    from harn_ls.lsp.server import create_server

    async def scenario():
        server = create_server()
        server.protocol._send_data = lambda data: None
        _initialize(server, project)
        search = server.preloading[str(project)]
        server.remove_folder(str(project))  # the search has not run yet: it is cancelled
        await asyncio.wait([search], timeout=30)
        await asyncio.sleep(0.05)
        return search.cancelled(), dict(server.preloading), dict(server.loads), dict(server.projects)

    cancelled, left, loads, served = asyncio.run(scenario())
    assert cancelled and left == {} and loads == {} and served == {}
