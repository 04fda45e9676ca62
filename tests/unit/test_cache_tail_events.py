"""Random batches of stores, updates, forgets and opens appended to a namespace restored from the
state cache, applied without decoding its records (cache/tail.py): after each batch, a one-shot
recall and inspect, a long-lived model that took the batches one by one (its recall index restored
lazily), and a load from the saved cache all equal a load without the cache."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json
from tests.unit.test_cache import NOTES, SAMPLE, append, cold, event, ids_in, snapshot
from tests.unit.test_cache_append import recall_answers
from tests.unit.test_cache_inspect import dump, fast

NS = "agent/notes"
KINDS = ["store", "store_old_id", "update", "update_value", "forget", "forget_two", "open", "bad", "unknown"]


def line(kind: str, pick: int, n: int, ids: list[str]) -> bytes:
    rid = ids[pick % len(ids)] if ids else f"none-{pick}"
    if kind == "store":
        return event("store", f"rs-{n}", NS, n)
    if kind == "store_old_id":  # a second record of an id, or one hidden by a tombstone
        return event("store", rid, NS, n)
    if kind == "update":
        return event("update", rid, NS, n, tags=["billing", f"u{pick % 3}"], flags={f"f{pick % 2}": True})
    if kind == "update_value":
        return event("update", rid, NS, n, value={"text": f"rounding value {n}", "pick": pick})
    if kind == "forget":
        return event("forget", rid, NS, n)
    if kind == "forget_two":
        return event("forget", rid, NS, n, forgotten_ids=[rid, ids[(pick * 7 + 1) % len(ids)] if ids else "x"])
    if kind == "open":
        return orjson.dumps({"type": "open", "id": f"o-{n}", "namespace": NS, "backend": "bm25",
                             "bm25_weight": (pick % 10) / 10}) + b"\n"
    if kind == "bad":
        return b'{"type": "forget", "forgotten_ids": "oops"}\n{"type": "update"\n'
    return orjson.dumps({"type": "merge", "id": f"m-{n}"}) + b"\n"


@settings(max_examples=int(os.environ.get("HARN_LS_CACHE_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 40)), min_size=1, max_size=8),
                min_size=1, max_size=3),
       st.booleans())
def test_random_tails_never_change_an_answer(batches, save_between):
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        shutil.copytree(SAMPLE, project, symlinks=True)
        old_env = os.environ.get("HARN_LS_CACHE_DIR")
        os.environ["HARN_LS_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            full = Workspace.load(str(project), cache=True)
            full.recall  # noqa: B018 - saved with its recall index
            assert full.save_cache()
            live = Workspace.load(str(project), cache=True)
            live.recall  # noqa: B018 - restored lazily: it takes every batch below
            log = project / NOTES
            n = 1000
            for batch in batches:
                ids = ids_in(log)
                data = b""
                for kind, pick in batch:
                    data += line(kind, pick, n, ids)
                    n += 1
                append(log, data)
                live.apply_changes([str(log)])
                expected = cold(project)
                one_shot = Workspace.load(str(project), cache=True, memory_only=True)
                assert recall_answers(one_shot) == expected["recall"]
                assert not one_shot.memory[NS].materialized and not live.memory[NS].materialized  # (lazily, all of it)
                got, inspect_ws, _data = fast(project)
                assert got == dump(inspect_json(Workspace.load(str(project)))), batch
                assert recall_answers(live) == expected["recall"], batch
                if save_between:
                    assert one_shot.save_cache() and inspect_ws.save_cache()
            assert snapshot(live) == expected
            assert live.save_cache()
            assert snapshot(Workspace.load(str(project), cache=True)) == expected
        finally:
            if old_env is None:
                os.environ.pop("HARN_LS_CACHE_DIR", None)
            else:
                os.environ["HARN_LS_CACHE_DIR"] = old_env
