"""The only code in harn-ls that writes to disk.

Every write is atomic (temp file in the same directory, fsync, `os.replace`,
fsync of the directory) or an append of whole lines (one `write` of all the
lines with O_APPEND, then fsync). Paths are checked to stay inside the project
with symlinks resolved before anything is written.
"""

from __future__ import annotations

import os
import uuid


class ActionFailed(Exception):
    """An action was refused or failed; nothing (or nothing partial) was written."""


def ensure_inside(project_root: str, path: str) -> str:
    """Refuse a target that would leave the project once symlinks are resolved."""
    real_root = os.path.realpath(project_root)
    # Resolve the deepest existing ancestor: a symlinked folder pointing outside is caught
    # even when the file itself does not exist yet.
    probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    real_probe = os.path.realpath(probe)
    rest = os.path.relpath(os.path.abspath(path), probe)
    real = os.path.normpath(os.path.join(real_probe, rest)) if rest != "." else real_probe
    if real != real_root and not real.startswith(real_root + os.sep):
        raise ActionFailed(f"refused: {path} resolves outside the project ({real})")
    return real


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def make_dirs(project_root: str, directory: str) -> None:
    ensure_inside(project_root, directory)
    os.makedirs(directory, exist_ok=True)
    ensure_inside(project_root, directory)  # re-check: a racing symlink swap is refused too


def atomic_write(project_root: str, path: str, data: bytes | str, *, exclusive: bool = False) -> None:
    """Write `path` so a reader sees the old file or the whole new one, never a part.

    exclusive=True refuses to replace an existing file (link(2) is atomic).
    """
    ensure_inside(project_root, path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(path) or "."
    make_dirs(project_root, directory)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.harn-ls-{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise ActionFailed(f"refused: {path} already exists") from None
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def append_lines(project_root: str, path: str, lines: list[str]) -> int:
    """Append whole lines with one write; returns the byte offset the lines start at.

    A log whose last line is torn (no newline) first gets a newline, so our
    line never merges into someone else's half-written one.
    """
    ensure_inside(project_root, path)
    for line in lines:
        if "\n" in line or "\r" in line:
            raise ActionFailed("refused: a memory event line may not contain a raw newline")
    make_dirs(project_root, os.path.dirname(path))
    payload = "".join(line + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    payload = b"\n" + payload
        written = 0
        while written < len(payload):
            written += os.write(fd, payload[written:])
        os.fsync(fd)
        return size
    finally:
        os.close(fd)


def remove_file(project_root: str, path: str) -> None:
    ensure_inside(project_root, path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
