"""Every reader over hostile input: truncation at every byte, wrong types at every field, extreme values,
random byte mutations and generated JSON. Invariant: nothing raises, every Problem is well formed."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import readers as R
from tests.fuzz.common import FUZZ, LONG, SAMPLE, Counter, check_problems, small
from tests.fuzz.hostile import BYTE_TOKENS, FIELD_DEPTH, RAW_EXTREMES, RAW_WRONG_TYPES, delete, paths_of, splice

PROBE_SAMPLE = json.dumps({
    "schemaVersion": 1, "ok": False,
    "data": {"files": [{"path": "/tmp/x.harn", "status": "error", "diagnostics": [
        {"source": "type", "severity": "error", "code": "HARN-TYP-001", "message": "type mismatch",
         "span": {"start": 3, "end": 9}, "help": "convert"}]}],
             "summary": {"ok": 0, "warnings": 0, "errors": 1, "diagnostics": 1}},
    "error": {"code": "check_failed", "message": "failed", "details": None}, "warnings": []}, indent=2).encode()


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory(prefix="harn-ls-fuzz-") as d:
        yield R.Scratch(Path(d))


def feed(scratch, reader: str, data: bytes) -> None:
    fn, _ = R.BYTE_READERS[reader]
    problems = fn(scratch, data)
    check_problems(problems, f"{reader}: {data[:80]!r}")
    Counter.hit(reader)


def samples(reader: str) -> list[bytes]:
    if reader == "probe_envelope":
        return [PROBE_SAMPLE]
    return [Path(p).read_bytes() for p in R.BYTE_READERS[reader][1]]


ALL = sorted(R.BYTE_READERS)
JSONL_READERS = ["memory", "llm_transcripts", "legacy_observations", "legacy_pending", "legacy_state"]
JSON_READERS = ["checkpoints", "runs", "workers", "probe_envelope"]


# -- 1. truncation at every byte of every real sample file -------------------------------------------

def _cuts(data: bytes, reader: str) -> list[int]:
    """Every byte in `make fuzz`. Bounded run: every byte of files up to 2 KB; for larger files every byte of the
    first and last 256 bytes and (JSONL) within 3 bytes of every line break (where torn lines differ), a stride between."""
    n = len(data)
    if LONG or n <= 2048:
        return list(range(n + 1))
    stride = 4096 if reader == "session_store" else 97
    cuts = set(range(0, 256)) | set(range(max(0, n - 256), n + 1)) | set(range(0, n, stride))
    if reader in JSONL_READERS:
        pos = data.find(b"\n")
        while pos >= 0:
            cuts.update(range(max(0, pos - 3), min(n, pos + 4) + 1))
            pos = data.find(b"\n", pos + 1)
    return sorted(cuts)


@pytest.mark.parametrize("reader", [r for r in ALL])
def test_truncated_at_every_byte(scratch, reader):
    for data in samples(reader):
        for k in _cuts(data, reader):
            feed(scratch, reader, data[:k])
        if reader in JSONL_READERS:
            # A torn line later "completed" by another writer: every prefix of every line, terminated.
            step = 1 if LONG else 19
            for line in data.split(b"\n"):
                for k in range(0, len(line), step):
                    feed(scratch, reader, line[:k] + b"\n")


# -- 2. wrong JSON type (and absence) at every field of every record kind ----------------------------

def _context(parsed: list, i: int) -> list[int]:
    """Earlier lines the event at i interacts with (same id, forgotten ids, the open event); the whole file in
    `make fuzz`."""
    if LONG:
        return list(range(len(parsed)))
    me = parsed[i] if isinstance(parsed[i], dict) else {}
    ids = {me.get("id")} | set(me.get("forgotten_ids") or []) if isinstance(me.get("forgotten_ids", []), list) else {me.get("id")}
    out = []
    for j in range(i):
        v = parsed[j]
        if isinstance(v, dict) and (v.get("id") in ids or v.get("type") == "open"):
            out.append(j)
    return out + [i]


def _jsonl_variants(data: bytes, raws: list[str], depth: int):
    lines = data.split(b"\n")
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            parsed.append(None)
    for i, value in enumerate(parsed):
        if value is None:
            continue
        keep = _context(parsed, i)

        def with_line(new: bytes, i: int = i, keep: list[int] = keep) -> bytes:
            return b"\n".join((new if j == i else lines[j]) for j in keep) + b"\n"

        for path in paths_of(value, depth):
            for raw in raws:
                yield with_line(splice(value, path, raw).encode())
            yield with_line(delete(value, path).encode())
        for raw in RAW_EXTREMES:  # the whole line replaced by an extreme value
            yield with_line(raw.encode())


def _json_variants(data: bytes, raws: list[str], depth: int):
    value = json.loads(data)
    for path in paths_of(value, depth):
        for raw in raws:
            yield splice(value, path, raw, indent=2).encode()
        yield delete(value, path, indent=2).encode()
    for raw in RAW_EXTREMES:
        yield raw.encode()


@pytest.mark.parametrize("reader", JSONL_READERS + JSON_READERS)
def test_wrong_type_at_every_field(scratch, reader):
    n = 0
    for data in samples(reader):
        # Runs are large: their nested fields go to depth 2 by default (all depths in `make fuzz`).
        depth = FIELD_DEPTH if reader not in ("runs", "workers") or LONG else 2
        gen = _jsonl_variants if reader in JSONL_READERS else _json_variants
        for variant in gen(data, RAW_WRONG_TYPES, depth):
            feed(scratch, reader, variant)
            n += 1
    assert n > 20


@pytest.mark.parametrize("reader", JSONL_READERS + JSON_READERS)
def test_extreme_values_at_top_level_fields(scratch, reader):
    for data in samples(reader)[:2]:
        gen = _jsonl_variants if reader in JSONL_READERS else _json_variants
        for variant in gen(data, RAW_EXTREMES, 1):
            feed(scratch, reader, variant)


def test_skill_frontmatter_every_field(scratch):
    """YAML frontmatter: each key's value replaced by hostile YAML, plus NUL / BOM / CRLF / deep nesting."""
    hostile_yaml = ["", "null", "~", "[]", "{}", "[a, b]", "{a: 1}", "123", "1e400", str(2**70), "!!python/object:os.system x",
                    "&a [*a]", '"\\0"', "'x' 'y'", "|\n  block", "[" * 10_000 + "]" * 10_000, "x" * 200_000,
                    "*undefined", "&x a\nname: *x", "!!binary aGk=", "2026-01-01", "yes", "0x1F", ".nan"]
    heavy = {"[" * 10_000 + "]" * 10_000, "x" * 200_000}
    for n, data in enumerate(samples("skills")):
        text = data.decode("utf-8-sig")
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if ":" in line and not line.startswith((" ", "-")):
                key = line.split(":", 1)[0]
                for y in hostile_yaml:
                    if y in heavy and n and not LONG:
                        continue  # the slow ones on the first sample only, except in `make fuzz`
                    variant = "".join(lines[:i] + [f"{key}: {y}\n"] + lines[i + 1:])
                    feed(scratch, "skills", variant.encode())
                feed(scratch, "skills", "".join(lines[:i] + lines[i + 1:]).encode())
                feed(scratch, "skills", "".join(lines[:i] + [line, line] + lines[i + 1:]).encode())  # duplicate key
        for transform in (lambda b: b"\xef\xbb\xbf" + b, lambda b: b.replace(b"\n", b"\r\n"),
                          lambda b: b.replace(b"\n", b"\r"), lambda b: b.replace(b"---", b"---\x00"),
                          lambda b: b + b"\xff\xfe", lambda b: b"\xff" + b, lambda b: b * 50):
            feed(scratch, "skills", transform(data))
        sig = (SAMPLE / ".harn/skills/signed-review/SKILL.md.sig").read_bytes()
        for k in range(0, len(sig) + 1, 1 if LONG else 29):
            R.read_skill(scratch, data, sig[:k])
            check_problems(R.read_skill(scratch, data, sig[:k] + b"\x00{"), "sig")
            Counter.hit("skills")


