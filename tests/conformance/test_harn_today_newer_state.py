"""Issue 28 item 8: the newer parts of `.harn/` listed in *Harn state*, with a document that pages.

Formats:
* `<state-dir>/orchestrator-state.json`: `ServeStateSnapshot` (crates/harn-cli/src/commands/orchestrator/
  serve.rs @e45362cf, `write_state_snapshot`: serde_json pretty) — status, role, bind, listener_url,
  manifest_path, state_dir, started_at, stopped_at, secret_provider_chain, event_log_backend,
  event_log_location, triggers[], connectors[], activations[];
* `.harn/metadata/` (crates/harn-vm/src/metadata.rs @e45362cf, `runtime_paths::metadata_dir`): sharded JSON;
* `event_idempotency_keys(topic, key, value, event_id)` (harn-formats §H.2.4, event_log sqlite backend);
* the LLM response cache (`.harn/cache/llm.sqlite` table `cache_entries`, `.harn/cache/llm/<ns>/<sha256>.json`),
  `.harn/local/selection.json`, `.harn/guard/<model>/manifest.json`: as issue 28 names them. Their
  writers are newer than the Harn source stored for this work (mirror e45362cf, index), so harn-ls reads
  them without assuming more: counts, sizes, times, a `model` field, a file's plain scalar fields.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

from harn_ls.model.workspace import Workspace
from harn_ls.render.documents import render_uri
from harn_ls.render.inspect import inspect_json
from tests.helpers import event_log_writer as W

SECRET_PROMPT = "SECRET-PROMPT-TEXT please summarise the payroll"


def _project(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".harn").mkdir(parents=True)
    (proj / "harn.toml").write_text("")
    return proj


def test_newer_state_is_listed_without_prompt_text_and_pages(tmp_path):
    proj = _project(tmp_path)
    harn = proj / ".harn"
    (harn / "cache").mkdir()
    db = sqlite3.connect(harn / "cache" / "llm.sqlite")
    db.execute("CREATE TABLE cache_entries (key TEXT PRIMARY KEY, model TEXT, request TEXT, response TEXT, created_at TEXT)")
    for i, model in enumerate(["claude-sonnet-4-5", "gpt-5", "claude-sonnet-4-5"]):
        db.execute("INSERT INTO cache_entries VALUES (?,?,?,?,?)",
                   (f"k{i}", model, SECRET_PROMPT, "answer", f"2026-05-0{i + 1}T00:00:00Z"))
    db.commit()
    db.close()
    ns = harn / "cache" / "llm" / "agent"
    ns.mkdir(parents=True)
    for i in range(205):
        key = hashlib.sha256(str(i).encode()).hexdigest()
        (ns / f"{key}.json").write_text(json.dumps({"model": "qwen3" if i % 2 else "llama-4",
                                                    "request": {"prompt": SECRET_PROMPT}, "response": "x"}))
        os.utime(ns / f"{key}.json", (1_700_000_000 + i, 1_700_000_000 + i))
    (harn / "local").mkdir()
    (harn / "local" / "selection.json").write_text(json.dumps({"provider": "ollama", "model": "qwen3:8b",
                                                               "prompt": {"nested": SECRET_PROMPT}}))
    (harn / "guard" / "llama-guard-3").mkdir(parents=True)
    (harn / "guard" / "llama-guard-3" / "manifest.json").write_text(json.dumps({"name": "llama-guard-3", "version": "1.2",
                                                                                "sha256": "ab" * 32}))
    (harn / "orchestrator").mkdir()
    (harn / "orchestrator" / "orchestrator-state.json").write_text(json.dumps({
        "status": "running", "role": "single_tenant", "bind": "127.0.0.1:8080", "listener_url": "http://127.0.0.1:8080",
        "manifest_path": str(proj / "harn.toml"), "state_dir": str(harn / "orchestrator"), "started_at": "2026-05-04T09:00:00Z",
        "stopped_at": None, "secret_provider_chain": "env", "event_log_backend": "sqlite", "event_log_location": None,
        "triggers": [{"id": "t1"}], "connectors": ["github", "slack"], "activations": []}, indent=2))
    (harn / "metadata").mkdir()
    (harn / "metadata" / "root.json").write_text("{}")
    conn = W.open_log(str(harn / "events.sqlite"))
    conn.execute("CREATE TABLE event_idempotency_keys (topic TEXT, key TEXT, value TEXT, event_id INTEGER, "
                 "PRIMARY KEY (topic, key, value))")
    W.append(conn, "t.one", "k", {})
    conn.execute("INSERT INTO event_idempotency_keys VALUES ('t.one', 'dedupe', 'v1', 1)")
    conn.close()

    ws = Workspace.load(str(proj), env={})
    n = ws.event_logs.newer
    assert n.llm_sqlite["rows"] == 3 and sorted(n.llm_sqlite["models"]) == ["claude-sonnet-4-5", "gpt-5"]
    assert n.llm_sqlite["newest"] == "2026-05-03T00:00:00Z"
    assert n.llm_files["agent"]["files"] == 205 and sorted(n.llm_files["agent"]["models"]) == ["llama-4", "qwen3"]
    assert n.selection["fields"] == {"provider": "ollama", "model": "qwen3:8b"}
    assert n.guard[0]["model"] == "llama-guard-3" and n.guard[0]["fields"]["version"] == "1.2"
    assert n.orchestrator["listener_url"] == "http://127.0.0.1:8080" and n.orchestrator["connectors"] == 2
    assert n.metadata["files"] == 1 and ws.event_logs.idempotency_keys() == {"run": 1}

    doc = render_uri(ws, "harn-state:/newer-state.md")
    assert SECRET_PROMPT not in doc and "SECRET" not in doc
    assert "page 1 of 2" in doc and "harn-state:/newer-state.md?page=1" in doc
    assert doc.count("| `agent` |") == 201  # the summary row and 200 entries
    page2 = render_uri(ws, "harn-state:/newer-state.md?page=1")
    assert "page 2 of 2" in page2 and page2.count("| `agent` |") == 6
    data = json.dumps(inspect_json(ws)["newer_state"])
    assert "SECRET" not in data and '"listener_url": "http://127.0.0.1:8080"' in data


def test_hostile_newer_state_is_a_problem_and_escaped(tmp_path):
    proj = _project(tmp_path)
    harn = proj / ".harn"
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    (evil / "selection.json").write_text('{"model": "stolen"}')
    (harn / "local").mkdir()
    os.symlink(evil / "selection.json", harn / "local" / "selection.json")
    (harn / "guard" / "g|<b>x</b>").mkdir(parents=True)
    (harn / "guard" / "g|<b>x</b>" / "manifest.json").write_text('{"name": "[click](javascript:alert(1))"}')
    (harn / "cache").mkdir()
    (harn / "cache" / "llm.sqlite").write_bytes(b"not a database at all" * 100)
    ws = Workspace.load(str(proj), env={})
    msgs = [p.message for p in ws.problems()]
    assert any("model selection not read" in m and "leaves the project" in m for m in msgs), msgs
    assert any("LLM cache not read" in m for m in msgs)
    doc = render_uri(ws, "harn-state:/newer-state.md")
    assert "stolen" not in doc and "<b>" not in doc and "](javascript:" not in doc


def _keys_log(path, rows=1):
    conn = W.open_log(str(path))
    conn.execute("CREATE TABLE event_idempotency_keys (topic TEXT, key TEXT, value TEXT, event_id INTEGER, "
                 "PRIMARY KEY (topic, key, value))")
    for i in range(rows):
        W.append(conn, "t.one", "k", {"n": i})
        conn.execute("INSERT INTO event_idempotency_keys VALUES ('t.one', 'dedupe', ?, ?)", (f"v{i}", i + 1))
    return conn


def test_the_idempotency_count_reads_no_log_outside_the_project(tmp_path):
    """The log named for the count is the project's `.harn/events.sqlite`, but the project's `.harn` is a
    link to a sibling `proj-victim`'s: confined to the project (as the log's own reader is), nothing is
    counted (confined to the log's own folder, the link's target passed)."""
    victim = tmp_path / "proj-victim" / ".harn"
    victim.mkdir(parents=True)
    (victim.parent / "harn.toml").write_text("")
    _keys_log(victim / "events.sqlite").close()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "harn.toml").write_text("")
    (proj / ".harn").symlink_to(victim, target_is_directory=True)
    x = Workspace.load(str(proj), env={}).event_logs
    assert x.newer is not None and x.idempotency_keys() == {}
    inside = Workspace.load(str(victim.parent), env={}).event_logs
    assert inside.idempotency_keys() == {"run": 1}  # the same file read as its own project's: counted


def _count_key_queries(monkeypatch) -> list[str]:
    """From here on, every statement harn-ls runs on a read-only log that counts `event_idempotency_keys`
    (the refresh's one-row probe `SELECT 1 ... LIMIT 1`, which the tree needs, is not a count)."""
    from harn_ls.formats import sqlite_safe

    seen: list[str] = []
    real_query = sqlite_safe.query

    def counting_query(conn, sql, *args, **kwargs):
        if "event_idempotency_keys" in sql and "COUNT(" in sql.upper():
            seen.append(sql)
        return real_query(conn, sql, *args, **kwargs)

    monkeypatch.setattr(sqlite_safe, "query", counting_query)
    return seen


def test_the_idempotency_count_runs_only_when_shown(tmp_path, monkeypatch):
    """Harn's writer is mid-run (its rows in the `-wal`): a load and a refresh after an idempotent append read
    the log on one connection each and count no `event_idempotency_keys` rows (a COUNT(*) costs ms at 100k
    keys); the newer-state document and `inspect` count them when they show them, as they are now."""
    proj = _project(tmp_path)
    db = proj / ".harn" / "events.sqlite"
    writer = _keys_log(db, rows=2)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    W.append(writer, "t.two", "k", {})  # (frames in the -wal from here on)
    assert os.path.getsize(str(db) + "-wal") > 0
    opened = W.count_opens(monkeypatch)
    counted = _count_key_queries(monkeypatch)
    try:
        ws = Workspace.load(str(proj), env={})
        assert opened.count(str(db)) == 1 and counted == []
        assert "- log `run`: 2 row(s) in `event_idempotency_keys`" in render_uri(ws, "harn-state:/newer-state.md")
        assert len(counted) == 1
        W.append(writer, "t.one", "k", {"n": 2})
        writer.execute("INSERT INTO event_idempotency_keys VALUES ('t.one', 'dedupe', 'v2', 3)")
        ws.event_logs.reread({"log:run"})
        assert opened.count(str(db)) == 3 and len(counted) == 1  # the refresh: one connection, no count
        assert inspect_json(ws)["newer_state"]["idempotency_keys"] == {"run": 3}
        assert len(counted) == 2
    finally:
        writer.close()


def test_a_newer_state_file_is_not_stat_before_it_is_read(tmp_path, monkeypatch):
    """`.harn/local/selection.json` is opened once, with no `stat` of its path first (a second syscall, and a
    window in which the file may change between the two); a missing one is told by that open: no problem."""
    from harn_ls.formats.newer_state import read_newer_state

    proj = _project(tmp_path)
    harn = proj / ".harn"
    assert read_newer_state(str(proj), str(harn), str(harn / "orchestrator")).problems == []
    (harn / "local").mkdir()
    sel = harn / "local" / "selection.json"
    sel.write_text('{"provider": "ollama", "model": "qwen3:8b"}')
    stats: list[str] = []
    real_stat = os.stat

    def counting_stat(path, *args, **kwargs):
        stats.append(os.fspath(path) if not isinstance(path, int) else "")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    n = read_newer_state(str(proj), str(harn), str(harn / "orchestrator"))
    assert n.selection["fields"] == {"provider": "ollama", "model": "qwen3:8b"} and n.problems == []
    assert stats.count(str(sel)) == 0


def test_a_project_whose_only_newer_state_is_idempotency_keys_lists_it(tmp_path, monkeypatch):
    """The count is not kept by a refresh any more, but a log holding idempotency keys is still newer state
    the tree lists ("Harn state" → "LLM cache, models, orchestrator", which opens the document that counts
    them); an empty key table is not. Rendering the tree counts nothing: the refresh probed for one row."""
    from harn_ls.render.tree_items import TreeOptions, tree_items

    proj = _project(tmp_path)
    writer = _keys_log(proj / ".harn" / "events.sqlite", rows=1)
    writer.close()
    ws = Workspace.load(str(proj), env={})
    counted = _count_key_queries(monkeypatch)
    roots = {it["id"] for it in tree_items(ws, "runs", None, TreeOptions("test.open", 200))}
    assert "harnstate" in roots and counted == []
    kids = {it["id"]: it for it in tree_items(ws, "runs", "harnstate", TreeOptions("test.open", 200))}
    assert kids["state:newer"]["uri"] == "harn-state:/newer-state.md"

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "proj").mkdir()
    proj2 = _project(empty)
    W.open_log(str(proj2 / ".harn" / "events.sqlite")).execute(
        "CREATE TABLE event_idempotency_keys (topic TEXT, key TEXT, value TEXT, event_id INTEGER, "
        "PRIMARY KEY (topic, key, value))").connection.close()
    ws2 = Workspace.load(str(proj2), env={})
    assert "harnstate" not in {it["id"] for it in tree_items(ws2, "runs", None, TreeOptions("test.open", 200))}


def test_a_dangling_link_is_absent_not_a_problem(tmp_path):
    """A newer-state file that is a symlink to nothing is absent (nothing there to read), as `link_problem`
    and every other state reader have it: no problem, also when the missing target is in a sibling
    `proj-evil`. A link whose target exists there is still refused and reported."""
    from harn_ls.formats.newer_state import read_newer_state

    proj = _project(tmp_path)
    harn = proj / ".harn"
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    (harn / "local").mkdir()
    os.symlink(evil / "selection.json", harn / "local" / "selection.json")
    (harn / "guard" / "m").mkdir(parents=True)
    os.symlink(harn / "guard" / "m" / "gone.json", harn / "guard" / "m" / "manifest.json")
    n = read_newer_state(str(proj), str(harn), str(harn / "orchestrator"))
    assert n.problems == [] and n.selection is None
    (evil / "selection.json").write_text('{"model": "stolen"}')
    n = read_newer_state(str(proj), str(harn), str(harn / "orchestrator"))
    assert [p.message for p in n.problems if "leaves the project" in p.message] != [] and n.selection is None
