"""Checkpoint history: every distinct version of each checkpoint file, kept outside the project.

Harn overwrites `.harn/checkpoints/<pipeline>.json` in place and keeps no
history. While harn-ls watches, each version it sees is stored here:

    <project cache dir>/checkpoint-history/<pipeline-slug>/
        index.json            {"pipeline": name, "next": N, "versions": [{"n", "sha256", "size", "seen_at"}]}
        objects/<sha256>.json the file's bytes, stored once per content

Bounded: at most `max_versions` per pipeline and `max_bytes` of objects in
total (oldest versions go first; the newest version of a pipeline is kept).
The total is measured (one walk of the history) after each record, or once by
`check_caps()` after records made with `check_caps=False`; so is the one cap of
the whole cache root.
Deduplicated: a version identical to the newest is not recorded; identical
content seen again later is a new version that shares its object.

This is the only module here that writes for reading features, and it writes
only under `cache/dirs.project_cache_dir(root)`, which refuses any folder
inside the project. Writes are atomic (temp file + os.replace).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time
from dataclasses import dataclass

import orjson

from harn_ls.cache.dirs import cache_enabled, cap_bytes, evict_projects, project_cache_dir, write_cache_file
from harn_ls.util.safe_read import resolves_inside

MAX_VERSIONS = 50
MAX_BYTES = 32 * 1024 * 1024
MAX_FILE_BYTES = 8 * 1024 * 1024  # larger checkpoint files are not kept


@dataclass(frozen=True)
class Version:
    """One stored version of a checkpoint file in the history."""

    n: int
    sha256: str
    size: int
    seen_at: float


def _slug(pipeline: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in pipeline)[:40].strip(".") or "p"
    return f"{safe}-{hashlib.sha256(pipeline.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


class CheckpointHistory:
    def __init__(self, project_root: str, *, folder: str | None = None, max_versions: int = MAX_VERSIONS,
                 max_bytes: int = MAX_BYTES) -> None:
        self.project_root = os.path.realpath(project_root)
        self._own_folder = folder is None  # in the project's cache folder (not a test's own)
        self.folder = folder or os.path.join(project_cache_dir(project_root), "checkpoint-history")
        if resolves_inside(self.folder, self.project_root):
            raise ValueError(f"checkpoint history folder {self.folder} would be inside the project")
        self.max_versions = max(1, max_versions)
        # a quarter of the one cache cap at most: the history is counted in HARN_LS_CACHE_MAX_MB
        self.max_bytes = min(max_bytes, cap_bytes() // 4)
        self._lock = threading.Lock()

    @classmethod
    def for_project(cls, project_root: str) -> CheckpointHistory | None:
        """The store for a project, or None when caching is off (`HARN_LS_CACHE=off`) or impossible."""
        if not cache_enabled():
            return None
        try:
            return cls(project_root)
        except ValueError:
            return None

    # ------------------------------------------------------------ reading
    def _dir(self, pipeline: str) -> str:
        return os.path.join(self.folder, _slug(pipeline))

    def _index(self, pipeline: str) -> dict:
        try:
            with open(os.path.join(self._dir(pipeline), "index.json"), "rb") as fh:
                data = orjson.loads(fh.read())
        except (OSError, orjson.JSONDecodeError):
            return {"pipeline": pipeline, "next": 1, "versions": []}
        if not isinstance(data, dict) or data.get("pipeline") != pipeline or not isinstance(data.get("versions"), list):
            return {"pipeline": pipeline, "next": 1, "versions": []}
        return data

    def versions(self, pipeline: str) -> list[Version]:
        out = []
        for v in self._index(pipeline)["versions"]:
            try:
                out.append(Version(int(v["n"]), str(v["sha256"]), int(v["size"]), float(v["seen_at"])))
            except (KeyError, TypeError, ValueError):
                continue
        return out

    def version(self, pipeline: str, n: int) -> Version | None:
        return next((v for v in self.versions(pipeline) if v.n == n), None)

    def read(self, pipeline: str, n: int) -> bytes | None:
        v = self.version(pipeline, n)
        if v is None:
            return None
        try:
            with open(os.path.join(self._dir(pipeline), "objects", f"{v.sha256}.json"), "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == v.sha256 else None

    def pipelines(self) -> list[str]:
        out: list[str] = []
        try:
            entries = os.listdir(self.folder)
        except OSError:
            return out
        for name in entries:
            try:
                with open(os.path.join(self.folder, name, "index.json"), "rb") as fh:
                    p = orjson.loads(fh.read()).get("pipeline")
            except (OSError, orjson.JSONDecodeError, AttributeError):
                continue
            if isinstance(p, str) and _slug(p) == name:
                out.append(p)
        return sorted(out)

    # ------------------------------------------------------------ writing
    def record(self, pipeline: str, data: bytes, seen_at: float | None = None, check_caps: bool = True) -> int | None:
        """Keep `data` as the newest version of `pipeline`; returns its number, or None when unchanged/too big.
        With `check_caps` False the caps are left to one `check_caps()` after several records (a load
        that records every pipeline then walks the cache folders once, not once per version)."""
        if len(data) > MAX_FILE_BYTES or len(data) > self.max_bytes:
            return None
        digest = hashlib.sha256(data).hexdigest()
        with self._lock, self._across_processes(pipeline):
            idx = self._index(pipeline)
            versions = idx["versions"]
            if versions and versions[-1].get("sha256") == digest:
                return None
            d = self._dir(pipeline)
            obj = os.path.join(d, "objects", f"{digest}.json")
            if not os.path.isfile(obj):
                write_cache_file(obj, data)
            n = int(idx.get("next") or 1)
            versions.append({"n": n, "sha256": digest, "size": len(data),
                             "seen_at": seen_at if seen_at is not None else time.time()})
            idx["next"] = n + 1
            del versions[:-self.max_versions]
            self._save(pipeline, idx)
            self._prune_objects(pipeline, idx)
            if check_caps:  # (under this pipeline's flock: the cap rewrites its index too)
                self._enforce_total()
        if check_caps and self._own_folder:
            evict_projects(None, os.path.dirname(self.folder))
        return n

    def check_caps(self) -> None:
        """Hold the history to `max_bytes`, then the cache root to its one cap (which covers the history too)."""
        with self._lock:
            self._enforce_total()
        if self._own_folder:
            evict_projects(None, os.path.dirname(self.folder))

    @contextlib.contextmanager
    def _across_processes(self, pipeline: str):
        """`harn-ls serve` and `harn-ls watch` may keep the same project's history at once: the index's
        read-modify-write is taken under an exclusive flock on `<pipeline dir>/index.lock` (in the cache)."""
        d = self._dir(pipeline)
        try:
            os.makedirs(d, exist_ok=True)
            fd = os.open(os.path.join(d, "index.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            yield  # no lock file possible: the thread lock still holds within this process
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def _save(self, pipeline: str, idx: dict) -> None:
        write_cache_file(os.path.join(self._dir(pipeline), "index.json"), orjson.dumps(idx))

    def _prune_objects(self, pipeline: str, idx: dict) -> int:
        """Remove the pipeline's objects no version names; returns the bytes freed."""
        keep = {v.get("sha256") for v in idx["versions"]}
        objs = os.path.join(self._dir(pipeline), "objects")
        try:
            names = os.listdir(objs)
        except OSError:
            return 0
        freed = 0
        for name in names:
            if name.endswith(".json") and name[:-5] not in keep:
                path = os.path.join(objs, name)
                with contextlib.suppress(OSError):
                    size = os.path.getsize(path)
                    os.unlink(path)
                    freed += size
        return freed

    def total_bytes(self) -> int:
        total = 0
        for root, _dirs, files in os.walk(self.folder):
            if os.path.basename(root) == "objects":
                for f in files:
                    with contextlib.suppress(OSError):
                        total += os.path.getsize(os.path.join(root, f))
        return total

    def _enforce_total(self) -> None:
        total = self.total_bytes()
        if total <= self.max_bytes:
            return
        indexes = {p: self._index(p) for p in self.pipelines()}
        while total > self.max_bytes:
            # the oldest version that is not the newest of its pipeline
            candidates = [(v.get("seen_at", 0), v.get("n", 0), p) for p, idx in indexes.items() for v in idx["versions"][:-1]]
            if not candidates:
                break
            _, n, p = min(candidates)
            idx = indexes[p]
            idx["versions"] = [v for v in idx["versions"] if v.get("n") != n]
            self._save(p, idx)
            total -= self._prune_objects(p, idx)  # (not walked again per version dropped)
