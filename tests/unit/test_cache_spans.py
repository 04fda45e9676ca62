"""Fact spans kept between runs (harn_ls/cache/spans.py, issue 14 item 1): spans restored from
the store equal spans computed afresh, and every change to the source file, to the facts or to
the store itself gives the answer of a fresh computation, never the stored one."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import zlib
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.cache import spans
from harn_ls.cache.spans import SpanStore
from harn_ls.formats import fact_anchors
from harn_ls.formats.fact_anchors import Anchor
from harn_ls.model.fact_spans import FactSpanCache, fact_spans
from harn_ls.model.workspace import Workspace
from tests.helpers.views import INVOICE, INVOICE_FACT, append_events, copy_sample, fact_event

TAX = "src/billing/tax.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


@pytest.fixture
def env(tmp_path: Path) -> dict:
    return {"HARN_LS_CACHE_DIR": str(tmp_path / "cache")}


def answer(spans) -> list:
    return [(s.fact.id, s.evidence.ref, s.anchor) for s in spans]


def fresh(ws, rel: str) -> list:
    return answer(fact_spans(ws, os.path.join(ws.root, rel), 0.0))


def server_run(project: Path, env: dict, rels=(INVOICE, TAX)) -> tuple:
    """One 'server run': a model, a span cache over the stored spans, the files asked about, a save."""
    fact_anchors._cache.clear()  # a new process: no source file read yet
    fact_anchors._refused.clear()
    ws = Workspace.load(str(project))
    cache = FactSpanCache(store=SpanStore.open(str(project), env))
    got = {rel: answer(cache.spans(ws, os.path.join(ws.root, rel), 0.0)) for rel in rels}
    cache.save_store()
    return ws, cache, got


def test_restored_spans_equal_computed_ones(project, env):
    ws, first, got = server_run(project, env)
    assert first.stats.anchored > 0 and first.stats.restored == 0
    assert got == {rel: fresh(ws, rel) for rel in (INVOICE, TAX)}
    ws, second, again = server_run(project, env)
    assert again == got and again == {rel: fresh(ws, rel) for rel in (INVOICE, TAX)}
    assert second.stats.anchored == 0 and second.stats.restored == first.stats.anchored
    assert {a.state for spans in again.values() for _i, _r, a in spans} >= {"ok", "stale"}


def test_restore_brings_files_back_before_any_request(project, env):
    server_run(project, env)
    ws = Workspace.load(str(project))
    cache = FactSpanCache(store=SpanStore.open(str(project), env))
    while not cache.restore(ws, budget_s=0.0):  # one file a step
        pass
    assert len(cache) == 2 and cache.stats.restored > 0 and cache.stats.anchored == 0
    hits = cache.stats.hits
    assert answer(cache.spans(ws, str(project / INVOICE), 0.0)) == fresh(ws, INVOICE)
    assert cache.stats.hits == hits + 1  # served as a warm cache serves it


def test_no_store_when_the_cache_is_off(project, tmp_path):
    assert SpanStore.open(str(project), {"HARN_LS_CACHE_DIR": str(tmp_path / "c"), "HARN_LS_CACHE": "off"}) is None
    cache = FactSpanCache()
    assert cache.restore(Workspace.load(str(project))) and not cache.save_store()


def _edit_same_size(src: Path) -> None:
    text = src.read_text()
    # the same size, other text, a new mtime; once every "round" was edited, edits turn them back
    old, new = ("round", "ROUND") if "round" in text else ("ROUND", "round")
    i = text.index(old)
    src.write_text(text[:i] + new + text[i + 5:])
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _touch(src: Path) -> None:
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _replace_by_rename(src: Path) -> None:
    tmp = src.with_name(src.name + ".tmp")
    tmp.write_text("# saved by an editor\n" + src.read_text())
    os.replace(tmp, src)


def _replace_same_text(src: Path) -> None:
    tmp = src.with_name(src.name + ".tmp")
    shutil.copy2(src, tmp)
    os.replace(tmp, src)


@pytest.mark.parametrize("change", [_edit_same_size, _touch, _replace_by_rename, _replace_same_text, Path.unlink])
def test_a_changed_source_file_is_anchored_afresh(project, env, change):
    server_run(project, env)
    change(project / INVOICE)
    ws, cache, got = server_run(project, env)
    assert got[INVOICE] == fresh(ws, INVOICE)
    assert cache.stats.restored > 0  # tax.py still came from the store
    ws, again, got2 = server_run(project, env)  # and what was computed is what is stored now
    assert got2 == got
    if change is Path.unlink:  # "missing" anchors cost nothing: never stored, computed each time
        assert {a.state for _i, _r, a in got[INVOICE]} == {"missing"} and INVOICE not in cache.store.recent(5)
    else:
        assert cache.stats.anchored > 0 and again.stats.anchored == 0  # invoice.py did not come from the store


def test_the_lines_decide_even_when_the_stat_matches(project, env):
    """A stored entry whose stat still matches but whose text digest does not is not used."""
    server_run(project, env)
    src = project / INVOICE
    st = src.stat()
    _edit_same_size(src)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))  # the old mtime back: stat identical, text not
    assert src.stat().st_mtime_ns == st.st_mtime_ns and src.stat().st_size == st.st_size
    ws, cache, got = server_run(project, env, rels=(INVOICE,))
    assert got[INVOICE] == fresh(ws, INVOICE) and cache.stats.anchored > 0


def test_facts_added_and_forgotten_look_up_their_own_anchors(project, env):
    server_run(project, env)
    append_events(project, [fact_event("fact_new", "new", f"{INVOICE}:3-4", snippet="import")])
    ws, cache, got = server_run(project, env)
    assert got[INVOICE] == fresh(ws, INVOICE) and "fact_new" in [i for i, _r, _a in got[INVOICE]]
    assert cache.stats.anchored == 1  # only the new fact's evidence
    forget = {"type": "forget", "id": "019e1d0f-4300-7465-88da-25cd264dee99", "namespace": "project/facts",
              "predicate": {"id": INVOICE_FACT}, "forgotten_ids": [INVOICE_FACT],
              "forgotten_at": "2026-05-12T09:14:03.512848123+00:00"}
    append_events(project, [forget])
    ws, cache, got = server_run(project, env)
    assert got[INVOICE] == fresh(ws, INVOICE) and INVOICE_FACT not in [i for i, _r, _a in got[INVOICE]]
    assert cache.stats.anchored == 0


def test_an_edited_fact_range_or_snippet_is_anchored_afresh(project, env):
    append_events(project, [fact_event("fact_e", "e", f"{INVOICE}:28-29", snippet="round")])
    server_run(project, env)
    append_events(project, [fact_event("fact_e", "e", f"{INVOICE}:28-29", snippet="return")])  # same id, new snippet
    ws, cache, got = server_run(project, env)
    assert got[INVOICE] == fresh(ws, INVOICE) and cache.stats.anchored == 1


def _store_file(env: dict, project: Path) -> Path:
    return Path(SpanStore.open(str(project), env).path)


def _rewrite(path: Path, doc: dict, fmt: str = spans.FORMAT) -> None:
    body = orjson.dumps(doc)
    path.write_bytes(f"{fmt} {len(body)} {zlib.crc32(body)}\n".encode() + body)


def _corrupt(path: Path, _project: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x20
    path.write_bytes(bytes(data))


def _truncate(path: Path, _project: Path) -> None:
    path.write_bytes(path.read_bytes()[:-7])


def _foreign_version(path: Path, _project: Path) -> None:
    _rewrite(path, orjson.loads(path.read_bytes().partition(b"\n")[2]), fmt="harn-ls-spans/0 r200 m10000")


def _foreign_project(path: Path, _project: Path) -> None:
    doc = orjson.loads(path.read_bytes().partition(b"\n")[2])
    doc["project"] = doc["project"] + "-evil"
    _rewrite(path, doc)


def _wrong_anchors(path: Path, _project: Path) -> None:
    """A well-formed file with anchors of another shape (each file's entry is dropped, not trusted)."""
    doc = orjson.loads(path.read_bytes().partition(b"\n")[2])
    bad_columns = (
        lambda c: c[3].__setitem__(slice(None), ["refused"] * len(c[3])),  # refused is never stored
        lambda c: c[3].__setitem__(0, ["ok"]),  # not a state (and not hashable)
        lambda c: c[4].__setitem__(0, 0),  # lines are 1-based
        lambda c: c[0].__setitem__(0, "1"),  # not a line number
        lambda c: c[2].__setitem__(0, 7),  # not a snippet
        lambda c: c[5].pop(),  # columns of different lengths
    )
    for i, item in enumerate(doc["files"]):
        bad_columns[i % len(bad_columns)](item[3])
    _rewrite(path, doc)


@pytest.mark.parametrize("which", range(6))
def test_each_malformed_column_drops_the_entry(project, env, which):
    _ws, _c, before = server_run(project, env)
    path = _store_file(env, project)
    doc = orjson.loads(path.read_bytes().partition(b"\n")[2])
    for item in doc["files"]:
        [lambda c: c[3].__setitem__(0, "refused"), lambda c: c[3].__setitem__(0, ["ok"]),
         lambda c: c[4].__setitem__(0, 0), lambda c: c[0].__setitem__(0, "1"),
         lambda c: c[2].__setitem__(0, 7), lambda c: c[5].pop()][which](item[3])
    _rewrite(path, doc)
    ws, cache, got = server_run(project, env)
    assert got == before == {rel: fresh(ws, rel) for rel in (INVOICE, TAX)}
    assert cache.stats.restored == 0 and cache.stats.anchored > 0


@pytest.mark.parametrize("damage", [_corrupt, _truncate, _foreign_version, _foreign_project, _wrong_anchors])
def test_a_damaged_store_is_never_trusted(project, env, damage):
    _ws, _c, before = server_run(project, env)
    damage(_store_file(env, project), project)
    ws, cache, got = server_run(project, env)
    assert got == before == {rel: fresh(ws, rel) for rel in (INVOICE, TAX)}
    assert cache.stats.restored == 0 and cache.stats.anchored > 0
    ws, again, _got = server_run(project, env)  # rewritten by the save: usable again
    assert again.stats.anchored == 0


def test_stored_paths_never_lead_out_of_the_project(tmp_path, env):
    """A store naming paths outside the project, or a file since replaced by a symlink to a sibling
    `proj-evil`, serves nothing from the store: the file is refused exactly as without a store."""
    project = copy_sample(tmp_path)
    evil = tmp_path / "project-evil"
    (evil / "src/billing").mkdir(parents=True)
    shutil.copy2(project / INVOICE, evil / INVOICE)  # the same text: its stored anchors would match
    server_run(project, env)
    path = _store_file(env, project)
    doc = orjson.loads(path.read_bytes().partition(b"\n")[2])
    entry = next(item for item in doc["files"] if item[0] == INVOICE)
    for rel in ("../project-evil/" + INVOICE, str(evil / INVOICE), "src/../../project-evil/x.py", "src//a.py", ""):
        doc["files"].append([rel, *entry[1:]])
    _rewrite(path, doc)
    store = SpanStore.open(str(project), env)
    assert len(store) == 2 and set(store.recent(10)) == {INVOICE, TAX}
    (project / INVOICE).unlink()
    os.symlink(evil / INVOICE, project / INVOICE)
    fact_anchors._cache.clear()  # a new process: no source file read yet
    ws = Workspace.load(str(project))
    cache = FactSpanCache(store=store)
    while not cache.restore(ws):
        pass
    got = answer(cache.spans(ws, str(project / INVOICE), 0.0))
    assert got == fresh(ws, INVOICE) and {a.state for _i, _r, a in got} == {"refused"}
    assert answer(cache.spans(ws, str(evil / INVOICE), 0.0)) == []  # not a project file at all


def test_the_store_is_bounded(project, env, monkeypatch):
    monkeypatch.setattr(spans, "MAX_FILES", 1)
    ws, cache, _got = server_run(project, env)
    assert len(cache.store) == 1 and cache.store.recent(5) == [TAX]  # the least recently used went first
    monkeypatch.setattr(spans, "MAX_FILES", 10)
    monkeypatch.setattr(spans, "MAX_ANCHORS", 1)
    ws, cache, _got = server_run(project, env)
    assert len(cache.store) <= 1 and cache.store._anchors <= 1


# ----------------------------------------------------------------------------- random sequences
_OPS = ("restart", "add_fact", "forget_fact", "edit_same_size", "touch", "rename_replace", "delete", "recreate",
        "corrupt_store", "delete_store")


def _apply_op(op: str, project: Path, env: dict, i: int) -> None:
    src = project / INVOICE
    if op == "add_fact":
        append_events(project, [fact_event(f"fact_r{i}", "r", f"{INVOICE}:{1 + i % 30}-{2 + i % 30}",
                                           snippet=["def", "return", None, "round"][i % 4])])
    elif op == "forget_fact":
        append_events(project, [{"type": "forget", "id": f"019e1d0f-4300-7465-88da-25cd264d{i:04x}",
                                 "namespace": "project/facts", "predicate": {"id": INVOICE_FACT},
                                 "forgotten_ids": [INVOICE_FACT], "forgotten_at": "2026-05-12T09:14:03.5+00:00"}])
    elif op in ("edit_same_size", "touch", "rename_replace") and src.exists():
        {"edit_same_size": _edit_same_size, "touch": _touch, "rename_replace": _replace_by_rename}[op](src)
    elif op == "delete" and src.exists():
        src.rename(project / "invoice.bak")
    elif op == "recreate" and (project / "invoice.bak").exists():
        (project / "invoice.bak").rename(src)
    elif op == "corrupt_store" and Path(SpanStore.open(str(project), env).path).exists():
        _corrupt(Path(SpanStore.open(str(project), env).path), project)
    elif op == "delete_store":
        shutil.rmtree(Path(SpanStore.open(str(project), env).path).parent, ignore_errors=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.sampled_from(_OPS), min_size=1, max_size=8))
