"""Issue 12 item 3: SQLite from a cloned project is data, not code.

Attacks: a tiny `session-store.sqlite` whose `sessions` is a recursive view (before: `inspect` hung for
ever and wrote ~60 MB/s of temp files), a generated column, a huge value, a FIFO, a symlink out of the
project. Each gives a clear problem within 2 s and the rest is served.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harn_ls.formats import sqlite_safe  # noqa: E402
from harn_ls.formats.session_store import CODE_OPEN, CODE_REFUSED, read_session_events, read_session_store  # noqa: E402
from tests.helpers.session_store_fixture import create_session_store_fixture  # noqa: E402

RECURSIVE = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
             "SELECT 'id' || n AS id, n AS updated_at_ms, hex(zeroblob(1000)) AS title FROM r")
MARKER = ("CREATE TABLE _harn_sqlite_schema_versions(name TEXT PRIMARY KEY, version INTEGER);"
          "INSERT INTO _harn_sqlite_schema_versions VALUES('session_store', 4);")


def _store(root: Path) -> Path:
    (root / ".harn").mkdir(parents=True, exist_ok=True)
    return root / ".harn" / "session-store.sqlite"


def _build(path: Path, script: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()


def _io_written() -> int:
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("wchar:"))


def test_recursive_view_is_never_evaluated(tmp_path):
    path = _store(tmp_path / "proj")
    _build(path, MARKER + f"CREATE VIEW sessions AS {RECURSIVE};")
    before_listing = sorted(os.listdir(path.parent))
    before_bytes = path.read_bytes()
    written = _io_written()
    t0 = time.monotonic()
    snap = read_session_store(str(path))
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0
    assert _io_written() - written < 1_000_000  # no temp-file spill (before: ~600 MB in 10 s)
    assert snap.sessions == []
    assert [p.code for p in snap.problems] == [CODE_REFUSED]
    assert "'sessions' is a view, not a table; not evaluated" in snap.problems[0].message
    assert sorted(os.listdir(path.parent)) == before_listing and path.read_bytes() == before_bytes


def test_sessions_served_when_events_is_a_view(tmp_path):
    path = _store(tmp_path / "proj")
    create_session_store_fixture(str(path), [{"id": "sess-a", "title": "real session", "events": []}])
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE session_events_fts; DROP TABLE session_events;"
                       "CREATE VIEW session_events AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                       "SELECT 'sess-a' AS session_id, n AS event_id, 'm' AS kind, '{}' AS payload_json FROM r;")
    conn.close()
    snap = read_session_store(str(path))
    assert [s.title for s in snap.sessions] == ["real session"] and snap.problems == []
    problems = []
    t0 = time.monotonic()
    assert read_session_events(str(path), "sess-a", problems=problems) == []
    assert time.monotonic() - t0 < 2.0
    assert [p.code for p in problems] == [CODE_REFUSED] and "is a view" in problems[0].message


def test_generated_column_is_refused(tmp_path):
    path = _store(tmp_path / "proj")
    # A generated column runs an expression from the schema on every read.
    _build(path, MARKER + "CREATE TABLE sessions(id TEXT, updated_at_ms INTEGER, "
                          "title TEXT GENERATED ALWAYS AS (printf('%.*c', 900000000, 'x')) VIRTUAL);"
                          "INSERT INTO sessions(id, updated_at_ms) VALUES ('a', 1);")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    snap = read_session_store(str(path))
    assert snap.sessions == [] and [p.code for p in snap.problems] == [CODE_REFUSED]
    assert "generated or hidden columns" in snap.problems[0].message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 50_000  # KB


def test_huge_value_is_capped(tmp_path):
    path = _store(tmp_path / "proj")
    conn = sqlite3.connect(path)
    conn.executescript(MARKER + "CREATE TABLE sessions(id TEXT, updated_at_ms INTEGER, title TEXT);")
    conn.execute("INSERT INTO sessions VALUES ('big', 2, ?)", ("x" * (sqlite_safe.MAX_VALUE_BYTES + 10),))
    conn.commit()
    conn.close()
    snap = read_session_store(str(path))
    assert snap.sessions == [] and [p.code for p in snap.problems] == [CODE_OPEN]
    assert "too big" in snap.problems[0].message


# Run in a child process with its address space and file sizes capped: a query whose deadline is lost
# grows without end (the sort of an endless recursive CTE), and then fails there in seconds (out of
# memory, or SIGXFSZ for its temp files) instead of taking the machine's memory or disk with it.
_DEADLINE_CHILD = """
import resource, sqlite3, sys, time
resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))
resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE, FSIZE))
from harn_ls.formats import sqlite_safe
path, query = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(path)
conn.executescript("CREATE TABLE t(x);")
conn.close()
conn = sqlite_safe.open_readonly(path)
t0 = time.monotonic()
try:
    sqlite_safe.query(conn, query, (), deadline_s=0.3, max_rows=10)
    sys.exit("the endless query returned")
