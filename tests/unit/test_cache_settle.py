"""What the server does once recall answers from a cached index (lsp/project.py settle_recall): the
records the index left undecoded are decoded in short steps (`Workspace.recall_settle_steps`), and
the index and (when it is needed) its namespace hold the same record objects. None of it may change an answer, whatever
happens between the steps, and rows that do not check out are never trusted."""

from __future__ import annotations

import asyncio

import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.recall.docs import _LazyDocs
from tests.unit.test_cache import append, cache_env, cold, event, ids_in, project, snapshot  # noqa: F401  (fixtures)
from tests.unit.test_cache_rows import NOTES, NS, answers, entry, fill


def run_steps(steps: list, limit: int | None = None) -> tuple[int, list]:
    """Run settle steps (each until it says done); stop after `limit` calls. Returns (calls, steps left)."""
    calls = 0
    for i, step in enumerate(steps):
        while True:
            if limit is not None and calls >= limit:
                return calls, steps[i:]
            calls += 1
            if step():
                break
    return calls, []


def test_settle_steps_decode_in_steps_and_share_the_records(project, cache_env):
    expected = fill(project)
    expected_snapshot = cold(project)
    ws = Workspace.load(str(project), cache=True)
    assert isinstance(ws.recall.indexes[NS].docs, _LazyDocs)
    n_records = len(ws.recall.indexes[NS])
    calls, _ = run_steps(ws.recall_settle_steps(rows_per_step=2))
    assert calls > len(ws.recall.namespaces()) * 2  # a decode step was called more than once: spread out
    idx, space = ws.recall.indexes[NS], ws.memory[NS]
    assert not isinstance(idx.docs, _LazyDocs)
    assert not space.materialized  # the namespace is built when first needed (from the same rows)
    assert len(space.active) == n_records
    # one decoded record per row: the index and the namespace share it
    assert all(idx.docs[seq].record is record for seq, record in space.active.items())
    assert answers(ws) == expected
    assert snapshot(ws) == expected_snapshot


def test_append_between_settle_steps_equals_a_cold_load(project, cache_env):
    fill(project)
    ws = Workspace.load(str(project), cache=True)
    ws.recall  # noqa: B018 - recall answers (from the cached index)
    _, left = run_steps(ws.recall_settle_steps(rows_per_step=1), limit=3)  # part of agent/notes' rows decoded
    assert left
    log = project / NOTES
    old = ids_in(log)
    append(log, event("store", "settle-1", NS, 1) + event("update", old[0], NS, 2) + event("forget", old[1], NS, 3))
    ws.apply_changes([str(log)])
    run_steps(left)
    assert snapshot(ws) == cold(project)
    assert answers(ws) == answers(Workspace.load(str(project)))


def test_rescan_between_settle_steps_equals_a_cold_load(project, cache_env):
    fill(project)
    ws = Workspace.load(str(project), cache=True)
    ws.recall  # noqa: B018 - the index is in use
    _, left = run_steps(ws.recall_settle_steps(rows_per_step=1), limit=2)
    ws.rescan()
    run_steps(left)
    run_steps(ws.recall_settle_steps())
    assert snapshot(ws) == cold(project)


@pytest.mark.parametrize("damage", ["flip-row", "swap-rows", "grow-rows"])
def test_settle_steps_never_trust_damaged_rows(project, cache_env, damage):
    """Damage the rows after the load opened them (the manifest said they were fine): the decoded
    steps are dropped when the running CRC or the size disagrees, and the log is projected again."""
    expected = fill(project)
    expected_snapshot = cold(project)
    folder, e = entry(project)
    rows = folder / e["rows"]["name"]
    ws = Workspace.load(str(project), cache=True)
    ws.recall  # noqa: B018 - recall answers (from the cached index)
    data = bytearray(rows.read_bytes())
    if damage == "flip-row":  # same size, one byte changed
        data[data.index(b"money")] ^= 0x01
    elif damage == "swap-rows":  # the same rows in another order
        data = bytearray(b"\n".join(reversed(bytes(data).split(b"\n")[:-1])) + b"\n")
    else:  # one more row after the ones the row index knows
        data += data[: data.index(b"\n") + 1]
    with open(rows, "r+b") as fh:  # in place: the open payload sees the change
        fh.write(bytes(data))
    run_steps(ws.recall_settle_steps(rows_per_step=3))
    assert ws._project_cache.readers[NS]._fallback is not None or ws._project_cache.readers[NS]._all is None
    assert answers(ws) == expected
    assert snapshot(ws) == expected_snapshot