def test_any_sequence_answers_as_a_fresh_computation(ops):
    tmp = Path(tempfile.mkdtemp(prefix="spans-seq-"))
    try:
        project, env = copy_sample(tmp), {"HARN_LS_CACHE_DIR": str(tmp / "cache")}
        ws, cache, _got = server_run(project, env)
        for i, op in enumerate(ops):
            _apply_op(op, project, env, i)
            if op == "restart":
                ws, cache, got = server_run(project, env)
            else:
                ws.apply_changes([str(project / ".harn/memory/project/facts/events.jsonl")])
                got = {rel: answer(cache.spans(ws, os.path.join(ws.root, rel), 0.0)) for rel in (INVOICE, TAX)}
                cache.save_store()
            assert got == {rel: fresh(ws, rel) for rel in (INVOICE, TAX)}, ops[:i + 1]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ----------------------------------------------------------------------------- the server's hooks
def test_server_saves_after_requests_and_restores_at_settle(project, env, monkeypatch):
    """lsp/project.py + lsp/span_save.py: a request that anchored spans leads to one delayed save on
    the project thread; the next server run brings the file back during its settle, before any request."""
    # the server layer (pygls) is imported by the one test of its hooks only
    from harn_ls.lsp import span_save
    from harn_ls.lsp.project import Project

    monkeypatch.setattr(span_save, "SAVE_DELAY_S", 0.05)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    path = str(project / INVOICE)

    async def first_run() -> list:
        proj = Project(str(project), lambda _p, _c: None)
        await proj.load()
        got = await span_save.run_noting_spans(proj, lambda: answer(proj.fact_spans.spans(proj.ws, path, 0.0)))
        deadline = time.monotonic() + 30  # the save comes SAVE_DELAY_S later, on a busy machine maybe much later
        while not await proj.run(lambda: not proj.fact_spans.store.unsaved) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        proj.close()
        return got

    async def second_run() -> tuple:
        fact_anchors._cache.clear()  # a new process
        proj = Project(str(project), lambda _p, _c: None)
        await proj.load()
        await proj.settle_recall()
        stats = await proj.run(lambda: (proj.fact_spans.stats.restored, proj.fact_spans.stats.anchored))
        got = await proj.run(lambda: answer(proj.fact_spans.spans(proj.ws, path, 0.0)))
        expected = await proj.run(lambda: fresh(proj.ws, INVOICE))
        proj.close()
        return stats, got, expected

    first = asyncio.run(first_run())
    assert Path(SpanStore.open(str(project), env).path).is_file()
    (restored, anchored), got, expected = asyncio.run(second_run())
    assert got == first == expected
    assert restored == len(first) and anchored == 0