except sqlite_safe.SqliteDeadline:
    pass
took = time.monotonic() - t0
assert took < 1.0, took
# The connection stays usable, rows are capped.
rows = sqlite_safe.query(conn, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r LIMIT 100) "
                               "SELECT n FROM r", (), 1.0, max_rows=7)
assert rows == [(i,) for i in range(1, 8)], rows
try:  # query_only: no writes even if a caller tried
    conn.execute("CREATE TABLE y(z)")
    sys.exit("a write went through")
except sqlite3.OperationalError:
    pass
conn.close()
print("ok", round(took, 3))
"""
# the child starts at ~20 MB; the sorter of an ORDER BY can take ~100 MB within the 0.3 s deadline, a lost deadline
# passes 512 MB in ~2 s
DEADLINE_MEM = 512 * 1024 * 1024
DEADLINE_FSIZE = 256 * 1024 * 1024


@pytest.mark.timeout(60)
def test_query_deadline_interrupts(tmp_path):
    code = _DEADLINE_CHILD.replace("MEM, MEM", f"{DEADLINE_MEM}, {DEADLINE_MEM}").replace(
        "FSIZE, FSIZE", f"{DEADLINE_FSIZE}, {DEADLINE_FSIZE}")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data.sqlite"), RECURSIVE + " ORDER BY updated_at_ms DESC"],
                          capture_output=True, text=True, timeout=30, cwd=str(REPO))
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), (proc.returncode, proc.stdout, proc.stderr[-2000:])


def test_view_and_virtual_table_refused_by_table_columns(tmp_path):
    path = tmp_path / "data.sqlite"
    _build(path, "CREATE TABLE t(a, b); CREATE VIEW v AS SELECT a FROM t;"
                 "CREATE VIRTUAL TABLE f USING fts5(body);"
                 "CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM t; END;")
    conn = sqlite_safe.open_readonly(str(path))
    assert sqlite_safe.table_columns(conn, "t") == ["a", "b"]
    assert "f" not in sqlite_safe.real_tables(conn) and "v" not in sqlite_safe.real_tables(conn)
    for name, why in (("v", "is a view"), ("f", "virtual table"), ("tr", "is a trigger"), ("nope", "no table")):
        with pytest.raises(sqlite_safe.SqliteRefused, match=why):
            sqlite_safe.table_columns(conn, name)
    assert conn.execute("PRAGMA trusted_schema").fetchone() == (0,)
    assert conn.execute("PRAGMA temp_store").fetchone() == (2,)  # MEMORY
    conn.close()


def test_fifo_store_refused_without_blocking(tmp_path):
    path = _store(tmp_path / "proj")
    os.mkfifo(path)
    result: list = []
    t = threading.Thread(target=lambda: result.append(read_session_store(str(path))), daemon=True)
    t.start()
    t.join(2.0)
    assert result, "reading a FIFO session store blocked"
    snap = result[0]
    assert snap.sessions == [] and [p.code for p in snap.problems] == [CODE_REFUSED]
    assert "not a regular file" in snap.problems[0].message


def test_symlink_out_of_project_refused(tmp_path):
    evil = tmp_path / "proj-evil" / "stolen.sqlite"
    evil.parent.mkdir()
    create_session_store_fixture(str(evil), [{"id": "outside", "events": []}])
    path = _store(tmp_path / "proj")
    os.symlink(evil, path)
    snap = read_session_store(str(path))
    assert snap.sessions == [] and [p.code for p in snap.problems] == [CODE_REFUSED]
    assert "outside the project" in snap.problems[0].message


def test_wal_present_is_not_opened_immutable(tmp_path):
    path = _store(tmp_path / "proj")
    create_session_store_fixture(str(path), [{"id": "sess-a", "events": []}])
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("UPDATE sessions SET title = 'live title'")
    writer.commit()  # committed into -wal, not yet checkpointed into the main file
    assert os.path.exists(str(path) + "-wal")
    assert "immutable" not in sqlite_safe._ro_uri(str(path))
    assert [s.title for s in read_session_store(str(path)).sessions] == ["live title"]
    writer.close()


def test_inspect_cli_survives_hostile_store(tmp_path):
    proj = tmp_path / "proj"
    shutil_copy = __import__("shutil").copytree
    shutil_copy(REPO / "fixtures" / "sample-project", proj, symlinks=True)
    path = proj / ".harn" / "session-store.sqlite"
    if path.exists():
        path.unlink()
    _build(path, MARKER + f"CREATE VIEW sessions AS {RECURSIVE} ORDER BY 2 DESC;")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "harn_ls", "inspect", str(proj)], capture_output=True, text=True,
                         timeout=60, cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert time.monotonic() - t0 < 30
    assert "is a view, not a table" in out.stdout + out.stderr
    assert "fact" in out.stdout.lower()  # the rest of the project is still shown
