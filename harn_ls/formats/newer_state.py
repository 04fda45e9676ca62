"""Newer parts of `.harn/` that harn-ls lists in *Harn state* (issue 28 item 8): counts, sizes, the newest
entry and model names. Never a cached prompt or response: only the `model` field of a cache entry is read
out of it.

* LLM response cache: `.harn/cache/llm.sqlite` (table `cache_entries`) and `.harn/cache/llm/<ns>/<sha256>.json`;
* `.harn/local/selection.json` (`harn local switch`): its scalar fields;
* guard models: `.harn/guard/<model>/manifest.json`: the model folder names and the manifests' scalar fields;
* `<orchestrator state dir>/orchestrator-state.json`: `ServeStateSnapshot` (serve.rs @e45362cf: status,
  role, bind, listener_url, manifest_path, state_dir, started_at, stopped_at, secret_provider_chain,
  event_log_backend, event_log_location, triggers[], connectors[], activations[]);
* `.harn/metadata/` (metadata.rs @e45362cf: sharded JSON files by package root): files, bytes, newest;
* (the event logs' `event_idempotency_keys` rows, harn-formats §H.2.4, are counted when shown:
  model/event_logs.py `idempotency_keys`).

Every file is read through `safe_read.read_confined` (inside the project or the folder the user's
environment chose, capped); every SQLite file through `sqlite_safe` (read-only, real tables only, deadline).
Pure core: no pygls, no writes.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from harn_ls.formats.problems import Problem, Severity
from harn_ls.formats.state_files import read_json, report_link
from harn_ls.util import safe_read
from harn_ls.util.json_types import JsonObject, JsonValue

# a top-level field kept from a JSON file: strings cut at 200 characters
Scalar: TypeAlias = "str | int | float | bool | None"

if TYPE_CHECKING:  # (TypedDicts for the checker only: the values are plain dicts, made at no import cost)
    class LlmSqliteInfo(TypedDict):
        path: str
        bytes: int
        rows: int | None
        models: list[str]
        newest: str | int | float | None  # the newest value of the first date column found

    class LlmFilesInfo(TypedDict):
        files: int
        bytes: int
        newest: float  # mtime
        models: list[str]

    class SelectionInfo(TypedDict):
        path: str
        fields: dict[str, Scalar]

    class GuardModel(TypedDict):
        model: str
        path: str
        fields: dict[str, Scalar]
        manifest: bool  # manifest.json is a JSON object

    class MetadataInfo(TypedDict):
        path: str
        files: int
        bytes: int
        newest: float | None  # mtime

CODE_NEWER = "HL-STATE-001"
JSON_CAP = 1 << 20  # one manifest / selection / snapshot / cache entry read for its `model`
MAX_FILES = 20_000  # cache entries and metadata files counted per folder
MODEL_SAMPLE = 200  # newest cache files whose `model` is read
MAX_MODELS = 50
MAX_FIELDS = 40
PAGE = 200
_SHA_NAME = re.compile(r"[0-9a-f]{64}\.json")
_DATE_COLUMNS = ("updated_at", "created_at", "stored_at", "cached_at", "inserted_at", "last_used_at", "accessed_at")


@dataclass
class CacheEntry:
    """One LLM cache entry as listed: where, how big, when, which model. No prompt text."""

    namespace: str
    key: str
    size: int
    mtime: float
    model: str = ""


@dataclass
class NewerState:
    """What `read_newer_state` found: one field per part of `.harn/`, None / empty when absent."""

    llm_sqlite: LlmSqliteInfo | None = None
    llm_files: dict[str, LlmFilesInfo] = field(default_factory=dict)  # namespace -> its files
    llm_entries: list[CacheEntry] = field(default_factory=list)  # newest first, for the paged document
    selection: SelectionInfo | None = None
    guard: list[GuardModel] = field(default_factory=list)
    orchestrator: JsonObject | None = None  # the snapshot's path, scalar fields, list counts, connector names
    metadata: MetadataInfo | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.llm_sqlite or self.llm_files or self.selection or self.guard or self.orchestrator
                    or self.metadata)


def _scalars(value: JsonObject, limit: int = MAX_FIELDS) -> dict[str, Scalar]:
    """The top-level fields holding a string, number or boolean (strings cut at 200 characters)."""
    out: dict[str, Scalar] = {}
    for k, v in list(value.items())[:limit * 4]:
        if isinstance(v, bool) or isinstance(v, (int, float)) or v is None:
            out[str(k)[:80]] = v
        elif isinstance(v, str):
            out[str(k)[:80]] = v[:200]
        if len(out) >= limit:
            break
    return out


def _read_json(path: str, root: str, problems: list[Problem], what: str) -> JsonValue:
    value, err = read_json(path, JSON_CAP, root, absent_ok=True)  # (absent: nothing to list)
    if err:  # a link out, too large, not a regular file, not JSON
        problems.append(Problem(path, 0, CODE_NEWER, f"{what} not read: {err}", Severity.WARNING))
    return value


def _scan(folder: str, root: str, problems: list[Problem]) -> list[tuple[str, os.stat_result]]:
    """Regular files below `folder` (links not followed: reported when they leave or loop), at most MAX_FILES."""
    out: list[tuple[str, os.stat_result]] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        for name in dirnames + sorted(filenames):
            report_link(os.path.join(dirpath, name), root, problems)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((full, st))
            if len(out) >= MAX_FILES:
                return out
    return out


def _llm_sqlite(path: str, root: str, out: NewerState) -> None:
    if not os.path.lexists(path):
        return
    # start-up: sqlite3 loads only for a project that has an LLM cache database
    from harn_ls.formats import sqlite_safe

    conn = None
    info: LlmSqliteInfo = {"path": path, "bytes": 0, "rows": None, "models": [], "newest": None}
    try:
        info["bytes"] = os.lstat(path).st_size
        conn = sqlite_safe.open_readonly(path, root)
        if "cache_entries" not in sqlite_safe.real_tables(conn):
            out.problems.append(Problem(path, 0, CODE_NEWER, "LLM cache has no table cache_entries; not listed",
                                        Severity.INFO))
        else:
            cols = sqlite_safe.table_columns(conn, "cache_entries")
            info["rows"] = sqlite_safe.query(conn, "SELECT COUNT(*) FROM main.cache_entries")[0][0]
            if "model" in cols:  # the model name only: never a prompt or a response column
                info["models"] = [r[0] for r in sqlite_safe.query(
                    conn, "SELECT DISTINCT model FROM main.cache_entries WHERE typeof(model) = 'text' LIMIT ?",
                    (MAX_MODELS,)) if isinstance(r[0], str)]
            date = next((c for c in _DATE_COLUMNS if c in cols), None)
            if date is not None:
                newest = sqlite_safe.query(conn, f'SELECT MAX("{date}") FROM main.cache_entries')[0][0]
                info["newest"] = newest if isinstance(newest, (str, int, float)) else None
    except (sqlite_safe.SqliteRefused, OSError) as exc:
        out.problems.append(Problem(path, 0, CODE_NEWER, f"LLM cache not read: {exc}", Severity.WARNING))
    except Exception as exc:  # sqlite3.Error: a damaged file is a problem, the rest is still served
        out.problems.append(Problem(path, 0, CODE_NEWER, f"LLM cache not read ({type(exc).__name__}: {exc})",
                                    Severity.WARNING))
    finally:
        sqlite_safe.close_quietly(conn)
    out.llm_sqlite = info


def _llm_files(folder: str, root: str, out: NewerState) -> None:
    if not os.path.isdir(folder):
        return
    entries: list[CacheEntry] = []
    for full, st in _scan(folder, root, out.problems):
        rel = os.path.relpath(full, folder).replace(os.sep, "/")
        ns, _, name = rel.rpartition("/")
        if not _SHA_NAME.fullmatch(name):
            continue
        entries.append(CacheEntry(ns or "(root)", name[:-5], st.st_size, st.st_mtime))
    entries.sort(key=lambda e: (e.mtime, e.key), reverse=True)
    for e in entries[:MODEL_SAMPLE]:  # `model` of the newest entries: the only field taken out of them
        path = os.path.join(folder, *([] if e.namespace == "(root)" else e.namespace.split("/")), e.key + ".json")
        value = _read_json(path, root, out.problems, "LLM cache entry")
        model = value.get("model") if isinstance(value, dict) else None
        if not isinstance(model, str) and isinstance(value, dict) and isinstance(value.get("response"), dict):
            model = value["response"].get("model")
        e.model = model[:120] if isinstance(model, str) else ""
    for e in entries:
        of_ns = out.llm_files.setdefault(e.namespace, {"files": 0, "bytes": 0, "newest": 0.0, "models": []})
        of_ns["files"] += 1
        of_ns["bytes"] += e.size
        of_ns["newest"] = max(of_ns["newest"], e.mtime)
        if e.model and e.model not in of_ns["models"] and len(of_ns["models"]) < MAX_MODELS:
            of_ns["models"].append(e.model)
    out.llm_entries = entries


def read_newer_state(project_root: str, state_root: str, orchestrator_dir: str) -> NewerState:
    """Everything above, for one project."""
    out = NewerState()
    harn = os.path.join(project_root, ".harn")
    # a state root the user's environment put outside the project is read inside its own folder
    state_base = safe_read.reader_root(state_root, project_root)
    _llm_sqlite(os.path.join(state_root, "cache", "llm.sqlite"), state_base, out)
    _llm_files(os.path.join(state_root, "cache", "llm"), state_base, out)
    sel_path = os.path.join(harn, "local", "selection.json")
    sel = _read_json(sel_path, project_root, out.problems, "model selection")
    if isinstance(sel, dict):
        out.selection = {"path": sel_path, "fields": _scalars(sel)}
    guard_dir = os.path.join(harn, "guard")
    if os.path.isdir(guard_dir):
        try:
            names = sorted(os.listdir(guard_dir))[:200]
        except OSError:
            names = []
        for name in names:
            d = os.path.join(guard_dir, name)
            if report_link(d, project_root, out.problems) or not os.path.isdir(d) or os.path.islink(d):
                continue
            manifest = _read_json(os.path.join(d, "manifest.json"), project_root, out.problems, "guard model manifest")
            out.guard.append({"model": name, "path": d,
                              "fields": _scalars(manifest) if isinstance(manifest, dict) else {},
                              "manifest": isinstance(manifest, dict)})
    orch_path = os.path.join(orchestrator_dir, "orchestrator-state.json")
    orch_base = safe_read.reader_root(orchestrator_dir, project_root)
    snap = _read_json(orch_path, orch_base, out.problems, "orchestrator state snapshot")
    if isinstance(snap, dict):
        info: JsonObject = {"path": orch_path, **_scalars(snap)}
        for key in ("triggers", "connectors", "activations"):
            if isinstance(snap.get(key), list):
                info[key] = len(snap[key])
        info["connector_names"] = [c[:80] for c in snap.get("connectors", []) if isinstance(c, str)][:50] \
            if isinstance(snap.get("connectors"), list) else []
        out.orchestrator = info
    meta = os.path.join(state_root, "metadata")
    if os.path.isdir(meta):
        files = _scan(meta, state_base, out.problems)
        out.metadata = {"path": meta, "files": len(files), "bytes": sum(st.st_size for _, st in files),
                        "newest": max((st.st_mtime for _, st in files), default=None)}
    return out

