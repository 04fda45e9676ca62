"""Issue 27 item 2: one helper opens the project's files. This test walks every module of `harn_ls`
and finds each call that opens a file (`open`, `os.open`, `io.open`, `os.fdopen`, `Path.open`,
`read_bytes`, `read_text`, `sqlite3.connect`). Each must sit in `harn_ls/util/safe_read.py` (the helper)
or in `formats/sqlite_safe.py` (its SQLite twin), or be on the allowlist below with the reason it
never opens a file the project chose. A raw open added later fails here until it goes through
`safe_read` (or is argued onto the list)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "harn_ls"

HELPERS = {"util/safe_read.py", "formats/sqlite_safe.py"}

CACHE = "a file in harn-ls's own cache folder (cache/dirs.py), outside the project, written only by harn-ls"
ALLOWED: dict[tuple[str, str], str] = {
    ("cache/checkpoint_history.py", "CheckpointHistory._index"): CACHE,
    ("cache/checkpoint_history.py", "CheckpointHistory.read"): CACHE,
    ("cache/checkpoint_history.py", "CheckpointHistory.pipelines"): CACHE,
    ("cache/store.py", "ProjectCache._read_manifest"): CACHE,
    ("cache/store.py", "ProjectCache.read_payload"): CACHE,
    ("cache/store.py", "ProjectCache.open_payload"): CACHE,
    ("cache/store.py", "ProjectCache._write_payload"): CACHE + " (a write)",
    ("cache/store.py", "ProjectCache._save"): CACHE + " (a write)",
    ("cache/spans.py", "SpanStore.load"): CACHE,
    ("cache/dirs.py", "write_cache_file"): CACHE + " (a write)",
    ("cache/dirs.py", "_project_of"): CACHE + " (a state manifest, for the project it belongs to)",
    ("actions/append_journal.py", "_read_record"): CACHE,
    ("lsp/start_trace.py", "_process_start_epoch"): "/proc/self/stat and /proc/uptime, never a project path",
    ("formats/locks.py", "read_flock_table"): "/proc/locks, never a project path",
    ("formats/locks.py", "open_flock_table"): "/proc/locks, never a project path",
    ("formats/locks.py", "probe_flock"): "O_NONBLOCK | O_NOFOLLOW, then fstat must say regular; never read",
    ("cache/checkpoint_history.py", "CheckpointHistory._across_processes"): CACHE + " (the history index's flock file)",
    ("actions/probes.py", "_capture"): "the read ends of the pipes made for a probe's own stdout and stderr",
    ("lsp/tcp.py", "write_token"): "writes the serve --tcp token file in the user's runtime folder, never a project path",
    ("render/conversation.py", "confined_image"): "O_NOFOLLOW | O_NONBLOCK on the real path checked inside the "
                                                  "project, fstat must say regular, capped read",
    ("actions/__init__.py", "_fsync_dir"): "an fd on a directory for fsync (a write)",
    ("actions/__init__.py", "_open_dir_inside"): "O_DIRECTORY | O_NOFOLLOW (a write's parent)",
    ("actions/__init__.py", "atomic_write"): "O_CREAT | O_EXCL | O_NOFOLLOW temp file (a write)",
    ("actions/__init__.py", "atomic_write_dir"): "O_CREAT | O_EXCL | O_NOFOLLOW (a write)",
    ("actions/__init__.py", "append_lines"): "O_APPEND | O_NOFOLLOW (a write)",
    ("actions/checkpoints.py", "_checkpoint_lock"): "Harn's lock file, O_NOFOLLOW (a write's lock)",
    ("actions/checkpoints.py", "_read_under_lock"): "O_NONBLOCK | O_NOFOLLOW; fstat must say regular (a write's "
                                                    "read under the lock; refuses any link)",
    ("actions/probes.py", "run_typecheck_probe"): "the snippet's temp file outside the project (a write)",
    ("actions/probes.py", "run_typecheck_probe_cli"): "the file the user named on the command line",
    ("actions/hitl/answer.py", "_connect"): "a write (Answer on a HITL request): Harn's own events.sqlite, opened "
                                            "read-write as Harn does, after ensure_inside and an isfile check",
}

OPEN_NAMES = {"open"}
OPEN_ATTRS = {"fdopen", "read_bytes", "read_text", "connect"}


def _calls(tree: ast.AST):
    """(qualified enclosing function, call text) for every file-opening call in a module."""
    out = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, scope + [child.name])
                continue
            if isinstance(child, ast.Call):
                f = child.func
                hit = None
                if isinstance(f, ast.Name) and f.id in OPEN_NAMES:
                    hit = f.id
                elif isinstance(f, ast.Attribute) and f.attr in OPEN_ATTRS:
                    # Path.read_bytes() / read_text(encoding=...) take no positional argument: a
                    # `progress.read_bytes(n)` is some other method
                    if f.attr not in ("read_bytes", "read_text") or not child.args:
                        hit = f.attr
                elif isinstance(f, ast.Attribute) and f.attr == "open":
                    recv = f.value
                    # `ProjectCache.open(...)`-style constructors are classmethods, not file opens
                    if not (isinstance(recv, ast.Name) and recv.id[:1].isupper()):
                        hit = ast.unparse(f)
                if hit is not None:
                    out.append((".".join(scope) or "<module>", hit))
            visit(child, scope)

    visit(tree, [])
    return out


@functools.cache
def found() -> dict[tuple[str, str], list[str]]:
    seen: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in HELPERS:
            continue
        for scope, call in _calls(ast.parse(path.read_text(), str(path))):
            seen.setdefault((rel, scope), []).append(call)
    return seen


def test_every_file_open_goes_through_safe_read_or_is_argued():
    seen = found()
    raw = {k: v for k, v in seen.items() if k not in ALLOWED}
    assert not raw, ("these open files without harn_ls/util/safe_read.py (route them through read_confined / "
                     f"open_project_file, or add them to ALLOWED with the reason): {raw}")


def test_the_allowlist_has_no_stale_entries():
    stale = sorted(k for k in ALLOWED if k not in found())
    assert not stale, f"allowlisted but no longer opening anything (drop them): {stale}"


def test_the_walker_sees_a_raw_open():
    """The walker itself: a raw `open()`, `Path.read_text()` and `sqlite3.connect()` are each found."""
    tree = ast.parse("def f(p):\n    open(p)\n    p.read_text()\n    sqlite3.connect(p)\n    ProjectCache.open(p)\n"
                     "    progress.read_bytes(12)\n")
    assert _calls(tree) == [("f", "open"), ("f", "read_text"), ("f", "connect")]