def test_settle_steps_without_a_cache_or_recall_do_nothing(project, cache_env):
    ws = Workspace.load(str(project))
    assert ws.recall_settle_steps() == []  # no index yet
    ws.recall  # noqa: B018 - built from the records: nothing lazy to settle
    calls, _ = run_steps(ws.recall_settle_steps())
    assert calls == len(ws.recall.namespaces())
    assert snapshot(ws) == cold(project)


def test_the_namespace_takes_the_rows_the_index_decoded(project, cache_env):
    """Without the steps too: whichever of the index and the namespace decodes the rows first,
    the other gets the same record objects (one copy of each record in memory)."""
    fill(project)
    ws = Workspace.load(str(project), cache=True)
    ws.recall.materialize(NS)
    space = ws.memory[NS]
    assert not space.materialized
    assert all(ws.recall.indexes[NS].docs[seq].record is r for seq, r in space.active.items())


def test_a_project_closed_while_it_settles_stops_quietly(project, cache_env):
    """A folder removed from the workspace mid-settle: the remaining steps are skipped, nothing
    is scheduled on its stopped thread (which would raise)."""
    # the server layer (pygls) is imported only by this test of the module's upkeep
    from harn_ls.lsp.project import Project

    fill(project)

    async def scenario() -> tuple[bool, bool]:
        async def on_changes(_proj, _changes) -> None:
            return None

        proj = Project(str(project), on_changes)
        await proj.load()
        await proj.warm_recall()
        lazy_before = await proj.run(lambda: isinstance(proj.ws.recall.indexes[NS].docs, _LazyDocs))
        proj.close()
        await proj.settle_recall()  # returns at once instead of raising on the stopped pool
        # (its thread is stopped: read the model directly, past the thread guard the tests turn on)
        return lazy_before, isinstance(vars(proj.ws)["_recall"].indexes[NS].docs, _LazyDocs)

    lazy_before, lazy_after = asyncio.run(scenario())
    assert lazy_before and lazy_after  # nothing was decoded after close


def test_index_materialized_in_slices_equals_one_go_and_a_change_meanwhile_wins(project, cache_env):
    fill(project)
    sliced = Workspace.load(str(project), cache=True)
    whole = Workspace.load(str(project), cache=True)
    a, b = sliced.recall.indexes[NS], whole.recall.indexes[NS]
    n = len(a)
    assert n > 2 and isinstance(a.docs, _LazyDocs)
    steps = list(a.materialize_steps(records_per_step=1))
    assert len(steps) >= n  # one slice per record, plus the term table and the fetch
    b.materialize()
    assert list(a.docs) == list(b.docs)
    assert [(d.slot, d.record.seq) for d in a.docs.values()] == [(d.slot, d.record.seq) for d in b.docs.values()]
    assert [r.seq for r in a._srec] == [r.seq for r in b._srec]
    assert answers(sliced) == answers(whole)

    # a change between slices: an appended store joins the lazy documents, an update replaces one of
    # them (the old slot dies, the new record gets a new one); either way the remaining slices leave it alone
    for kind in ("store", "update"):
        ws = Workspace.load(str(project), cache=True)
        idx = ws.recall.indexes[NS]
        pending = idx.materialize_steps(records_per_step=1)
        for _ in range(3):
            next(pending)
        log = project / NOTES
        append(log, event(kind, "slice-1", NS, 1 if kind == "store" else 2))
        ws.apply_changes([str(log)])
        assert ws.recall.indexes[NS] is idx  # reading the index folds the batch it queued (RecallEngine.apply)
        docs_after_change = idx.docs
        assert isinstance(docs_after_change, _LazyDocs)
        for _ in pending:
            pass
        assert idx.docs is docs_after_change
        assert answers(ws) == answers(Workspace.load(str(project), cache=False))


