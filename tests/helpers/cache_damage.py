"""Damage one payload of a project's state cache the way the cache tests need it: a flipped byte,
a cut, or content rewritten so that its manifest entry (size, CRC) still agrees with it."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

import orjson

from harn_ls.cache.store import MANIFEST, ProjectCache


def damage_payload(project: Path, key: str, damage: str, flip: tuple[bytes, bytes],
                   rewrite: Callable[[dict], dict]) -> None:
    """`damage` is "flip" (replace `flip[0]` by `flip[1]` once), "truncate" (keep half), or anything
    else: the decoded payload goes through `rewrite` and is written back with a manifest entry that
    matches it, so only its content is wrong."""
    folder = Path(ProjectCache(str(project)).folder)
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    payload = folder / manifest[key]["name"]
    data = payload.read_bytes()
    if damage == "flip":
        data = data.replace(flip[0], flip[1], 1)
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = orjson.dumps(rewrite(orjson.loads(data)))
        manifest[key].update(size=len(data), crc=zlib.crc32(data))
        (folder / MANIFEST).write_bytes(orjson.dumps(manifest))
    payload.write_bytes(data)


def flip_cut_or_delete(payload: Path, damage: str, marker: bytes) -> bool:
    """The damages any payload file takes alike: "flip" (the first byte of `marker`'s first
    occurrence changed: same size, another checksum), "truncate" (half kept), "delete" / "deleted"
    (the file gone). False, and nothing done, for any other damage: the caller's own."""
    data = payload.read_bytes()
    if damage == "flip":
        i = data.index(marker)
        payload.write_bytes(data[:i] + (b"F" if data[i:i + 1] != b"F" else b"G") + data[i + 1:])
    elif damage == "truncate":
        payload.write_bytes(data[: len(data) // 2])
    elif damage in ("delete", "deleted"):
        payload.unlink()
    else:
        return False
    return True
