"""The state cache never changes an answer: after every kind of change to the logs (or to the
cache itself) a cached load gives exactly what a load without the cache gives."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from harn_ls.cache import tail as state_tail
from harn_ls.cache.store import MANIFEST, PAYLOADS, ProjectCache
from harn_ls.model.workspace import Workspace
from harn_ls.render.inspect import inspect_json
from harn_ls.render.recall import recall_json

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
QUERIES = ["invoice rounding", "decimal money billing", "", "the of"]
NOTES = ".harn/memory/agent/notes/events.jsonl"
ACME = ".harn/memory/workspace/acme/events.jsonl"
FACTS = ".harn/memory/project/facts/events.jsonl"


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("HARN_LS_CACHE_DIR", str(folder))
    monkeypatch.delenv("HARN_LS_CACHE", raising=False)
    return folder


@pytest.fixture
def project(tmp_path):
    dest = tmp_path / "proj"
    shutil.copytree(SAMPLE, dest, symlinks=True)
    return dest


def snapshot(ws: Workspace) -> dict:
    """Everything a user can get out of the memory model: inspect, records, tombstones, facts
    (in dict order), problems, and recall with explanations."""
    data = inspect_json(ws)
    data["records"] = {ns: [r.to_json() | {"line": r.line_no} for r in s.records()] for ns, s in sorted(ws.memory.items())}
    data["hidden"] = {ns: [r.to_json() for r in s.hidden] for ns, s in sorted(ws.memory.items())}
    data["forgotten"] = {ns: sorted(s.forgotten) for ns, s in sorted(ws.memory.items())}
    data["forgets"] = {ns: s.forgets for ns, s in sorted(ws.memory.items())}
    data["fact_keys"] = [list(k) for k in ws.facts]
    data["fact_problem_keys"] = [list(k) for k in ws._fact_problems]
    data["facts_by_id"] = {fid: [f.namespace, f.line_no] for fid, f in sorted(ws.facts_by_id.items())}
    data["facts_by_file"] = {p: sorted(map(list, keys)) for p, keys in sorted(ws.facts_by_file.items())}
    data["by_key"] = {ns: [r.id for r in s.by_key("style/money")] for ns, s in sorted(ws.memory.items())}
    data["recall"] = [recall_json(ws.recall.recall(q, k=10, explain=True)) for q in QUERIES]
    return orjson.loads(orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS))


def cold(project: Path) -> dict:
    return snapshot(Workspace.load(str(project)))


def warm(project: Path, save: bool = True) -> tuple[dict, Workspace]:
    ws = Workspace.load(str(project), cache=True)
    snap = snapshot(ws)
    if save:
        assert ws.save_cache()
    return snap, ws


def check(project: Path) -> Workspace:
    """A cached load equals an uncached one, and so does the load after it (from the refreshed cache)."""
    expected = cold(project)
    got, ws = warm(project)
    assert got == expected
    again, ws2 = warm(project)
    assert again == expected
    return ws2


def event(kind: str, rid: str, ns: str, n: int, **extra) -> bytes:
    stamp = f"2026-06-{1 + n % 28:02d}T10:00:{n % 60:02d}.000000000+00:00"
    if kind == "store":
        text = f"invoice rounding note {n} decimal money billing"
        ev = {"type": "store", "id": rid, "namespace": ns, "key": f"note/{n}", "value": text, "text": text,
              "tags": ["billing", f"t{n % 3}"], "stored_at": stamp}
    elif kind == "update":
        ev = {"type": "update", "id": rid, "text": f"updated rounding text {n}", "updated_at": stamp}
    else:
        ev = {"type": "forget", "forgotten_ids": [rid], "forgotten_at": stamp}
    ev.update(extra)
    return orjson.dumps(ev) + b"\n"


def ids_in(path: Path) -> list[str]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(ev, dict) and ev.get("type") == "store":
            out.append(ev["id"])
    return out


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def cache_folder(project: Path) -> str:
    return ProjectCache(str(project)).folder


# ----------------------------------------------------------------------------- scenarios
def test_warm_load_equals_cold_and_restores_from_cache(project, cache_env):
    check(project)
    ws = Workspace.load(str(project), cache=True)
    cache = ws._project_cache
    assert cache is not None and set(cache.hits) == set(ws.memory) and set(cache.hits.values()) == {"same"}
    # records are built only when something needs them
    assert not any(s.materialized for ns, s in ws.memory.items() if ns != "project/pattern-learning")
    assert inspect_json(ws) == inspect_json(Workspace.load(str(project)))
    assert not ws.memory["agent/notes"].materialized


def test_append_reads_only_new_bytes_and_replays_onto_the_cached_index(project, cache_env, monkeypatch):
    monkeypatch.setattr(state_tail, "TAIL_KEEP_MAX", 0)  # (else a small append is not written: keeps_entry)
    check(project)
    log = project / NOTES
    old = ids_in(log)
    append(log, event("store", "new-1", "agent/notes", 1) + event("update", old[0], "agent/notes", 2)
           + event("forget", old[1], "agent/notes", 3) + event("update", "new-1", "agent/notes", 4)
           + b'{"type":"store","id":"torn"')  # a torn last line stays unread
    ws = check(project)
    assert ws._project_cache.hits["agent/notes"] == "same"
    append(log, b',"bad":1}\n' + event("store", "new-2", "agent/notes", 5))
    expected = cold(project)
    ws = Workspace.load(str(project), cache=True)
    assert ws._project_cache.hits["agent/notes"] == "appended"
    assert snapshot(ws) == expected


def test_apply_after_a_warm_load_matches_a_cold_load(project, cache_env):
    check(project)
    ws = Workspace.load(str(project), cache=True)
    log = project / NOTES
    old = ids_in(log)
    append(log, event("forget", old[2], "agent/notes", 7) + event("store", "new-3", "agent/notes", 8))
    ws.apply_changes([str(log)])
    assert snapshot(ws) == cold(project)


def test_rewritten_shorter_in_place(project, cache_env):
    check(project)
    log = project / NOTES
    lines = log.read_bytes().splitlines(keepends=True)
    with open(log, "r+b") as fh:  # same inode, fewer bytes
        fh.truncate(0)
        fh.write(b"".join(lines[:-2]))
    check(project)


def test_same_size_new_mtime(project, cache_env):
    check(project)
    log = project / ACME
    data = bytearray(log.read_bytes())
    i = data.index(b'"text":"') + 8
    data[i:i + 3] = b"zzz"
    st = log.stat()
    with open(log, "r+b") as fh:
        fh.write(bytes(data))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert log.stat().st_size == st.st_size
    check(project)


def test_same_size_change_before_the_last_4k_is_caught_by_mtime(project, cache_env):
    check(project)
    log = project / FACTS
    assert log.stat().st_size > 8192
    data = bytearray(log.read_bytes())
    i = data.index(b'"claim":"') + 9
    data[i] = ord("Q") if data[i] != ord("Q") else ord("R")
    st = log.stat()
    log.write_bytes(bytes(data))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
    check(project)


def test_replaced_by_rename(project, cache_env):
    check(project)
    log = project / NOTES
    tmp = log.with_name("events.jsonl.tmp")
    tmp.write_bytes(log.read_bytes() + event("store", "renamed-1", "agent/notes", 11))
    os.replace(tmp, log)
    check(project)


def test_deleted_and_recreated(project, cache_env):
    check(project)
    log = project / ACME
    data = log.read_bytes()
    log.unlink()
    check(project)
    log.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n" + event("store", "again", "workspace/acme", 12))
    check(project)


def test_namespace_added_and_removed(project, cache_env):
    check(project)
    new = project / ".harn/memory/team/new/events.jsonl"
    new.parent.mkdir(parents=True)
    new.write_bytes(event("store", "n1", "team/new", 13) + event("store", "n2", "team/new", 14))
    check(project)
    shutil.rmtree(project / ".harn/memory/workspace")
    check(project)


def test_cache_folder_deleted_mid_run(project, cache_env):
    check(project)
    expected = cold(project)
    ws = Workspace.load(str(project), cache=True)
    shutil.rmtree(cache_folder(project))
    assert snapshot(ws) == expected  # records and index still come out right
    assert ws.save_cache()
    assert warm(project)[0] == expected


@pytest.mark.parametrize("damage", ["truncate", "flip", "version", "garbage", "missing", "other-project"])
def test_damaged_cache_is_never_trusted(project, cache_env, damage):
    check(project)
    expected = cold(project)
    folder = Path(cache_folder(project))
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    entry = manifest["namespaces"]["agent/notes"]
    records = folder / entry["records"]["name"]
    pslot = folder / entry["index"]["pslot"]["name"]
    if damage == "truncate":
        records.write_bytes(records.read_bytes()[:-7])
        pslot.write_bytes(pslot.read_bytes()[:-4])
    elif damage == "flip":
        data = bytearray(records.read_bytes())
        data[len(data) // 2] ^= 0x20
        records.write_bytes(bytes(data))
        data = bytearray(pslot.read_bytes())
        data[-1] ^= 0x01
        pslot.write_bytes(bytes(data))
    elif damage == "version":
        manifest["format"] = "harn-ls-state/0"
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    elif damage == "garbage":
        (folder / MANIFEST).write_bytes(b'{"format": "harn-ls-state/1", "namespaces": [')
    elif damage == "missing":
        records.unlink()
    else:
        manifest["project"] = "/somewhere/else"
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    got, ws = warm(project)
    assert got == expected
    if damage in ("truncate", "missing"):
        assert "agent/notes" not in ws._project_cache.hits  # that namespace was re-read from its log
    # ("flip": the records payload is opened at load and checked when first read; a mismatch
    # re-reads the log up to the cached offset instead)
    assert warm(project)[0] == expected


def test_no_pickle_in_the_cache(project, cache_env):
    check(project)
    folder = Path(cache_folder(project))
    for f in folder.iterdir():
        data = f.read_bytes()
        if f.name.endswith(".npy"):
            assert data.startswith(b"\x93NUMPY") and b"'O'" not in data[:200]  # no object arrays
        elif f.name.endswith(".rows.jsonl"):
            assert all(isinstance(orjson.loads(line), list) for line in data.splitlines())  # one JSON row a line
        elif f.name.endswith(".terms.txt"):
            assert all(line for line in data.decode("utf-8").split("\n"))  # one recall term a line
        elif f.name.endswith(".ids.bin"):
            assert len(data) % 8 == 0 and len(data) >= 8  # the row index's CRC, then an 8-byte hash per row
        elif f.name.endswith(".rowidx.bin"):
            assert len(data) % 24 == 0  # (seq, end offset, CRC-32) int64 triples, nothing else
        elif f.name.endswith(".ifacts.txt"):  # a JSON header line, then JSON objects (facts as inspect prints them)
            head, _, body = data.partition(b"\n")
            assert isinstance(orjson.loads(head), dict)
            assert all(isinstance(x, dict) for x in orjson.loads(b"[" + body + b"]"))
        else:
            orjson.loads(data)  # plain JSON


def test_cache_lives_outside_the_project_and_reads_never_write_into_it(project, cache_env):
    before = sorted((p, p.stat().st_mtime_ns) for p in project.rglob("*"))
    check(project)
    assert sorted((p, p.stat().st_mtime_ns) for p in project.rglob("*")) == before
    assert Path(cache_folder(project)).is_relative_to(cache_env)


def test_old_payloads_are_swept_and_size_is_capped(project, tmp_path, cache_env, monkeypatch):
    check(project)
    folder = Path(cache_folder(project))
    for i in range(3):
        append(project / NOTES, event("store", f"sweep-{i}", "agent/notes", 20 + i))
        check(project)
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    named = {MANIFEST, manifest["runs"]["name"], manifest["pattern"]["payload"]["name"], manifest["checkpoints"]["name"]}
    for e in manifest["namespaces"].values():
        named |= {e[part]["name"] for part in PAYLOADS}
        named |= {d["name"] for d in (e["index"] or {}).values() if isinstance(d, dict)}
    assert {f.name for f in folder.iterdir()} == named
    # another, older project's state is evicted once the root is over its cap
    other = tmp_path / "other"
    shutil.copytree(SAMPLE, other, symlinks=True)
    Workspace.load(str(other), cache=True).save_cache()
    other_state = Path(cache_folder(other))
    old = time.time() - 3600
    os.utime(other_state / MANIFEST, (old, old))
    monkeypatch.setenv("HARN_LS_CACHE_MAX_MB", "0.05")
    monkeypatch.setattr(state_tail, "TAIL_KEEP_MAX", 0)  # (else a small append is not written: keeps_entry)
    append(project / NOTES, event("store", "evict", "agent/notes", 30))
    Workspace.load(str(project), cache=True).save_cache()
    assert not other_state.exists()
    assert folder.exists()


# ----------------------------------------------------------------------------- the CLI
def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "harn_ls", *args], capture_output=True, env=env, timeout=120)


def test_cli_no_cache_flag_env_and_cache_info_clear(project, cache_env):
    env = dict(os.environ)
    base = cli("inspect", str(project), "--json", "--no-cache", env=env)
    assert base.returncode == 0
    assert not cache_env.exists()  # --no-cache writes nothing
    off = cli("recall", str(project), "invoice rounding", "-k", "10", "--json", env=env | {"HARN_LS_CACHE": "off"})
    assert off.returncode == 0 and not cache_env.exists()
    first = cli("inspect", str(project), "--json", env=env)
    second = cli("inspect", str(project), "--json", env=env)
    assert first.stdout == second.stdout == base.stdout
    r1 = cli("recall", str(project), "invoice rounding", "-k", "10", "--json", env=env)
    r2 = cli("recall", str(project), "invoice rounding", "-k", "10", "--json", env=env)
    assert r1.stdout == r2.stdout == off.stdout
    info = cli("cache", "info", str(project), "--json", env=env)
    data = orjson.loads(info.stdout)
    assert data["valid"] and data["namespaces"]["agent/notes"]["log"] == "same" and data["namespaces"]["agent/notes"]["index"]
    text = cli("cache", "info", str(project), env=env).stdout.decode()
    assert "agent/notes" in text and "recall index" in text
    cleared = cli("cache", "clear", str(project), env=env)
    assert cleared.returncode == 0 and b"removed" in cleared.stdout
    assert not Path(data["folder"]).exists()
    assert cli("cache", "bogus", str(project), env=env).returncode == 2


def test_two_processes_fill_the_cache_at_once(project, cache_env):
    expected_inspect = cli("inspect", str(project), "--json", "--no-cache").stdout
    expected_recall = cli("recall", str(project), "decimal money", "-k", "10", "--json", "--no-cache").stdout
    for _ in range(2):
        procs = [subprocess.Popen([sys.executable, "-m", "harn_ls", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for args in (("inspect", str(project), "--json"),
                              ("recall", str(project), "decimal money", "-k", "10", "--json"),
                              ("inspect", str(project), "--json"),
                              ("recall", str(project), "decimal money", "-k", "10", "--json"))]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        assert outs[0] == outs[2] == expected_inspect
        assert outs[1] == outs[3] == expected_recall
        append(project / NOTES, event("store", f"race-{_}", "agent/notes", 40 + _))
        expected_inspect = cli("inspect", str(project), "--json", "--no-cache").stdout
        expected_recall = cli("recall", str(project), "decimal money", "-k", "10", "--json", "--no-cache").stdout
    assert cli("inspect", str(project), "--json").stdout == expected_inspect
    assert cli("recall", str(project), "decimal money", "-k", "10", "--json").stdout == expected_recall
