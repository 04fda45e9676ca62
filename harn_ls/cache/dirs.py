"""Where harn-ls keeps what it remembers between runs: always outside the project.

Reads never write into the project, so every cache (the state cache, checkpoint
history) lives under one user-level folder, one sub-folder per project keyed by
the project's real path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from hashlib import sha256

from harn_ls.util.safe_read import resolves_inside

STATE_DIR = "state"  # a project folder's state cache (cache/store.py)
MANIFEST = "manifest.json"  # ...and its manifest: it names the project and dates its last use
DEFAULT_MAX_MB = 2048


def cache_enabled(env: Mapping[str, str] | None = None) -> bool:
    """False when `HARN_LS_CACHE=off` (or 0/false/no)."""
    env = os.environ if env is None else env
    return env.get("HARN_LS_CACHE", "").strip().lower() not in {"off", "0", "false", "no"}


def cache_root(env: Mapping[str, str] | None = None) -> str:
    """`$HARN_LS_CACHE_DIR`, else `$XDG_CACHE_HOME/harn-ls`, else `~/.cache/harn-ls`."""
    env = os.environ if env is None else env
    explicit = env.get("HARN_LS_CACHE_DIR", "").strip()
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "harn-ls")
    return os.path.join(os.path.expanduser("~"), ".cache", "harn-ls")


def project_key(project_root: str) -> str:
    """Folder name for one project: readable basename plus a hash of its real path."""
    real = os.path.realpath(project_root)
    digest = sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    base = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real))[:40] or "root"
    return f"{base}-{digest}"


def project_cache_dir(project_root: str, env: Mapping[str, str] | None = None) -> str:
    """The cache folder of one project (not created here). Never inside the project."""
    folder = os.path.join(cache_root(env), project_key(project_root))
    if resolves_inside(folder, project_root):
        raise ValueError(f"cache folder {folder} would be inside the project {project_root}")
    return folder


def write_cache_file(path: str, data: bytes, durable: bool = False) -> None:
    """Write one file of harn-ls's own cache folder atomically (temp file + rename; folders made,
    private to the user). `durable` fsyncs the data before the rename, for records that must
    survive a crash (the append journal). Raises OSError; no temp file is left behind."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    # start-up: tempfile (with shutil and random, ~10 ms) loads only when a cache file is written
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _tree_bytes(folder: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def cap_bytes(env: Mapping[str, str] | None = None) -> int:
    """The one cap on everything in the cache root (`HARN_LS_CACHE_MAX_MB`, else DEFAULT_MAX_MB)."""
    env = os.environ if env is None else env
    try:
        mb = float(env.get("HARN_LS_CACHE_MAX_MB", DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int(mb * 1024 * 1024) if mb == mb and mb > 0 else DEFAULT_MAX_MB * 1024 * 1024


def _project_of(folder: str) -> str | None:
    """The project a cache folder belongs to, as its state manifest records it (None if unknown)."""
    try:
        with open(os.path.join(folder, STATE_DIR, MANIFEST), "rb") as fh:
            # start-up: orjson is loaded by then (every cache reader uses it)
            import orjson

            doc = orjson.loads(fh.read(1 << 20))
    except (OSError, ValueError):
        return None
    project = doc.get("project") if isinstance(doc, dict) else None
    return project if isinstance(project, str) else None


def _last_used(folder: str) -> float:
    with contextlib.suppress(OSError):
        return os.stat(os.path.join(folder, STATE_DIR, MANIFEST)).st_mtime
    try:
        return max([os.lstat(folder).st_mtime] + [de.stat(follow_symlinks=False).st_mtime for de in os.scandir(folder)])
    except OSError:
        return 0.0


def evict_projects(env: Mapping[str, str] | None, keep: str | None) -> list[str]:
    """Drop whole project folders (state cache, checkpoint history, kept anchors, append records,
    snapshots: everything) until the cache root is under its one cap (`cap_bytes`). Folders of
    projects that no longer exist always go (first), then the least recently used; `keep` (the
    project being served) is never dropped here."""
    cap = cap_bytes(env)
    root = cache_root(env)
    found = []
    try:
        for de in os.scandir(root):
            if de.is_dir(follow_symlinks=False):
                project = _project_of(de.path)
                gone = project is not None and not os.path.isdir(project)
                found.append((not gone, _last_used(de.path), de.path, _tree_bytes(de.path)))
    except OSError:
        return []
    total = sum(f[3] for f in found)
    dropped = []
    for alive, _used, project, size in sorted(found):
        if total <= cap and alive:
            break  # (a deleted project's folder is dropped even under the cap: nothing can use it again)
        if keep is not None and os.path.abspath(project) == os.path.abspath(keep):
            continue
        # start-up: shutil (with bz2 and lzma, ~8 ms) loads only when a cache folder is dropped
        import shutil

        shutil.rmtree(project, ignore_errors=True)
        total -= size
        dropped.append(project)
    return dropped
