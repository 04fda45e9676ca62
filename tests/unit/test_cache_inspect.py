"""A warm one-shot `inspect --json` prints the facts of unchanged namespaces from their cached
inspect form (never decoded): the bytes must equal an uncached run's, whatever changed, and a cached
form that is damaged, missing or foreign is never printed."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harn_ls.cache import tail
from harn_ls.cache.store import MANIFEST, ProjectCache
from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json
from tests.helpers.cache_damage import flip_cut_or_delete
from tests.unit.test_cache import FACTS, NOTES, append, cache_env, cli, event, project  # noqa: F401  (fixtures)

OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
TEAM = ".harn/memory/team/extra/events.jsonl"


def fact_event(fid: str, ns: str, n: int, claim: str, ref: str | None = "src/billing/invoice.py:28-29",
               confidence=0.75) -> bytes:
    evidence = [{"kind": "file_range", "ref": ref, "snippet": "x"}] if ref else [{"kind": "user_input", "ref": "chat"}]
    value = {"asserted_at": f"2026-05-{1 + n % 28:02d}T14:11:02.318Z", "claim": claim, "confidence": confidence,
             "evidence": evidence, "id": fid, "kind": "observation", "provenance": {"agent": "t"},
             "schema": "harn.fact.v1"}
    ev = {"type": "store", "id": f"mem-{ns}-{n}", "namespace": ns, "key": f"fact:observation:{fid}", "value": value,
          "text": orjson.dumps(value).decode(), "tags": [], "stored_at": f"2026-06-{1 + n % 28:02d}T10:00:00.000Z"}
    return orjson.dumps(ev) + b"\n"


def add_tricky_facts(project: Path) -> None:
    """Facts in a second namespace whose ids sort between and equal to the first one's (ties keep
    namespace order), claims with newlines, quotes, controls and non-ASCII, and an invalid fact."""
    team = project / TEAM
    team.parent.mkdir(parents=True, exist_ok=True)
    ids = ["fact_0", "fact_a26c5c67468c8d3fe33f8c8c0f5489e6", "fact_m", "fact_zz", "fact_m"]
    claims = ["line one\nline two", 'a "quoted" \\ claim', "bidi \u202e and \x1b[2J and \u0085", "zürich €", "dup"]
    data = b"".join(fact_event(fid, "team/extra", i, c, ref=None if i % 2 else "src/a.py:1-2")
                    for i, (fid, c) in enumerate(zip(ids, claims, strict=True)))
    data += fact_event("fact_bad", "team/extra", 9, "no confidence", confidence="high")  # a fact problem
    team.write_bytes(data)
    append(project / FACTS, fact_event("fact_m", "project/facts", 50, "same id, other namespace", confidence=1))


def dump(data: dict) -> bytes:
    return orjson.dumps(data, default=str, option=OPTIONS)


def cold_bytes(project: Path) -> bytes:
    return dump(inspect_json(Workspace.load(str(project))))


def fast(project: Path) -> tuple[bytes, Workspace, dict]:
    ws = Workspace.load(str(project), cache=True, defer_facts=True, one_shot=True)
    data = inspect_json(ws, facts_fragment=True)
    return dump(data), ws, data


def fill(project: Path) -> None:
    ws = Workspace.load(str(project), cache=True)
    assert ws.save_cache()


def test_warm_inspect_prints_cached_facts_byte_for_byte(project, cache_env):
    add_tricky_facts(project)
    expected = cold_bytes(project)
    fill(project)
    got, ws, data = fast(project)
    assert got == expected
    assert isinstance(data["facts"], orjson.Fragment)  # printed from the cache...
    assert not ws.facts  # ...with no fact decoded
    assert ws.deferred_fact_namespaces() == set(ws.memory) >= {"project/facts", "team/extra"}
    assert data["counts"]["facts"] == len(orjson.loads(expected)["facts"])
    assert any(p["code"] for p in orjson.loads(got)["problems"] if "fact_bad" in p["message"] or p["path"].endswith(TEAM))
    assert ws.save_cache()  # nothing changed: the entries are kept as they are
    again, ws2, _ = fast(project)
    assert again == expected and ws2._project_cache.hits["team/extra"] == "same"


@pytest.mark.parametrize("changed", [FACTS, TEAM, NOTES])
def test_an_appended_namespace_is_decoded_and_merged_with_the_cached_ones(project, cache_env, changed, monkeypatch):
    add_tricky_facts(project)
    fill(project)
    ns = "project/facts" if changed == FACTS else "team/extra" if changed == TEAM else "agent/notes"
    append(project / changed, fact_event("fact_m", ns, 77, "appended, sorts among the cached ones"))
    expected = cold_bytes(project)
    got, ws, data = fast(project)
    assert got == expected
    assert isinstance(data["facts"], orjson.Fragment)
    # an appended store leaves the cached facts undecoded: only the new fact is, merged into their body
    assert ns in ws.deferred_fact_namespaces() and [k for k in ws.facts if k[0] == ns] == [(ns, ws.memory[ns].seq - 1)]
    assert ws.save_cache()
    assert fast(project)[0] == expected
    assert dump(inspect_json(Workspace.load(str(project), cache=True))) == expected
    # an update of no cached fact (an unknown id here) leaves them undecoded too
    append(project / changed, fact_event("fact_m", ns, 78, "appended, then updated").replace(b'"store"', b'"update"'))
    expected = cold_bytes(project)
    got, ws, data = fast(project)
    assert got == expected and isinstance(data["facts"], orjson.Fragment)
    assert ns in ws.deferred_fact_namespaces() and not ws.memory[ns].materialized
    monkeypatch.setattr(tail, "TAIL_KEEP_MAX", 0)  # written again: the appended fact is a cached one now
    assert ws.save_cache()
    assert fast(project)[0] == expected
    # an update of a cached fact decodes them (in place, before the appended ones), merged as decoded facts
    cached = next(ln for ln in (project / changed).read_bytes().splitlines() if b'"harn.fact.v1"' in ln)
    update = {"type": "update", "id": orjson.loads(cached)["id"], "namespace": ns, "text": "updated fact text",
              "updated_at": "2026-07-01T00:00:00.000Z"}
    append(project / changed, orjson.dumps(update) + b"\n")
    expected = cold_bytes(project)
    got, ws, data = fast(project)
    assert got == expected and isinstance(data["facts"], orjson.Fragment)
    assert ns not in ws.deferred_fact_namespaces() and any(k[0] == ns for k in ws.facts)
    assert not ws.memory[ns].materialized  # (the records are not: only the facts)
    assert ws.save_cache()
    assert fast(project)[0] == expected


@pytest.mark.parametrize("mode", ["defer_facts", "memory_only"])
def test_a_torn_append_saves_the_deferred_facts_too(project, cache_env, mode):
    add_tricky_facts(project)
    fill(project)
    append(project / TEAM, fact_event("fact_t", "team/extra", 60, "torn")[:-20])  # no whole new line
    if mode == "defer_facts":
        got, ws, _ = fast(project)
        assert got == cold_bytes(project)
    else:  # as `harn-ls recall` loads
        ws = Workspace.load(str(project), cache=True, memory_only=True)
    assert ws._project_cache.hits["team/extra"] == "appended"
    assert ws.save_cache()  # rewrites team/extra: its facts must be in it although never decoded
    expected = cold_bytes(project)
    assert dump(inspect_json(Workspace.load(str(project), cache=True))) == expected
    assert fast(project)[0] == expected


def manifest_entry(project: Path, ns: str) -> tuple[Path, dict, dict]:
    folder = Path(ProjectCache(str(project)).folder)
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    return folder, manifest, manifest["namespaces"][ns]


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "unnamed", "wrong_count", "wrong_ends"])
def test_damaged_cached_inspect_facts_are_never_printed(project, cache_env, damage):
    add_tricky_facts(project)
    expected = cold_bytes(project)
    fill(project)
    folder, manifest, e = manifest_entry(project, "team/extra")
    payload = folder / e["ifacts"]["name"]
    data = payload.read_bytes()
    if not flip_cut_or_delete(payload, damage, b"fact_"):
        if damage == "unnamed":
            del e["ifacts"]
        else:  # consistent payloads (size and checksum match) that do not hold the counted facts
            head, _, body = data.partition(b"\n")
            doc = orjson.loads(head)
            if damage == "wrong_count":  # one fact fewer than the meta counts
                doc = {"ids": doc["ids"][:-1], "ends": doc["ends"][:-1]}
                body = body[: doc["ends"][-1]]
            else:  # the fragments do not tile the body
                doc["ends"][0] += 1
            new = orjson.dumps(doc) + b"\n" + body
            payload.write_bytes(new)
            e["ifacts"]["size"], e["ifacts"]["crc"] = len(new), __import__("zlib").crc32(new)
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    got, ws, data_ = fast(project)
    assert got == expected
    assert isinstance(data_["facts"], list)  # decoded instead
    assert any(k[0] == "team/extra" for k in ws.facts)
    assert ws.save_cache()  # and the entry is written again
    assert "team/extra" in ws._project_cache.damaged
    got, ws, data_ = fast(project)
    assert got == expected and isinstance(data_["facts"], orjson.Fragment)


def test_a_cache_of_the_previous_format_is_rebuilt(project, cache_env):
    add_tricky_facts(project)
    expected = cold_bytes(project)
    fill(project)
    folder, manifest, _e = manifest_entry(project, "team/extra")
    manifest["format"] = "harn-ls-state/4"
    (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    got, ws, _ = fast(project)
    assert got == expected and not ws._project_cache.hits and not ws.deferred_fact_namespaces()


def test_plain_inspect_json_of_a_deferred_load_decodes_the_facts(project, cache_env):
    add_tricky_facts(project)
    cold = inspect_json(Workspace.load(str(project)))
    fill(project)
    ws = Workspace.load(str(project), cache=True, defer_facts=True, one_shot=True)
    assert ws.deferred_fact_namespaces()
    assert inspect_json(ws) == cold
    assert not ws.deferred_fact_namespaces() and ws.facts


def test_cli_warm_inspect_json_equals_no_cache(project, cache_env):
    add_tricky_facts(project)
    base = cli("inspect", str(project), "--json", "--no-cache")
    assert base.returncode == 0
    first = cli("inspect", str(project), "--json")
    second = cli("inspect", str(project), "--json")
    assert first.stdout == base.stdout == second.stdout
    assert b"\\u202e" in second.stdout and "\u202e".encode() not in second.stdout  # still made terminal-safe
    append(project / FACTS, fact_event("fact_new", "project/facts", 80, "after"))
    assert cli("inspect", str(project), "--json").stdout == cli("inspect", str(project), "--json", "--no-cache").stdout


@pytest.mark.parametrize("append_to", [None, FACTS, NOTES])
def test_facts_of_one_namespace_are_printed_from_its_cached_body(project, cache_env, append_to):
    """The sample's facts are all in project/facts: the cached body is the whole list (an appended
    store leaves it deferred too: the new fact is merged into the cached body)."""
    fill(project)
    if append_to is not None:
        ns = "project/facts" if append_to == FACTS else "agent/notes"
        append(project / append_to, fact_event("fact_1", ns, 90, "one more"))
    expected = cold_bytes(project)
    got, ws, data = fast(project)
    assert got == expected and isinstance(data["facts"], orjson.Fragment)
    assert "project/facts" in ws.deferred_fact_namespaces()
    assert len(ws.facts) == (append_to is not None)  # the appended fact alone was decoded


@pytest.mark.parametrize("mode", ["defer_facts", "memory_only"])
def test_a_one_shot_save_reuses_unchanged_rows_byte_for_byte(project, cache_env, mode, tmp_path, monkeypatch):
    """After an append with updates and forgets, a one-shot load keeps the rows it decoded and saves
    the unchanged ones as they were: the payloads equal those a full load writes, and the next load
    equals a cold one."""
    from tests.unit.test_cache import ids_in

    fill(project)
    log = project / NOTES
    old = ids_in(log)
    append(log, event("store", "n-1", "agent/notes", 1) + event("update", old[0], "agent/notes", 2)
           + event("forget", old[1], "agent/notes", 3) + event("update", "n-1", "agent/notes", 4))
    monkeypatch.setattr(tail, "TAIL_KEEP_MAX", 0)  # the entry is written again (not kept: keeps_entry)
    ws = Workspace.load(str(project), cache=True, **{mode: True})
    assert ws._project_cache.keep_row_bytes
    if mode == "memory_only":
        ws.recall  # noqa: B018 - as `harn-ls recall` does
    else:
        inspect_json(ws, facts_fragment=True)
    if mode == "memory_only":  # (no cached index: fill saved none) built from the decoded records, rows kept
        assert "agent/notes" in ws._project_cache._row_bytes
    else:
        assert not ws.memory["agent/notes"].materialized  # the append applied without decoding (cache/tail.py)
    assert ws.save_cache()  # decodes the rows to write them again, reusing the unchanged ones' bytes
    assert not ws._project_cache._row_bytes  # (and let go once saved)
    folder, _manifest, e = manifest_entry(project, "agent/notes")
    one_shot = {part: (folder / e[part]["name"]).read_bytes() for part in ("rows", "rowidx", "records", "meta")}
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(tmp_path / "other-cache"))  # the same state, saved by a full load
    full = Workspace.load(str(project), cache=True)
    assert full.save_cache()
    folder2, _m2, e2 = manifest_entry(project, "agent/notes")
    assert one_shot == {part: (folder2 / e2[part]["name"]).read_bytes() for part in one_shot}
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(cache_env))
    expected = cold_bytes(project)
    assert fast(project)[0] == expected
    assert dump(inspect_json(Workspace.load(str(project), cache=True))) == expected
