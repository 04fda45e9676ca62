"""Reading SQLite files that come from an untrusted project: data, never code.

A cloned repository can ship any `.sqlite` file. A database schema is code: a
view can be a recursive CTE that never ends (and spills to a temp file until
the disk is full), a trigger or a generated column runs expressions, a virtual
table runs a module. Everything harn-ls reads from a project database goes
through this module, which keeps these rules:

* read-only: `mode=ro` URI (plus `immutable=1` only when no `-wal` sits next to
  the file, so SQLite creates nothing beside it), `PRAGMA query_only=ON`;
* `PRAGMA trusted_schema=OFF`: SQL functions from the schema are restricted to
  innocuous ones;
* real tables only: a name is read only if `sqlite_master` lists it with
  `type='table'`, it is not a virtual table and none of its columns is a
  generated column; views and triggers are never evaluated;
* temp storage in memory (`temp_store=MEMORY`), never a temp file;
* a deadline per query (`set_progress_handler`), a row limit per query, and a
  cap on the size of any single value (`SQLITE_LIMIT_LENGTH`);
* the file itself must be a regular file (a FIFO or a device is refused without
  blocking) and, when a root is given, its real path must lie inside the root;
* the project's bytes stay as they are: a reader of a WAL database writes its
  read marks into the `-shm`, so a database whose `-wal` holds frames is read
  from a private snapshot (`snapshot_dir`: copies of the database and its
  `-wal`, never of the `-shm`, which SQLite rebuilds from the WAL; at most
  MAX_SNAPSHOT_COPY), and one whose `-wal` is empty with `immutable=1`.
  The snapshot sees every committed row; it is removed when the connection
  closes.

Callers catch `SqliteRefused` (a clear, user-facing reason) and `sqlite3.Error`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any, TypeAlias

from harn_ls.util.safe_read import ReadRefused, open_confined, resolves_inside

# one result row: SQLite hands back None, int, float, str or bytes per column, and every reader checks
# the type of each value it uses
SqlRow: TypeAlias = tuple[Any, ...]
# one value of a row, for a record field that keeps it as stored
SqlValue: TypeAlias = "str | int | float | bytes | None"

DEFAULT_DEADLINE_S = 1.0      # per query; a hostile file yields a problem well within 2 s
DEFAULT_MAX_ROWS = 10_000     # per query
MAX_VALUE_BYTES = 16 << 20    # any single TEXT/BLOB value (SQLITE_LIMIT_LENGTH)
BUSY_TIMEOUT_S = 1.0
_PROGRESS_OPS = 10_000        # VM instructions between deadline checks
MAX_SNAPSHOT_COPY = 256 << 20  # a database (and its -wal) copied for a snapshot: at most this much each


class SqliteRefused(Exception):
    """The database (or a name in it) is not something we read; the message says why."""


class SqliteDeadline(SqliteRefused):
    """A query ran past its deadline and was interrupted."""


def _is_wal_mode(path: str) -> bool:
    # Header bytes 18/19 are the write/read format versions: 2 = WAL.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 20)
    finally:
        os.close(fd)
    return len(head) == 20 and head[:16] == b"SQLite format 3\x00" and (head[18] == 2 or head[19] == 2)


def _wal_frames(path: str) -> bool:
    """True when `path-wal` holds anything (committed pages not yet in the database file)."""
    try:
        return os.stat(path + "-wal").st_size > 0
    except OSError:
        return False


def _ro_uri(path: str) -> str:
    # A -wal with frames: a writer is (or was) active and the -wal holds committed pages, so no `immutable`
    # (only ever opened this way on a private snapshot: see open_readonly). A fully checkpointed WAL db
    # with no writer: `immutable` avoids creating -wal/-shm.
    immutable = not _wal_frames(path) and _is_wal_mode(path)
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro" + ("&immutable=1" if immutable else "")


def check_file(path: str, root: str | None = None) -> None:
    """Raise SqliteRefused unless `path` is a regular file (inside `root`'s real path when given)."""
    try:
        st = os.stat(path)  # follows links: what SQLite would open
    except OSError as exc:
        raise SqliteRefused(f"cannot stat database: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SqliteRefused("not a regular file (a FIFO, device or directory is never opened)")
    if root is not None and not resolves_inside(path, root):
        raise SqliteRefused(f"resolves outside the project ({os.path.realpath(path)}); not opened")


class _SnapshotConnection(sqlite3.Connection):
    """A connection to a private snapshot; closing it removes the snapshot."""

    snapshot: str | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.snapshot:
                shutil.rmtree(self.snapshot, ignore_errors=True)
                self.snapshot = None


def _copy_file(src: str, dest: str, root: str | None) -> None:
    """Copy a database or its `-wal` through safe_read: a regular file inside `root` (a FIFO or
    /dev/zero there is refused, never waited on or copied for ever), at most MAX_SNAPSHOT_COPY bytes."""
    try:
        fd, _st = open_confined(src, root, MAX_SNAPSHOT_COPY)
    except ReadRefused as exc:
        raise SqliteRefused(f"{os.path.basename(src)}: {exc.reason}") from None
    try:
        with open(dest, "xb") as out:  # a fresh file in our own private folder
            while chunk := os.read(fd, 1 << 20):
                out.write(chunk)
    finally:
        os.close(fd)


def _snapshot(path: str, snapshot_dir: str | None, root: str | None) -> str:
    """A private folder holding copies of `path` and its `-wal`: SQLite writes its read marks into
    the folder's own `-shm`, never into the project's."""
    if snapshot_dir:
        os.makedirs(snapshot_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="harn-ls-sqlite-", dir=snapshot_dir or None)
    name = os.path.join(tmp, os.path.basename(path))
    try:
        # The -wal first: a checkpoint between the two steps leaves the database at least as new
        # as the WAL's frames (replaying them again gives the same pages).
        _copy_file(path + "-wal", name + "-wal", root)
        # Copied, not hard-linked: a link changes the file's link count and ctime, which a watcher
        # sees as a change (and would read again, linking again...).
        _copy_file(path, name, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return name


def limit_schema(conn: sqlite3.Connection) -> None:
    """What a project's schema may do on this connection, reading or writing: no value over
    MAX_VALUE_BYTES (a trigger's zeroblob(2e9) fails), no attached database, only innocuous SQL
    functions from the schema (`trusted_schema=OFF`)."""
    if hasattr(conn, "setlimit"):
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 1 << 20)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.execute("PRAGMA trusted_schema=OFF")


def open_readonly(path: str, root: str | None = None, snapshot_dir: str | None = None) -> sqlite3.Connection:
    """A locked-down read-only connection that changes no byte beside the file (a `-wal` with frames:
    a private snapshot in `snapshot_dir`, else the system temp folder). Raises SqliteRefused or
    sqlite3.Error."""
    check_file(path, root)
    target, snapshot = path, None
    if _wal_frames(path):
        target = _snapshot(path, snapshot_dir, root)
        snapshot = os.path.dirname(target)
    try:
        conn = sqlite3.connect(_ro_uri(target), uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False, factory=_SnapshotConnection)
    except BaseException:
        if snapshot:
            shutil.rmtree(snapshot, ignore_errors=True)
        raise
    conn.snapshot = snapshot
    try:
        limit_schema(conn)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute("PRAGMA cell_size_check=ON")
    except Exception:
        conn.close()
        raise
    return conn


def _schema_rows(conn: sqlite3.Connection, deadline_s: float) -> list[SqlRow]:
    # sqlite_master is a plain table: reading it evaluates nothing from the schema.
    return query(conn, "SELECT type, name, sql, rootpage FROM main.sqlite_master", (), deadline_s, 100_000, _schema=True)


def real_tables(conn: sqlite3.Connection, deadline_s: float = DEFAULT_DEADLINE_S) -> set[str]:
    """Names of ordinary tables (no views, no virtual tables)."""
    out = set()
    for kind, name, sql, rootpage in _schema_rows(conn, deadline_s):
        if kind == "table" and isinstance(name, str) and not _is_virtual(sql, rootpage):
            out.add(name)
    return out


def object_kind(conn: sqlite3.Connection, name: str, deadline_s: float = DEFAULT_DEADLINE_S) -> str | None:
    """'table', 'virtual table', 'view', 'index', 'trigger' or None (absent) for a schema name."""
    for kind, n, sql, rootpage in _schema_rows(conn, deadline_s):
        if n == name:
            return "virtual table" if kind == "table" and _is_virtual(sql, rootpage) else kind
    return None


def _is_virtual(sql: object, rootpage: object) -> bool:
    # A virtual table has no b-tree (rootpage 0); the SQL text is checked as well.
    if not isinstance(rootpage, int) or rootpage <= 0:
        return True
    return isinstance(sql, str) and " ".join(sql.split()[:2]).upper() == "CREATE VIRTUAL"


def table_columns(conn: sqlite3.Connection, name: str, deadline_s: float = DEFAULT_DEADLINE_S) -> list[str]:
    """Column names of a real table. Raises SqliteRefused for a view, a virtual table, a missing
    name, or a table with generated columns (an expression from the schema would run on read)."""
    kinds = {row[1]: (row[0], row[2], row[3]) for row in _schema_rows(conn, deadline_s)}
    if name not in kinds:
        raise SqliteRefused(f"no table '{name}'")
    kind, sql, rootpage = kinds[name]
    if kind != "table":
        raise SqliteRefused(f"'{name}' is a {kind}, not a table; not evaluated")
    if _is_virtual(sql, rootpage):
        raise SqliteRefused(f"'{name}' is a virtual table; not read")
    rows = query(conn, "SELECT name, hidden FROM pragma_table_xinfo(?)", (name,), deadline_s, 10_000, _schema=True)
    if any(hidden for _, hidden in rows):
        raise SqliteRefused(f"'{name}' has generated or hidden columns; not read")
    return [r[0] for r in rows]


def query(conn: sqlite3.Connection, sql: str, params: Sequence[object] | dict[str, object] = (),
          deadline_s: float = DEFAULT_DEADLINE_S, max_rows: int = DEFAULT_MAX_ROWS,
          *, _schema: bool = False) -> list[SqlRow]:
    """Run one SELECT with a deadline and at most `max_rows` rows (extra rows are not fetched).

    Raises SqliteDeadline when the deadline passes (the statement is interrupted), sqlite3.Error
    otherwise. The caller is responsible for only naming tables checked with `table_columns`."""
    end = time.monotonic() + deadline_s

    def progress() -> int:
        return 1 if time.monotonic() > end else 0

    conn.set_progress_handler(progress, _PROGRESS_OPS)
    try:
        cursor = conn.execute(sql, params)
        rows = cursor.fetchmany(max_rows) if max_rows > 0 else []
        cursor.close()
        return rows
    except sqlite3.OperationalError as exc:
        if time.monotonic() > end or "interrupted" in str(exc):
            raise SqliteDeadline(f"query took longer than {deadline_s:g} s; interrupted") from None
        raise
    finally:
        conn.set_progress_handler(None, 0)


def close_quietly(conn: sqlite3.Connection | None) -> None:
    if conn is None:
        return
    try:
        if conn.in_transaction:
            conn.execute("COMMIT")
    except sqlite3.Error:
        pass
    conn.close()