def test_session_store_wrong_types(scratch, tmp_path):
    """Every column of every table set to a value of another type (SQLite is dynamically typed)."""
    src = SAMPLE / ".harn/session-store.sqlite"
    db = tmp_path / "probe.sqlite"
    db.write_bytes(src.read_bytes())
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table' and name not like '%fts%'")]
    cols = {t: [r[1] for r in conn.execute(f'pragma table_info("{t}")')] for t in tables}
    conn.close()
    values = [None, -1, 2**62, 1.5e308, "", "not json {", "[1]", '{"a":' * 2000, b"\xff\x00", "x" * 100_000]
    n = 0
    for table, columns in cols.items():
        for col in columns:
            for v in values:
                db.write_bytes(src.read_bytes())
                conn = sqlite3.connect(db)
                try:
                    conn.execute("PRAGMA ignore_check_constraints=1")
                    conn.execute(f'update "{table}" set "{col}" = ?', (v,))
                    conn.commit()
                except sqlite3.DatabaseError:
                    conn.close()
                    continue
                conn.close()
                feed(scratch, "session_store", db.read_bytes())
                n += 1
    assert n > 20


# -- 3. random mutations (hypothesis) ----------------------------------------------------------------

@st.composite
def mutated(draw, reader: str) -> bytes:
    base = draw(st.sampled_from(samples(reader)))
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["truncate", "insert", "delete", "flip", "dup", "crlf", "bom"]))
        pos = draw(st.integers(0, len(data)))
        if op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.sampled_from(BYTE_TOKENS) | st.binary(max_size=16))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 64))]
        elif op == "flip" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif op == "dup":
            data[pos:pos] = data[max(0, pos - 200):pos]
        elif op == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif op == "bom":
            data[0:0] = b"\xef\xbb\xbf"
    return bytes(data)