def test_the_state_cache_keeps_and_clears_the_store_with_its_own_files(project, env, monkeypatch):
    """The store lives in a folder of the state folder: a state cache save (whose sweep drops old
    files it does not name) leaves it alone, `cache clear` drops it with the rest."""
    # (kept next to the one test that clears the state cache)
    from harn_ls.cache.store import ProjectCache

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    server_run(project, env)
    path = Path(SpanStore.open(str(project), env).path)
    old = path.stat().st_mtime - 3600
    os.utime(path.parent, (old, old))
    os.utime(path, (old, old))
    ws = Workspace.load(str(project), cache=True)
    assert ws.save_cache()
    assert len(SpanStore.open(str(project), env)) == 2
    assert ProjectCache(str(project)).clear() and not path.exists()


def test_what_json_cannot_hold_is_anchored_each_time_not_stored(project, env):
    """A snippet with a lone surrogate or a range beyond 64-bit integers: correct answers, a store
    that still saves (without those anchors)."""
    ws = Workspace.load(str(project))
    cache = FactSpanCache(store=SpanStore.open(str(project), env))
    key_ok, key_odd, key_huge = (3, 4, "import"), (5, 6, "x\ud800y"), (2, 1 << 70, None)
    cache.store.remember(INVOICE, str(project / INVOICE), "d", {key_ok: Anchor("ok", 3, 4),
                                                               key_odd: Anchor("stale", 5, 6),
                                                               key_huge: Anchor("unchecked", 2, 40)})
    assert cache.save_store()
    stored = SpanStore.open(str(project), env).anchors(INVOICE, str(project / INVOICE), "d")
    assert stored.get(key_ok) == Anchor("ok", 3, 4) and stored.get(key_odd) is None and stored.get(key_huge) is None
    assert answer(cache.spans(ws, str(project / INVOICE), 0.0)) == fresh(ws, INVOICE)


