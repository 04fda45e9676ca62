"""Checkpoint files (.harn/checkpoints/<pipeline>.json), harn-formats §B."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harn_ls.formats import checkpoints as ck
from harn_ls.formats.harn_json import fingerprint, sha256_hex, stringify
from harn_ls.formats.problems import Severity
from tests.helpers.samples import SAMPLES  # noqa: E402
from tests.oracles import checkpoints as ckor

ID_VECTORS = SAMPLES / "id-vectors.json"

# §B.4, byte for byte (Harn writes no trailing newline)
EXAMPLE = """{
  "clean": {
    "rows": 1187,
    "source": "https://example.com/data.csv"
  },
  "fetch": "id,name\\n1,alpha\\n2,beta\\n",
  "prepare": {
    "fingerprint": "sha256:28234a10de87204dafa92e2492d8b2053d289357436d02eeabd5680586ac3f58",
    "schema": "harn.checkpoint_stage.keyed.v1",
    "value": {
      "ready": true
    }
  },
  "processed_ids": [
    101,
    102
  ],
  "upload": null
}"""

# non-ASCII content so that truncation can cut inside a multi-byte character
UNICODE_FILE = ck.render_checkpoint_json({
    "naïve": {"note": "café ☕ 🚀", "n": 1.5},
    "stage": {"fingerprint": "sha256:" + "a" * 64, "schema": ck.KEYED_SCHEMA, "value": ["ü", None]},
})


def _vectors() -> dict:
    if not ID_VECTORS.exists():
        pytest.skip(f"{ID_VECTORS} is missing (shared Harn test vectors)")
    return {v["id"]: v for v in json.loads(ID_VECTORS.read_text())["vectors"]}


def _parse(data: bytes | str, path: str = "/p/.harn/checkpoints/main.json") -> ck.CheckpointFile:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return ck.parse_checkpoint_bytes(data, ck.CheckpointFile(ck.pipeline_of_checkpoint_path(path), path, {}))


def _codes(cf: ck.CheckpointFile) -> list[str]:
    return [p.code for p in cf.problems]


# -- reading a good file -----------------------------------------------------------


def test_read_example_file(tmp_path: Path) -> None:
    path = tmp_path / "ingest.json"
    path.write_text(EXAMPLE, encoding="utf-8")
    cf = ck.read_checkpoint_file(str(path))
    assert cf.pipeline == "ingest"
    assert cf.path == str(path)
    assert cf.exists and not cf.retry and cf.problems == []
    assert cf.size == len(EXAMPLE.encode())
    assert cf.mtime == pytest.approx(os.stat(path).st_mtime)
    assert list(cf.entries) == ["clean", "fetch", "prepare", "processed_ids", "upload"]
    assert {k: e.line for k, e in cf.entries.items()} == {
        "clean": 2, "fetch": 6, "prepare": 7, "processed_ids": 14, "upload": 18}
    prepare = cf.entries["prepare"]
    assert prepare.keyed and prepare.value == {"ready": True}
    assert prepare.fingerprint == "sha256:28234a10de87204dafa92e2492d8b2053d289357436d02eeabd5680586ac3f58"
    assert cf.entries["fetch"].value == "id,name\n1,alpha\n2,beta\n"
    upload = cf.entries["upload"]
    assert upload.value is None and not upload.keyed and upload.fingerprint is None  # nil stage = completed
    assert cf.entries["clean"].value == {"rows": 1187, "source": "https://example.com/data.csv"}


def test_example_fingerprint_matches_spec_identity() -> None:
    identity = {"source_sha": "abc123", "lock_sha": "def456", "toolchain": "rust-1.90"}
    assert fingerprint(identity) == "sha256:28234a10de87204dafa92e2492d8b2053d289357436d02eeabd5680586ac3f58"


def test_missing_file_is_not_a_problem(tmp_path: Path) -> None:
    cf = ck.read_checkpoint_file(str(tmp_path / "gone.json"))
    assert not cf.exists and cf.entries == {} and cf.problems == [] and not cf.retry
    assert cf.pipeline == "gone"


def test_unreadable_path_is_a_problem(tmp_path: Path) -> None:
    d = tmp_path / "dir.json"
    d.mkdir()
    cf = ck.read_checkpoint_file(str(d))
    assert _codes(cf) == [ck.CODE_UNREADABLE]
    assert cf.entries == {}


def test_line_numbers_ignore_brackets_commas_and_quotes_inside_strings() -> None:
    text = (
        '{\n'
        '  "a{,": "x\\",{[ \\"b\\": 1",\n'
        '  "nested": {\n'
        '    "inner": "not top-level",\n'
        '    "list": [{"k": ","}, "]"]\n'
        '  },\n'
        '  "caf\\u00e9": 1,\n'
        '  "\\"quoted\\"": true,\n'
        '  "last": "}"\n'
        '}'
    )
    cf = _parse(text)
    assert cf.problems == []
    assert {k: e.line for k, e in cf.entries.items()} == {
        "a{,": 2, "nested": 3, "café": 7, '"quoted"': 8, "last": 9}


def test_compact_single_line_file_has_all_keys_on_line_1() -> None:
    cf = _parse('{"b":{"x":1},"a":[1,2],"c":"d"}')
    assert [(k, e.line) for k, e in cf.entries.items()] == [("b", 1), ("a", 1), ("c", 1)]


def test_duplicate_key_keeps_last_value_and_is_reported() -> None:
    cf = _parse('{\n  "a": 1,\n  "b": 2,\n  "a": 3\n}')
    assert cf.entries["a"].value == 3
    assert cf.entries["a"].line == 4
    (problem,) = cf.problems
    assert problem.code == ck.CODE_DUPLICATE_KEY and problem.line == 4
    assert "last value" in problem.message


# -- keyed records -------------------------------------------------------------------


def test_keyed_fingerprint_vectors() -> None:
    v = _vectors()["checkpoint-keyed-fingerprints"]["computed"]
    keyed1 = {"pin": "abc", "inputs": {"toolchain": "1.2", "lock": "def"}}
    keyed2 = {"inputs": {"lock": "def", "toolchain": "1.2"}, "pin": "abc"}
    keyed3 = {"pin": "advanced", "inputs": {"toolchain": "1.2", "lock": "def"}}
    pin_only = {"pin": "abc"}
    for name, identity in (("keyed1", keyed1), ("keyed2", keyed2), ("keyed3", keyed3), ("pin_only", pin_only)):
        assert stringify(identity) == v[name]["json_stringify"], name
        assert fingerprint(identity) == v[name]["fingerprint"], name
        assert "sha256:" + sha256_hex(v[name]["json_stringify"]) == v[name]["fingerprint"]
    assert fingerprint(keyed1) == fingerprint(keyed2)  # literal key order does not matter


def test_keyed_records_as_stored_by_harn_are_recognised() -> None:
    records = _vectors()["checkpoint-keyed-fingerprints"]["computed"]["records_as_stored"]
    text = ck.render_checkpoint_json({**records, "legacy_raw": 7})
    cf = _parse(text)
    assert cf.problems == []
    for name, record in records.items():
        entry = cf.entries[name]
        assert entry.keyed, name
        assert entry.fingerprint == record["fingerprint"]
        assert entry.value == record["value"]
    assert cf.entries["nil_keyed_step"].value is None  # cached nil is still a hit
    assert not cf.entries["legacy_raw"].keyed  # a raw value never satisfies a keyed stage


@pytest.mark.parametrize(
    "record, why",
    [
        # the conformance test's malformed record: right schema + fingerprint, no value
        ({"schema": ck.KEYED_SCHEMA, "fingerprint": "sha256:" + "f" * 64}, "no 'value' key"),
        ({"schema": "harn.checkpoint_stage.keyed.v2", "fingerprint": "sha256:" + "f" * 64, "value": 1}, "schema"),
        ({"schema": ck.KEYED_SCHEMA, "fingerprint": "sha256:" + "F" * 64, "value": 1}, "fingerprint"),
        ({"schema": ck.KEYED_SCHEMA, "fingerprint": "sha256:abc", "value": 1}, "fingerprint"),
        ({"schema": ck.KEYED_SCHEMA, "fingerprint": 5, "value": 1}, "fingerprint"),
        ({"schema": ck.KEYED_SCHEMA, "value": 1}, "fingerprint"),
        ({"schema": None, "fingerprint": "sha256:" + "f" * 64, "value": 1}, "schema"),
    ],
)
def test_malformed_keyed_record_warns_that_harn_reruns(record: dict, why: str) -> None:
    cf = _parse(ck.render_checkpoint_json({"ok": 1, "stage": record}))
    entry = cf.entries["stage"]
    assert not entry.keyed and entry.fingerprint is None and entry.value == record
    (problem,) = cf.problems
    assert problem.code == ck.CODE_BAD_KEYED
    assert problem.severity == Severity.WARNING
    assert problem.line == 3
    assert "Harn will rerun this stage" in problem.message
    assert why in problem.message


@pytest.mark.parametrize("value", [{"value": 1}, {"fingerprint": "x"}, {"schema_like": 1}, [1], "sha256:" + "0" * 64])
def test_plain_values_that_do_not_look_keyed_are_fine(value) -> None:
    cf = _parse(ck.render_checkpoint_json({"stage": value}))
    assert cf.problems == [] and not cf.entries["stage"].keyed


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"   \n", b"\n"])
def test_empty_file_means_retry(data: bytes) -> None:
    cf = _parse(data)
    assert cf.retry and cf.entries == {}
    (problem,) = cf.problems
    assert problem.code == ck.CODE_UNPARSEABLE
    assert "treats an unparseable checkpoint file as empty" in problem.message
    assert "next write replaces it" in problem.message


@pytest.mark.parametrize("text", [EXAMPLE, UNICODE_FILE])
def test_every_truncation_prefix_is_a_retry(text: str) -> None:
    data = text.encode("utf-8")
    for cut in range(len(data)):
        cf = _parse(data[:cut])
        assert cf.retry, cut
        assert cf.entries == {}, cut
        assert _codes(cf) == [ck.CODE_UNPARSEABLE], cut
        assert "Harn silently treats" in cf.problems[0].message
    full = _parse(data)
    assert not full.retry and full.problems == [] and full.entries


def test_truncation_inside_a_multibyte_character_is_a_retry_not_invalid_utf8() -> None:
    data = UNICODE_FILE.encode("utf-8")
    cut = data.index("🚀".encode()) + 2
    cf = _parse(data[:cut])
    assert cf.retry and _codes(cf) == [ck.CODE_UNPARSEABLE]


def test_invalid_utf8_is_reported_with_its_line() -> None:
    data = b'{\n  "a": 1,\n  "b": "\xff\xfe"\n}'
    cf = _parse(data)
    assert not cf.retry and cf.entries == {}
    (problem,) = cf.problems
    assert problem.code == ck.CODE_INVALID_UTF8
    assert problem.line == 3
    assert problem.severity == Severity.ERROR
    assert "treats it as empty" in problem.message


@pytest.mark.parametrize("text", ["[1, 2]", "null", '"text"', "5", "true"])
def test_not_an_object(text: str) -> None:
    cf = _parse(text)
    assert not cf.retry and cf.entries == {}
    assert _codes(cf) == [ck.CODE_NOT_OBJECT]
    assert "treats it as empty" in cf.problems[0].message


@pytest.mark.parametrize("text", ['{"a": NaN}', '\ufeff{"a": 1}', '{"a": 1} x', "{'a': 1}", '{"a": "\\ud800"}'])
def test_json_that_serde_rejects_is_unparseable(text: str) -> None:
    cf = _parse(text)
    assert _codes(cf) == [ck.CODE_UNPARSEABLE] and cf.entries == {}


def test_nesting_deeper_than_serde_allows() -> None:
    ok = '{"a": ' + "[" * 126 + "]" * 126 + "}"  # 127 levels: serde_json still reads it
    assert _parse(ok).problems == []
    deep = '{"a": ' + "[" * 127 + "]" * 127 + "}"
    cf = _parse(deep)
    assert _codes(cf) == [ck.CODE_TOO_DEEP]
    assert "treats the file as empty" in cf.problems[0].message


# -- writing ------------------------------------------------------------------------------


def test_render_reproduces_example_bytes() -> None:
    assert ck.render_checkpoint_json(json.loads(EXAMPLE)) == EXAMPLE
    # insertion order does not matter: keys are sorted at every level
    shuffled = {"upload": None, "processed_ids": [101, 102], "prepare": {"value": {"ready": True},
                "schema": ck.KEYED_SCHEMA, "fingerprint": json.loads(EXAMPLE)["prepare"]["fingerprint"]},
                "fetch": "id,name\n1,alpha\n2,beta\n", "clean": {"source": "https://example.com/data.csv", "rows": 1187}}
    assert ck.render_checkpoint_json(shuffled) == EXAMPLE


def test_render_scalars_like_serde() -> None:
    text = ck.render_checkpoint_json({
        "f": [1.0, 0.1, 1e-7, 1e16, -0.0, 2.5e-5, float("nan")],
        "s": "é ☕ \u0001 \b \f \x7f \"q\" \\",
        "empty": {"d": {}, "l": []},
        "big": 2**70,
        "i": -3,
        "obj": object(),
        3: "int key",
    })
    assert text == (
        '{\n'
        '  "3": "int key",\n'
        '  "big": 1.1805916207174113e21,\n'
        '  "empty": {\n'
        '    "d": {},\n'
        '    "l": []\n'
        '  },\n'
        '  "f": [\n'
        '    1.0,\n'
        '    0.1,\n'
        '    1e-7,\n'
        '    1e16,\n'
        '    -0.0,\n'
        '    0.000025,\n'
        '    null\n'
        '  ],\n'
        '  "i": -3,\n'
        '  "obj": null,\n'
        '  "s": "é ☕ \\u0001 \\b \\f \x7f \\"q\\" \\\\"\n'
        '}'
    )
    assert not text.endswith("\n")


def test_render_empty_and_round_trip() -> None:
    assert ck.render_checkpoint_json({}) == "{}"
    value = json.loads(UNICODE_FILE)
    assert ck.render_checkpoint_json(value) == UNICODE_FILE
    assert "☕" in UNICODE_FILE  # non-ASCII stays raw


def test_without_key_rewrites_like_checkpoint_delete() -> None:
    out = ckor.without_key(EXAMPLE, "prepare")
    expected = json.loads(EXAMPLE)
    del expected["prepare"]
    assert out == ck.render_checkpoint_json(expected)
    assert '"prepare"' not in out
    assert ckor.without_key(EXAMPLE, "absent") == EXAMPLE  # Harn re-saves; same bytes


def test_without_key_keeps_nested_order_and_sorts_top_level() -> None:
    text = '{"z": {"b": 1, "a": 2}, "gone": 1, "a": 0}'
    assert ckor.without_key(text, "gone") == '{\n  "a": 0,\n  "z": {\n    "b": 1,\n    "a": 2\n  }\n}'


@pytest.mark.parametrize("text", ["", "{", "[1]", "null"])
def test_without_key_refuses_unparseable_text(text: str) -> None:
    with pytest.raises(ValueError):
        ckor.without_key(text, "a")


# -- names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script, name",
    [
        ("main.harn", "main"),
        ("pipelines/ingest.harn", "ingest"),
        ("/abs/dir/deploy.harn", "deploy"),
        ("a.b.harn", "a.b"),
        ("noext", "noext"),
        (".harn", ".harn"),
        ("a.", "a"),
        ("main.harn/", "main"),
        ("", "default"),
        (".", "default"),
        ("..", "default"),
        ("a/..", "default"),
        ("/", "default"),
        ("..harn", "default"),
        ("...harn", "default"),
    ],
)
def test_pipeline_name_for_script(script: str, name: str) -> None:
    assert ckor.pipeline_name_for_script(script) == name


def test_pipeline_of_checkpoint_path() -> None:
    assert ck.pipeline_of_checkpoint_path("/p/.harn/checkpoints/my.pipe.json") == "my.pipe"
    assert ck.pipeline_of_checkpoint_path("/p/.harn/checkpoints/orchestrator.json") == "orchestrator"