def test_settle_steps_wait_for_a_pause_in_the_clients_requests(project, cache_env, monkeypatch):
    """Each settle step waits until the client has been quiet for SETTLE_QUIET_S (at most
    SETTLE_MAX_WAIT_S): a burst of hovers is not interleaved with upkeep."""
    from harn_ls.lsp import project as project_mod
    from harn_ls.lsp.project import Project

    fill(project)
    busy_until = [0.0]
    calls_while_busy = []

    async def main() -> None:
        proj = Project(str(project), lambda *_: None)
        await proj.run(lambda: setattr(proj, "ws", Workspace.load(str(project), cache=True)))
        await proj.run(lambda: proj.ws.recall)
        loop = asyncio.get_running_loop()
        real_run = proj.run

        async def watched_run(fn, *args):
            if loop.time() < busy_until[0]:
                calls_while_busy.append(fn)
            return await real_run(fn, *args)

        proj.run = watched_run
        busy_until[0] = loop.time() + 0.3  # a client busy for 0.3 s: requests end to end
        quiet = lambda: 0.0 if loop.time() < busy_until[0] else 1.0  # noqa: E731
        started = loop.time()
        await proj.settle_recall(quiet)
        assert loop.time() - started >= 0.3 - 0.01
        proj.close()

    monkeypatch.setattr(project_mod, "SETTLE_MAX_WAIT_S", 5.0)
    asyncio.run(main())
    assert calls_while_busy == []


def test_request_registry_reports_quiet_time():
    from harn_ls.lsp.requests import RequestRegistry

    async def main() -> None:
        reg = RequestRegistry()
        with reg.track(1, "textDocument/hover"):
            assert reg.quiet_for() == 0.0
        await asyncio.sleep(0.02)
        assert reg.quiet_for() >= 0.015

    asyncio.run(main())


def test_the_fold_before_the_save_is_a_task_per_delta_each_after_a_pause(project, cache_env, monkeypatch):
    """The deltas left queued for the recall index are folded one project-thread task each, every
    one after a wait for a pause in the client's requests (as a single task, ~0.8 s at 100k, a hover
    waited behind all of it); the index then answers as a cold load's does."""
    import threading

    from harn_ls.lsp.project import Project
    from tests.unit.test_cache import append as append_bytes

    log = project / NOTES
    events: list = []
    real_fold = Workspace.fold_recall_delta

    def watched_fold(ws) -> bool:
        did = real_fold(ws)
        events.append(("fold", did, threading.get_ident()))
        return did

    async def main() -> tuple[int, int, list]:
        proj = Project(str(project), lambda *_: None)
        await proj.run(lambda: setattr(proj, "ws", Workspace.load(str(project))))
        await proj.run(lambda: proj.ws.recall)
        for n in range(3):  # three batches: three deltas queued for the index, none folded yet
            append_bytes(log, event("store", f"fold-{n}", NS, 900 + n))
            await proj.run(lambda: proj.ws.apply_changes([str(log)]))
        queued = await proj.run(lambda: sum(map(len, proj.ws._recall._pending.values())))
        real_wait = proj._wait_for_quiet

        async def watched_wait() -> None:
            events.append(("wait",))
            await real_wait()

        proj._wait_for_quiet = watched_wait
        monkeypatch.setattr(Workspace, "fold_recall_delta", watched_fold)
        await proj._fold_recall()
        monkeypatch.setattr(Workspace, "fold_recall_delta", real_fold)
        pending = await proj.run(lambda: sum(map(len, proj.ws._recall._pending.values())))
        got = await proj.run(lambda: answers(proj.ws))
        proj.close()
        return queued, pending, got

    queued, pending, got = asyncio.run(main())
    assert queued >= 3 and pending == 0  # (the three batches', and any the load left queued)
    folds = [e for e in events if e[0] == "fold"]
    # a task per delta, then the one that found none left; each right after a wait for a pause
    assert [e[1] for e in folds] == [True] * queued + [False]
    assert all(events[i - 1] == ("wait",) for i, e in enumerate(events) if e[0] == "fold")
    assert len({e[2] for e in folds}) == 1 and folds[0][2] != threading.get_ident()  # on the project thread
    expected = answers(Workspace.load(str(project)))
    assert got == expected