def test_the_delayed_save_waits_for_a_pause_in_batches(monkeypatch):
    """lsp/span_save.py: a save due while watcher batches keep coming is put off until a second
    without one (and written anyway after MAX_POSTPONED tries).

    The batches come as the save looks (each of its first three looks finds one just applied), not
    at fixed times beside it: a loaded machine runs timers late, and a look run late would otherwise
    miss a batch the test meant to come first."""
    # the server layer (pygls) is imported by the tests of its hooks only
    from harn_ls.lsp import span_save

    saved = []

    class Proj:
        closed = False

        def __init__(self, busy_looks: int) -> None:
            self.busy_looks = busy_looks  # the save's looks that find a batch applied that moment
            self.batches: list[float] = [0.0]

        @property
        def last_batch_at(self) -> float:
            if self.busy_looks:
                self.busy_looks -= 1
                self.batches.append(time.time())
            return self.batches[-1]

        def submit(self, fn, *args):
            saved.append(time.time())

    monkeypatch.setattr(span_save, "QUIET_AFTER_BATCH_S", 0.05)

    async def main() -> None:
        proj = Proj(busy_looks=3)
        span_save._submit_save(proj)
        assert saved == []  # a batch was just applied: put off
        deadline = time.time() + 30
        while not saved and time.time() < deadline:
            await asyncio.sleep(0.01)
        assert proj.busy_looks == 0, "saved while batches were still coming"
        assert len(saved) == 1 and saved[0] - proj.batches[-1] >= 0.05 - 0.005  # a pause after the last batch
        monkeypatch.setattr(span_save, "MAX_POSTPONED", 0)
        span_save._submit_save(Proj(busy_looks=1))
        assert len(saved) == 2  # never put off forever

    asyncio.run(main())