@pytest.mark.parametrize("reader", [r for r in ALL if r != "session_store"])
def test_random_mutations(scratch, reader):
    @FUZZ
    @given(data=mutated(reader))
    def run(data):
        feed(scratch, reader, data)

    run()


def test_random_mutations_session_store(scratch):
    @small(40)
    @given(data=mutated("session_store"))
    def run(data):
        feed(scratch, "session_store", data)

    run()


# -- 4. generated JSON events and records ------------------------------------------------------------

json_scalar = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30))
json_value = st.recursive(json_scalar, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                          max_leaves=12)
FIELD_NAMES = ["type", "id", "key", "value", "text", "tags", "stored_at", "forgotten_ids", "flags", "status", "scope",
               "provenance", "backend", "schema", "kind", "claim", "confidence", "evidence", "ref", "snippet",
               "asserted_at", "valid_until", "namespace", "proposal_id", "name", "support", "suppressed_until",
               "messages", "events", "assets", "role", "content", "blocks", "visibility", "metadata"]


def event_like(kind_values):
    return st.fixed_dictionaries(
        {"type": st.sampled_from(kind_values) | json_value},
        optional={n: json_value | st.sampled_from(["harn.fact.v1", "file_range", "observation", "pending", "state"])
                  for n in FIELD_NAMES if n != "type"})


def fact_like():
    ev = st.fixed_dictionaries({}, optional={"kind": st.sampled_from(["file_range", "tool_output", "x"]) | json_value,
                                             "ref": st.sampled_from(["src/a.py:1-2", "../../etc/passwd:1", "/etc/passwd:1-9",
                                                                     "src/a.py:0-99999999999999999999", "a:b:c"]) | json_value,
                                             "snippet": json_value})
    value = st.fixed_dictionaries({"schema": st.just("harn.fact.v1")}, optional={
        "kind": st.sampled_from(["claim", "observation", "decision", "constraint", "preference"]) | json_value,
        "claim": json_value, "confidence": json_value, "evidence": st.lists(ev, max_size=3) | json_value,
        "id": st.text(max_size=10) | json_value, "provenance": json_value, "asserted_at": json_value,
        "valid_until": json_value})
    return st.fixed_dictionaries({"type": st.just("store"), "id": st.text(min_size=1, max_size=6), "key": st.text(max_size=6),
                                  "value": value, "text": st.text(max_size=8), "tags": st.lists(st.text(max_size=6)),
                                  "stored_at": st.just("2026-01-01T00:00:00Z")})


