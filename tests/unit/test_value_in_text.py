"""A record whose text is exactly its value's compact JSON may keep the text only (MemoryRecord.value_json,
IN_TEXT): readers still see an equal value, the cache rows round-trip it, and a load that folds values
(the server's) answers exactly as one that does not."""

from __future__ import annotations

import copy
import pickle
import shutil

import orjson
import pytest

from harn_ls.cache.rows import record_from_row, record_row
from harn_ls.formats.harn_json import serde_compact
from harn_ls.formats.jsonl import JsonlLine
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import IN_TEXT, fold_values, memory_record
from harn_ls.model.workspace import Workspace
from harn_ls.recall.tokenizer import analyze, searchable_text
from tests.unit.test_cache import SAMPLE, append, cold, snapshot


def store(i, value, text=None, **extra) -> dict:
    return {"type": "store", "id": i, "namespace": "ns", "key": f"k/{i}", "value": value,
            "text": serde_compact(value) if text is None else text, "tags": ["note"],
            "stored_at": f"2026-01-0{1 + len(i) % 8}T00:00:00Z", **extra}


def project(*events) -> MemoryNamespace:
    space = MemoryNamespace("ns", "/x/events.jsonl")
    space.apply_lines([JsonlLine(n + 1, 0, e) for n, e in enumerate(events)])
    return space


NOTE = {"confidence": 0.49, "source": "chat", "text": "Invoice rounding: \"half-even\", ünïcode \u2028 ok", "n": [1, -0.0, None]}


def test_folded_record_reads_an_equal_value_and_keeps_one_copy():
    space = project(store("a", NOTE))
    r = space.get("a")
    twin = memory_record(**{name: getattr(r, name) for name in ("id", "namespace", "key", "value", "text", "tags",
                                                                "stored_at", "seq", "line_no")})
    before_json, before_analysis, before_search = r.to_json(), analyze(r), searchable_text(r)
    assert r.value_json() == r.text and r.value_in_text and r._value is IN_TEXT
    assert r.value == NOTE and r.value is not r.value  # a new equal dict on each read
    assert r.to_json() == before_json and analyze(r) == before_analysis and searchable_text(r) == before_search
    assert r == twin and not twin.value_in_text
    got = r.value
    got["source"] = "changed"  # what a reader does to its copy never reaches the record
    assert r.value == NOTE


@pytest.mark.parametrize("value, text", [
    ({"n": 1 << 70}, None),  # orjson cannot write it: its text goes through the exact encoder
    ({"f": 1e300}, None),  # orjson spells the exponent "e+300": left as it is
    ({"a": 1}, '{"a": 1}'),  # a text that is not the compact JSON
    ("a string value", None),  # a string value is its own text already
    (7, None),  # only dicts and lists are folded
])
def test_values_that_are_not_folded(value, text):
    space = project(store("a", value, text))
    r = space.get("a")
    assert r.value_json() == serde_compact(value)
    assert not r.value_in_text and r.value == value


def test_with_changes_keeps_or_drops_the_fold():
    r = project(store("a", NOTE)).get("a")
    r.value_json()
    assert r.with_changes(tags=("x",)).value_in_text
    assert r.with_changes(tags=("x",)).value == NOTE
    retexted = r.with_changes(text="plain words")
    assert not retexted.value_in_text and retexted.value == NOTE and retexted.text == "plain words"
    revalued = r.with_changes(value={"b": 2}, text='{"b":2}')
    assert not revalued.value_in_text and revalued.value == {"b": 2}


def test_update_of_a_folded_record_projects_as_an_unfolded_one():
    events = [store("a", NOTE), store("b", ["x", {"y": 1}]),
              {"type": "update", "id": "a", "tags": ["t"], "updated_at": "2026-02-01T00:00:00Z"},
              {"type": "update", "id": "b", "value": {"z": 2}, "updated_at": "2026-02-01T00:00:00Z"}]
    plain = project(*events)
    folding = MemoryNamespace("ns", "/x/events.jsonl")
    for n, e in enumerate(events):
        delta = folding.apply_lines([JsonlLine(n + 1, 0, e)])
        fold_values(delta.added)
    assert folding.records() == plain.records()
    assert [r.to_json() for r in folding.records()] == [r.to_json() for r in plain.records()]


def test_rows_round_trip_a_folded_record():
    space = project(store("a", NOTE), store("b", "plain"), store("c", {"k": [1, 2]}, text="other"))
    fold_values(space.records())
    assert [r.value_in_text for r in space.records()] == [True, False, False]
    for r in space.records():
        row = orjson.loads(orjson.dumps(record_row(r)))
        back = record_from_row(row, "ns")
        assert back == r and back.value_in_text == r.value_in_text
    row = orjson.loads(orjson.dumps(record_row(space.get("a"))))
    assert row[2] == space.get("a").text and row[3] == 1  # the prose once, not twice


@pytest.mark.parametrize("value, mark", [({"not": "text"}, 1), ("text", 2), (None, 1)])
def test_a_row_with_a_wrong_mark_is_refused(value, mark):
    row = orjson.loads(orjson.dumps(record_row(project(store("a", NOTE)).get("a"))))
    row[2], row[3] = value, mark
    with pytest.raises(TypeError):
        record_from_row(row, "ns")


def test_a_folding_load_answers_as_a_plain_one(tmp_path, monkeypatch):
    project_dir = tmp_path / "proj"
    shutil.copytree(SAMPLE, project_dir, symlinks=True)
    log = project_dir / ".harn/memory/agent/notes/events.jsonl"
    for n in range(5):
        value = {"confidence": 0.5 + n / 10, "source": "chat", "text": f"invoice rounding note {n} with money"}
        ev = {"type": "store", "id": f"d-{n}", "namespace": "agent/notes", "key": f"dict/{n}", "value": value,
              "text": serde_compact(value), "tags": ["billing"], "stored_at": f"2026-06-0{n + 1}T10:00:00Z"}
        append(log, orjson.dumps(ev) + b"\n")
    append(log, orjson.dumps({"type": "update", "id": "d-1", "tags": ["changed"],
                              "updated_at": "2026-06-09T10:00:00Z"}) + b"\n")
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "cache"))
    expected = cold(project_dir)
    ws = Workspace.load(str(project_dir), cache=True, fold_values=True)
    folded = [r for s in ws.memory.values() for r in s.records() if r.value_in_text]
    assert len(folded) >= 4  # the dict stores (one was updated: a new record, folded when next analysed)
    assert snapshot(ws) == expected
    assert ws.save_cache()
    warm = Workspace.load(str(project_dir), cache=True)
    assert snapshot(warm) == expected
    restored = [r for s in warm.memory.values() for r in s.records() if r.value_in_text]
    assert {r.id for r in restored} >= {r.id for r in folded}  # the rows kept them folded


def test_a_copied_folded_record_still_reads_its_value():
    r = project(store("a", NOTE)).get("a")
    r.value_json()
    for twin in (copy.copy(r), copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
        assert twin.value_in_text and twin.value == NOTE and twin == r
