"""Hostile inputs: raw JSON literals, byte tokens, and a JSON splicer that can place any raw text at any field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.fuzz.common import LONG

DEEP = 10_000

# Raw JSON texts (not Python values) so that 1e400, 2**70, duplicate keys and deep nesting reach the parser as bytes.
RAW_WRONG_TYPES = [
    "null", "true", "false", "0", "-1", "1.5", '""', '"x"', "[]", "{}", "[1]", '{"a":1}', '["x",null]',
]
RAW_EXTREMES = [
    "1e400", "-1e400", str(2**70), str(-(2**70)), "-0", "1e-400", "123456789012345678901234567890.5e10",
    '"\\u0000nul\\u0000"', '"\\ud800"', '"line\\nbreak\\r\\n"', '"' + "\u202e\u0301" * 50 + '"',
    '{"k":1,"k":"dup"}', '[{"id":"a","id":"b"}]',
    "[" * DEEP + "]" * DEEP,
    '{"a":' * DEEP + "1" + "}" * DEEP,
    '"' + "h" * 300_000 + '"',
]
RAW_VALUES = RAW_WRONG_TYPES + RAW_EXTREMES

# Byte tokens inserted into files at arbitrary offsets.
BYTE_TOKENS = [
    b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\r\n", b"\r", b"\n", b"\n\n",
    b"\xef\xbb\xbf", b"{", b"}", b"[", b"]", b'"', b"\\", b",", b":", b"1e400", b"null", b"---\n", b"\t",
    b'{"type":"store"}\n', b'{"type":"forget","forgotten_ids":[1]}\n', b"[" * 2000, b"\x1b[31m",
]

SENTINEL = "\u0001HARN_LS_FUZZ_SENTINEL\u0001"


def paths_of(value: Any, depth: int, prefix: tuple = ()) -> Iterator[tuple]:
    """Every (nested) key/index path down to `depth`."""
    if depth <= 0:
        return
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value[:4]))  # the first few elements of long arrays are representative
    else:
        return
    for k, v in items:
        yield prefix + (k,)
        yield from paths_of(v, depth - 1, prefix + (k,))


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        out[head] = _replace(value[head], rest, new)
        return out
    out = list(value)
    out[head] = _replace(value[head], rest, new)
    return out


def splice(value: Any, path: tuple, raw: str, *, indent: int | None = None) -> str:
    """JSON text of `value` with the field at `path` replaced by the raw JSON text `raw`."""
    text = json.dumps(_replace(value, path, SENTINEL), ensure_ascii=False, indent=indent)
    token = json.dumps(SENTINEL, ensure_ascii=False)
    assert text.count(token) == 1
    return text.replace(token, raw)


def delete(value: Any, path: tuple, *, indent: int | None = None) -> str:
    parent = value
    for p in path[:-1]:
        parent = parent[p]
    if isinstance(parent, dict):
        def drop(v, p):
            if len(p) == 1:
                return {k: x for k, x in v.items() if k != p[0]}
            return _replace(v, p[:1], drop(v[p[0]], p[1:]))
        return json.dumps(drop(value, path), ensure_ascii=False, indent=indent)
    return json.dumps(value, ensure_ascii=False, indent=indent)


FIELD_DEPTH = 6 if LONG else 3
