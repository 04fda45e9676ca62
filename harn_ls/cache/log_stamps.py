"""A memory log's stamp in the cache, and what became of the log since: the same, appended to, or changed.

The stamp holds st_dev, st_ino, size, mtime_ns, the byte offset read so far, the line count, the first
64 bytes and a sha256 of the (up to) 4 KiB before the offset (cache/store.py says what each allows)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from hashlib import sha256
from typing import Any

from harn_ls.util.safe_read import open_project_file

TAIL_HASH_BYTES = 4096


def stamp_log(path: str, offset: int, line_no: int, torn: int, head: bytes) -> dict | None:
    """What the cache needs to recognise this log again (None if it cannot be read)."""
    try:
        with open_project_file(path, None) as fh:  # a FIFO swapped in for the log: refused, never waited on
            st = os.fstat(fh.fileno())
            start = max(0, offset - TAIL_HASH_BYTES)
            fh.seek(start)
            tail = fh.read(offset - start)
    except OSError:
        return None
    if len(tail) != offset - start:
        return None
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "offset": offset,
            "line_no": line_no, "torn": torn, "head": head.hex(), "tail_hash": sha256(tail).hexdigest()}


def compare_log(path: str, v: Mapping[str, Any]) -> str:
    """"same", "appended" or "changed" for a log against its cached stamp (`stamp_log`)."""
    try:
        with open_project_file(path, None) as fh:
            st = os.fstat(fh.fileno())
            if (st.st_dev, st.st_ino) != (v["dev"], v["ino"]):
                return "changed"
            offset = v["offset"]
            if st.st_size < v["size"] or st.st_size < offset:
                return "changed"
            if st.st_size == v["size"] and st.st_mtime_ns != v["mtime_ns"]:
                return "changed"  # rewritten in place (same size): an append always grows the file
            head = bytes.fromhex(v["head"])
            if fh.read(len(head)) != head:
                return "changed"
            start = max(0, offset - TAIL_HASH_BYTES)
            fh.seek(start)
            if sha256(fh.read(offset - start)).hexdigest() != v["tail_hash"]:
                return "changed"
    except (OSError, KeyError, TypeError, ValueError):
        return "changed"
    return "same" if st.st_size == v["size"] and st.st_mtime_ns == v["mtime_ns"] else "appended"
