"""The tail reader against a plain reference model: any bytes, read whole or in random appends, with tiny
chunks and a tiny line limit, give exactly the reference's lines (over-long lines reported, never buffered)."""

from __future__ import annotations

import os
import tempfile

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from harn_ls.formats import jsonl
from tests.fuzz.common import FUZZ, Counter, check_problems

LIMIT = 40


def reference(data: bytes) -> list[tuple[int, str]]:
    """(line number, value-or-problem code) for every complete, non-blank line."""
    out = []
    lines = data.split(b"\n")[:-1]  # the part after the last newline is torn
    for n, raw in enumerate(lines, 1):
        if len(raw) > LIMIT:
            out.append((n, jsonl.CODE_LINE_TOO_LONG))
            continue
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        try:
            v = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:
                raw.decode("utf-8")
                out.append((n, jsonl.CODE_INVALID_JSON))
            except UnicodeDecodeError:
                out.append((n, jsonl.CODE_INVALID_UTF8))
            continue
        out.append((n, orjson.dumps(v).decode() if isinstance(v, dict) else jsonl.CODE_NOT_OBJECT))
    return out


def seen(lines) -> list[tuple[int, str]]:
    return [(ln.line_no, orjson.dumps(ln.value).decode() if ln.value is not None else ln.problem.code) for ln in lines]


piece = st.sampled_from([b"{}", b'{"a":1}', b"[1]", b"\n", b"\r\n", b" ", b"x", b"\xff", b'{"s":"' + b"y" * 30 + b'"}',
                         b"z" * 50, b"\x00" * 45]) | st.binary(max_size=12)


def test_tail_matches_reference(monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", LIMIT)

    @FUZZ
    @given(parts=st.lists(piece, max_size=40), cuts=st.lists(st.integers(0, 600), max_size=6),
           chunk=st.integers(1, 64))
    @example(parts=[b"z" * 50, b"\n", b"{}", b"\n"], cuts=[], chunk=64)  # a long line that fits in one chunk
    @example(parts=[b"z" * 50, b"\n", b"{}", b"\n"], cuts=[3, 20], chunk=4)  # ...and one that arrives in pieces
    def run(parts, cuts, chunk):
        data = b"".join(parts)
        fd, path = tempfile.mkstemp(prefix="harn-ls-tail-")
        os.close(fd)
        try:
            with open(path, "wb") as fh:
                fh.write(data)
            whole = jsonl.JsonlTail(path, chunk_bytes=chunk)
            got = whole.read_new().lines
            assert seen(got) == reference(data)
            check_problems([ln.problem for ln in got if ln.problem])
            # Written in random appends, read after each one: the same lines, in order, once each.
            open(path, "wb").close()
            tail = jsonl.JsonlTail(path, chunk_bytes=chunk)
            acc, prev = [], 0
            for c in sorted({c % (len(data) + 1) for c in cuts}) + [len(data)]:
                with open(path, "ab") as fh:
                    fh.write(data[prev:c])
                prev = c
                batch = tail.read_new()
                assert not batch.reset
                acc += batch.lines
            assert seen(acc) == reference(data)
            Counter.hit("jsonl.tail", 2)
        finally:
            os.unlink(path)

    run()