def pattern_like():
    kinds = st.sampled_from(["observation", "pending", "state"])
    return kinds.flatmap(lambda k: st.fixed_dictionaries({
        "type": st.just("store"), "id": st.text(min_size=1, max_size=6), "key": st.just(f"pattern-learning:{k}"),
        "value": st.fixed_dictionaries({"schema": st.sampled_from([f"burin.pattern_learning.{k}.v1", "x"]),
                                        "kind": st.just(k)},
                                       optional={n: json_value for n in FIELD_NAMES if n not in ("schema", "kind")}),
        "text": st.just(""), "tags": st.sampled_from([["pattern-learning", k], [k], []]),
        "stored_at": st.just("2026-01-01T00:00:00Z")}))


def _lines(events) -> bytes:
    out = []
    for e in events:
        try:
            out.append(json.dumps(e, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except ValueError:
            continue
    return b"\n".join(out) + b"\n"


def test_generated_memory_events(scratch):
    @FUZZ
    @given(events=st.lists(event_like(["store", "forget", "update", "open"]) | fact_like() | pattern_like(), max_size=12))
    def run(events):
        feed(scratch, "memory", _lines(events))
        R.read_memory(scratch, _lines(events), ns="project/pattern-learning")

    run()


def test_generated_transcripts(scratch):
    msg = st.fixed_dictionaries({}, optional={n: json_value for n in FIELD_NAMES})
    transcript = st.fixed_dictionaries({}, optional={
        "id": json_value, "messages": st.lists(msg, max_size=4) | json_value, "events": st.lists(msg, max_size=4) | json_value,
        "assets": st.lists(msg, max_size=3) | json_value, "summary": json_value, "metadata": json_value,
        "state": json_value, "version": json_value})

    @FUZZ
    @given(value=transcript | json_value)
    def run(value):
        check_problems(R.read_transcript_value(scratch, value), "transcript")
        Counter.hit("transcripts")
        run_doc = {"_type": "run_record", "id": "run_fuzz", "status": "completed", "transcript": value,
                   "stages": [{"id": "s", "transcript": value}]}
        feed(scratch, "runs", json.dumps(run_doc).encode())

    run()


def test_generated_llm_lines(scratch):
    line = st.fixed_dictionaries({}, optional={n: json_value for n in
                                               ["type", "call_id", "iteration", "timestamp", "request", "response",
                                                "raw", "body", "status", "model", "usage", "error"]})

    @FUZZ
    @given(lines=st.lists(line, max_size=10))
    def run(lines):
        feed(scratch, "llm_transcripts", _lines(lines))

    run()


def test_generated_probe_envelopes(scratch):
    diag = st.fixed_dictionaries({}, optional={n: json_value for n in ["source", "severity", "code", "message", "span", "help"]})
    env = st.fixed_dictionaries({}, optional={
        "schemaVersion": json_value, "ok": json_value, "error": json_value, "warnings": json_value,
        "data": st.fixed_dictionaries({}, optional={
            "files": st.lists(st.fixed_dictionaries({}, optional={"path": json_value, "status": json_value,
                                                                  "diagnostics": st.lists(diag, max_size=3) | json_value}),
                              max_size=3) | json_value,
            "summary": json_value}) | json_value})

    @FUZZ
    @given(doc=env, prefix=st.sampled_from(["", "warning: x\n", "\x00", "{"]))
    def run(doc, prefix):
        feed(scratch, "probe_envelope", (prefix + json.dumps(doc)).encode("utf-8", "surrogatepass"))

    run()
