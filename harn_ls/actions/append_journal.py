"""Undo our own torn append: an intent record kept outside the project.

One `write()` of several pages is not atomic against SIGKILL on Linux: the
kernel copies page by page and stops between pages when a fatal signal is
pending, so a killed harn-ls can leave the first part of its lines with no
newline. Harn then refuses the whole namespace (one malformed line fails
`read_events`), and a later append would turn the torn tail into a malformed
middle line for good.

So before an append that crosses a page boundary, the writer records what it
is about to write (file identity, start offset, the bytes) in harn-ls's cache
folder, never in the project. The next append to the same file reads that
record first: if the file ends exactly with a strict prefix of those bytes
starting at that offset, the tail is ours and torn, and its unfinished last
line is cut (the whole lines before it stay: readers already count them, and
every action plans its lines against what it read, so it does not append them
twice); in every other case the file is left alone. Reads never repair
anything (reads never write); the reader reports the torn line until then.

A write within one page cannot be split that way, so it needs no record.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time

import orjson

from harn_ls.cache.dirs import cache_root, write_cache_file

PAGE = 4096
_HEADER_CAP = 4096  # the JSON header line of a record; anything longer is not ours
# A record outlives its append only when harn-ls died inside it, and the next append to that file
# consumes it. A log never appended to again would keep its record (and its payload, possibly
# megabytes) for good: records older than this are dropped when a new one is written.
STALE_AFTER_S = 30 * 24 * 3600


def needs_record(start: int, length: int) -> bool:
    """True when bytes [start, start+length) span more than one page of the file."""
    return length > 0 and (start % PAGE) + length > PAGE


def _record_path(real_path: str) -> str:
    digest = hashlib.sha256(real_path.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(cache_root(), "appends", digest + ".intent")


def record_intent(real_path: str, st: os.stat_result, start: int, payload: bytes) -> str | None:
    """Write the intent record (atomically, durably); returns its path, or None if the cache folder is unusable."""
    path = _record_path(real_path)
    prune_stale(os.path.dirname(path))
    header = orjson.dumps({"path": real_path, "dev": st.st_dev, "ino": st.st_ino,
                           "start": start, "length": len(payload)})
    try:
        write_cache_file(path, header + b"\n" + payload, durable=True)
    except OSError:
        return None
    return path


def prune_stale(folder: str) -> None:
    """Drop intent records older than STALE_AFTER_S in `folder`."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    cutoff = time.time() - STALE_AFTER_S
    for entry in entries:
        try:
            if entry.name.endswith(".intent") and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
        except OSError:
            pass


def drop_intent(record: str | None) -> None:
    if record:
        with contextlib.suppress(OSError):
            os.unlink(record)


def _read_record(path: str) -> tuple[dict, bytes] | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    newline = data.find(b"\n", 0, _HEADER_CAP)
    if newline < 0:
        return None
    try:
        header = orjson.loads(data[:newline])
    except orjson.JSONDecodeError:
        return None
    payload = data[newline + 1:]
    if not isinstance(header, dict) or header.get("length") != len(payload):
        return None
    return header, payload


def roll_back_torn_tail(real_path: str, fd: int) -> int:
    """Before appending to `fd` (the open log at `real_path`): cut our own torn tail.

    Returns the number of bytes removed (0 when there was nothing of ours to undo).
    Only the unfinished line goes; whole lines of the same write stay.
    The record is dropped whatever it said: it describes an append that is over.
    """
    path = _record_path(real_path)
    if not os.path.exists(path):
        return 0
    found = _read_record(path)
    drop_intent(path)
    if found is None:
        return 0
    header, payload = found
    st = os.fstat(fd)
    if header.get("path") != real_path or header.get("dev") != st.st_dev or header.get("ino") != st.st_ino:
        return 0
    start = header.get("start")
    if not isinstance(start, int) or not start < st.st_size < start + len(payload):
        return 0  # nothing of it landed, or all of it did, or someone appended after it
    tail = os.pread(fd, st.st_size - start, start)
    if tail != payload[: len(tail)]:
        return 0
    if os.fstat(fd).st_size != st.st_size:
        return 0  # another writer is appending right now: leave the file to it
    # keep the whole lines that landed (the reader already counts them, and the caller planned its
    # lines knowing them); cut only the unfinished one
    keep = start + tail.rfind(b"\n") + 1
    os.ftruncate(fd, keep)
    os.fsync(fd)
    return st.st_size - keep
