"""SKILL.md parsing, discovery and signatures, driven by harn-samples/skill-vectors.json."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harn_ls.formats import skills as sk
from harn_ls.formats.paths import ProjectPaths, SkillLayerRoot, resolve
from harn_ls.formats.problems import Severity
from tests.helpers.samples import SAMPLES  # noqa: E402

VECTORS_PATH = SAMPLES / "skill-vectors.json"

pytestmark = pytest.mark.skipif(not VECTORS_PATH.is_file(), reason="harn-samples not available")


def _vectors() -> dict:
    if not VECTORS_PATH.is_file():
        return {"fixtures": [], "unit_tests": []}
    return json.loads(VECTORS_PATH.read_text(encoding="utf-8"))


VECTORS = _vectors()
FIXTURES = VECTORS["fixtures"]
UNIT = {entry["id"]: entry for entry in VECTORS["unit_tests"]}


def unit(vector_id: str) -> dict:
    return UNIT[vector_id]


# --------------------------------------------------------------------------
# helpers


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        write(root / rel, text)


class Key:
    def __init__(self) -> None:
        self.private = Ed25519PrivateKey.generate()
        public = self.private.public_key()
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.fingerprint = hashlib.sha256(raw).hexdigest()
        self.pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def trust(self, directory: Path) -> None:
        write(directory / f"{self.fingerprint}.pub", self.pem)

    def sign(self, skill: Path, fingerprint: str | None = None) -> Path:
        import base64

        data = skill.read_bytes()
        envelope = {
            "schema": sk.SIG_SCHEMA,
            "signed_at": "2026-04-20T01:53:11.070643Z",
            "signer_fingerprint": fingerprint or self.fingerprint,
            "ed25519_sig_base64": base64.b64encode(self.private.sign(data)).decode(),
            "skill_sha256": hashlib.sha256(data).hexdigest(),
        }
        sig = Path(str(skill) + ".sig")
        sig.write_text(json.dumps(envelope, indent=2), encoding="utf-8")  # serde to_string_pretty layout
        return sig


def make_paths(project: Path, roots: list, home: Path | None = None) -> ProjectPaths:
    home = home or project / "_home"
    return ProjectPaths(
        project_root=str(project),
        state_root=str(project / ".harn"),
        run_root=str(project / ".harn-runs"),
        memory_root=str(project / ".harn" / "memory"),
        pattern_memory_root=str(project / ".harn" / "memory"),
        skill_roots=tuple(roots),
        trusted_signers_dir=str(home / ".harn" / "trusted-signers"),
    )


def codes(problems) -> list[str]:
    return [p.code for p in problems]


# --------------------------------------------------------------------------
# fixtures from Harn (every entry of skill-vectors.json "fixtures")


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f["id"] for f in FIXTURES])
def test_fixture_bytes_split_and_parse(fixture):
    path = SAMPLES / fixture["file"]
    data = path.read_bytes()
    assert len(data) == fixture["bytes"]
    assert hashlib.sha256(data).hexdigest() == fixture["sha256"]

    computed = fixture["computed"]
    frontmatter, body = sk.split_frontmatter(data.decode("utf-8"))
    assert frontmatter == computed["frontmatter_yaml"]
    assert body == computed["body"]

    fields, unknown, errors = sk.parse_frontmatter(frontmatter)
    expected = computed["parse"]
    if expected["ok"]:
        assert errors == []
        assert fields == expected["manifest"]
        assert unknown == expected["unknown_fields"]
    else:
        assert expected["error"] in errors
        assert set(expected["unknown_fields_seen_before_error"]) <= set(unknown)

    skill = sk.parse_skill_file(str(path), "project")
    assert skill.sha256 == fixture["sha256"]
    assert skill.body == computed["body"]
    assert os.path.basename(skill.directory) == computed["dir_name_fallback"]
    assert skill.loadable is expected["ok"]
    if "resolved_name" in computed:
        assert skill.name == computed["resolved_name"]
        assert skill.id == computed["resolved_name"]
    if not expected["ok"]:
        assert sk.CODE_MISSING_SHORT in codes(skill.problems)
        missing = next(p for p in skill.problems if p.code == sk.CODE_MISSING_SHORT)
        assert missing.severity is Severity.ERROR

    asserted = fixture.get("asserted", {})
    for key in ("name", "short", "description", "when_to_use", "model", "effort", "argument_hint",
                "allowed_tools", "user_invocable"):
        if key in asserted:
            assert fields[key] == asserted[key], key
    if "len(paths)" in asserted:
        assert len(fields["paths"]) == asserted["len(paths)"]
    if "source (layer)" in asserted:
        assert skill.layer == asserted["source (layer)"]


def test_fixture_skill_fs_basic_project_has_two_skills(tmp_path):
    src = SAMPLES / "skills/conformance/tests/integration/skill_fs_basic"
    project = tmp_path / "proj"
    shutil.copytree(src, project)
    inventory = sk.discover_skills(resolve(str(project), env={}, home=str(tmp_path / "home")))
    project_skills = [s for s in inventory.skills if s.layer == "project"]
    assert sorted(s.id for s in project_skills) == ["deploy", "review"]
    assert all(s.loadable for s in project_skills)
    deploy = next(s for s in project_skills if s.id == "deploy")
    assert deploy.short == "Deploy the application when the user asks for a release"
    assert deploy.when_to_use == "User says deploy / ship / release"
    assert inventory.shadowed == []


# --------------------------------------------------------------------------
# split_frontmatter unit vectors


@pytest.mark.parametrize("vector_id", ["fm-split-basic", "fm-split-none", "fm-split-bom", "fm-split-unterminated",
                                       "fm-split-crlf"])
def test_split_vectors(vector_id):
    vector = unit(vector_id)
    frontmatter, body = sk.split_frontmatter(vector["input"])
    assert (frontmatter or "") == vector["asserted"]["frontmatter"]
    assert body == vector["asserted"]["body"]


def test_split_none_vs_empty():
    assert sk.split_frontmatter("# body\n") == (None, "# body\n")
    assert sk.split_frontmatter("---\nname: x\n") == (None, "---\nname: x\n")
    assert sk.split_frontmatter("---\n---\nbody") == ("", "body")
    assert sk.split_frontmatter("\n  \n---\nshort: x\n  ---  \nbody") == ("short: x\n", "body")
    assert sk.split_frontmatter("---\nshort: x\n---") == ("short: x\n", "")
    assert sk.split_frontmatter("") == (None, "")
    # Only "\n" breaks lines (like Rust's str::lines), not U+2028 or \x0c.
    assert sk.split_frontmatter("---\nshort: a\u2028---\n---\nb") == ("short: a\u2028---\n", "b")


def test_split_crlf_parses_bool():
    vector = unit("fm-split-crlf")
    frontmatter, _ = sk.split_frontmatter(vector["input"])
    fields, unknown, errors = sk.parse_frontmatter(frontmatter)
    assert errors == []
    assert fields["disable_model_invocation"] is vector["asserted"]["parsed.disable_model_invocation"]


# --------------------------------------------------------------------------
# parse_frontmatter unit vectors


def test_parse_canonical():
    vector = unit("fm-parse-canonical")
    fields, unknown, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert errors == []
    expected = dict(vector["asserted"])
    assert unknown == expected.pop("unknown_fields")
    for key, value in expected.items():
        assert fields[key] == value, key


def test_parse_unknown_fields():
    vector = unit("fm-unknown-fields")
    fields, unknown, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert (errors == []) is vector["asserted"]["ok"]
    assert fields["name"] == vector["asserted"]["name"]
    assert unknown == vector["asserted"]["unknown_fields"]


@pytest.mark.parametrize("case", unit("fm-hooks")["cases"] if UNIT else [])
def test_parse_hooks(case):
    fields, _, errors = sk.parse_frontmatter(case["input_yaml"])
    assert errors == []
    hooks = fields["hooks"]
    for key, value in case["asserted"].items():
        if key == "hooks.len":
            assert len(hooks) == value
        else:
            assert hooks[key.split(".", 1)[1]] == value  # event names keep their hyphens


def test_parse_hooks_list_roundtrip():
    vector = unit("fm-hooks-list-roundtrip")
    fields, unknown, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert errors == []
    assert fields["name"] == vector["asserted"]["name"]
    assert fields["disable_model_invocation"] is vector["asserted"]["disable_model_invocation"]
    assert fields["hooks"]["on-activate"] == vector["asserted"]["hooks.on-activate"]
    assert unknown == vector["asserted"]["unknown_fields"]


def test_parse_hooks_drops_incomplete_list_entries():
    fields, _, errors = sk.parse_frontmatter(
        "short: s\nhooks:\n  - event: a\n  - run: x\n  - event: 3\n    name: b\n    command: c\n  - just-text\n"
    )
    assert errors == []
    assert fields["hooks"] == {}


def test_parse_non_mapping():
    vector = unit("fm-non-mapping")
    _, _, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert errors and vector["asserted"]["error_contains"] in errors[0]
    assert errors[0] == vector["computed"]["error"]


def test_parse_missing_short():
    vector = unit("fm-missing-short")
    _, _, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert any(vector["asserted"]["error_contains"] in e for e in errors)
    assert vector["computed"]["error"] in errors
    # Blank short counts as missing (Harn trims).
    assert sk.MISSING_SHORT_MESSAGE in sk.parse_frontmatter("short: '  '\n")[2]


def test_parse_empty_and_comment_only_frontmatter_need_no_short():
    assert sk.parse_frontmatter("") == ({}, [], [])
    assert sk.parse_frontmatter("  \n\n") == ({}, [], [])
    assert sk.parse_frontmatter("# just a comment\n") == ({}, [], [])


def test_parse_targets():
    vector = unit("fm-targets")
    fields, unknown, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert errors == []
    assert fields["targets"] == vector["asserted"]["targets"]
    assert unknown == vector["asserted"]["unknown_fields"]


def test_parse_mcp_servers():
    vector = unit("fm-mcp-servers")
    fields, unknown, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert errors == []
    assert len(fields["mcp"]) == vector["asserted"]["mcp.len"]
    assert fields["mcp"][0]["name"] == vector["asserted"]["mcp[0].name"]
    assert fields["mcp"][0]["command"] == vector["asserted"]["mcp[0].command"]
    assert unknown == vector["asserted"]["unknown_fields"]


def test_parse_non_string_keys():
    vector = unit("fm-non-string-keys")
    fields, unknown, errors = sk.parse_frontmatter(vector["input_yaml"])
    assert errors == []
    assert fields["name"] == vector["asserted"]["name"]
    assert fields["short"] == vector["asserted"]["short"]
    assert len(unknown) == vector["asserted"]["unknown_fields.len"]
    for text in vector["asserted"]["some unknown contains"]:
        assert any(text in u for u in unknown)


def test_parse_type_errors_are_errors():
    _, _, errors = sk.parse_frontmatter("short: s\ndescription: 12\nallowed-tools: bash\nuser-invocable: 1\n")
    assert len(errors) == 3
    assert all("doesn't match the expected field shapes" in e for e in errors)
    _, _, errors = sk.parse_frontmatter("short: s\npaths: [a, 2]\nhooks: {on-x: [1]}\n")
    assert len(errors) == 2
    # short with the wrong type reports the type, not also "missing".
    _, _, errors = sk.parse_frontmatter("short: 5\n")
    assert len(errors) == 1 and "`short` must be a string" in errors[0]


def test_parse_null_values_follow_serde():
    fields, _, errors = sk.parse_frontmatter("short: s\nwhen-to-use:\nallowed-tools:\nhooks:\n")
    assert errors == []
    assert fields["when_to_use"] is None and fields["allowed_tools"] == [] and fields["hooks"] == {}
    _, _, errors = sk.parse_frontmatter("short: s\ndescription:\n")
    assert len(errors) == 1 and "`description` must be a string, got null" in errors[0]


def test_parse_uses_yaml_12_scalars_like_serde_yaml():
    fields, _, errors = sk.parse_frontmatter(
        "short: s\ndescription: no\nmodel: 2024-01-01\nargument-hint: on\nname: 0777x\n"
    )
    assert errors == []
    assert fields["description"] == "no" and fields["model"] == "2024-01-01" and fields["argument_hint"] == "on"
    _, _, errors = sk.parse_frontmatter("short: s\nuser-invocable: yes\n")
    assert len(errors) == 1  # `yes` is a string in YAML 1.2, so not a bool
    fields, unknown, _ = sk.parse_frontmatter("short: s\n<<: {a: 1}\n0x1F: hex\n")
    assert "<<" in unknown and "0x1F" in unknown


def test_parse_duplicates():
    _, _, errors = sk.parse_frontmatter("short: s\nshort: t\n")
    assert any("duplicate key `short`" in e for e in errors)
    fields, _, errors = sk.parse_frontmatter("short: s\nwhen-to-use: a\nwhen_to_use: b\n")
    assert errors == [] and fields["when_to_use"] == "b"


def test_parse_yaml_syntax_error_has_line(tmp_path):
    skill_md = write(tmp_path / "s" / "bad" / "SKILL.md", "\n\n---\nshort: ok\nname: [unclosed\n---\nbody\n")
    skill = sk.parse_skill_file(str(skill_md), "project")
    yaml_problems = [p for p in skill.problems if p.code == sk.CODE_YAML]
    assert yaml_problems and yaml_problems[0].severity is Severity.ERROR
    # File lines: 1-2 blank, 3 `---`, 4 short, 5 name: [unclosed, 6 `---`.
    assert 5 <= yaml_problems[0].line <= 6
    assert not skill.loadable


# --------------------------------------------------------------------------
# hostile YAML


def test_yaml_bomb_is_refused_fast(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    text = "---\nshort: bomb\n" + "\n".join(lines) + "\n---\nbody\n"
    skill_md = write(tmp_path / "s" / "bomb" / "SKILL.md", text)
    start = time.thread_time()  # this thread's CPU time: the work itself, whatever else the machine runs
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert time.thread_time() - start < 1.0
    assert sk.CODE_YAML_LIMIT in codes(skill.problems)
    assert not skill.loadable


def test_yaml_recursive_alias_and_deep_nesting_are_refused():
    assert "refers to itself" in sk.parse_frontmatter("short: s\nk: &a [*a]\n")[2][0]
    start = time.thread_time()  # this thread's CPU time: the work itself, whatever else the machine runs
    errors = sk.parse_frontmatter("short: s\nk: " + "[" * 500_000)[2]
    assert time.thread_time() - start < 1.0
    assert "nests deeper" in errors[0]


def test_yaml_unsafe_tags_are_rejected():
    _, _, errors = sk.parse_frontmatter("short: s\nmodel: !!python/object/apply:os.system ['true']\n")
    assert errors and "invalid SKILL.md YAML" in errors[0]


@pytest.mark.parametrize("yaml_text", [
    "short: s\nmodel: !!int abc\n",
    "short: s\nmodel: !!float abc\n",
    "short: s\nmodel: !!timestamp nope\n",
    "short: s\nmodel: !!binary '!!!'\n",
    "short: s\nmodel: " + "9" * 5000 + "\n",
    "short: s\nhooks: {[a]: b}\n",
    "short: s\nmodel: !custom thing\n",
    "!!set {short: s}\n",
    "short: s\x00\n",
    "short: s\n---\nsecond: doc\n",
])
def test_hostile_values_become_errors_not_exceptions(yaml_text, tmp_path):
    _, _, errors = sk.parse_frontmatter(yaml_text)
    assert errors
    if "\n---\n" in yaml_text:
        return  # in a file that line would close the frontmatter
    skill_md = write(tmp_path / "s" / "x" / "SKILL.md", "---\n" + yaml_text + "---\nbody\n")
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert not skill.loadable and skill.problems


def test_file_over_1mb_is_not_parsed(tmp_path):
    skill_md = write(tmp_path / "s" / "big" / "SKILL.md", "---\nshort: big\n---\n" + "x" * (1024 * 1024))
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert codes(skill.problems) == [sk.CODE_TOO_LARGE]
    assert skill.body == "" and not skill.loadable


def test_invalid_utf8_and_unreadable(tmp_path):
    skill_md = write(tmp_path / "s" / "bin" / "SKILL.md", b"---\nshort: x\n---\nok\n\xff\xfe\n")
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert codes(skill.problems) == [sk.CODE_INVALID_UTF8]
    assert skill.problems[0].line == 5
    assert skill.sha256 == hashlib.sha256(skill_md.read_bytes()).hexdigest()
    assert not skill.loadable

    (tmp_path / "s" / "dir" / "SKILL.md").mkdir(parents=True)
    skill = sk.parse_skill_file(str(tmp_path / "s" / "dir" / "SKILL.md"), "project")
    assert codes(skill.problems) == [sk.CODE_UNREADABLE]

    skill = sk.parse_skill_file(str(tmp_path / "s" / "gone" / "SKILL.md"), "project")
    assert codes(skill.problems) == [sk.CODE_UNREADABLE] and skill.name == "gone"


def test_bom_and_crlf_file(tmp_path):
    text = "\ufeff\r\n---\r\nname: crlf\r\nshort: Windows card\r\nuser-invocable: true\r\nbogus: 1\r\n---\r\n# Body\r\n"
    skill_md = write(tmp_path / "s" / "win" / "SKILL.md", text)
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert skill.loadable
    assert skill.name == "crlf" and skill.short == "Windows card"
    assert skill.fields["user_invocable"] is True
    assert skill.body == "# Body\r\n"
    assert skill.body_line == 8
    unknown = [p for p in skill.problems if p.code == sk.CODE_UNKNOWN_FIELD]
    assert len(unknown) == 1 and unknown[0].line == 6 and unknown[0].severity is Severity.WARNING


def test_no_frontmatter_is_loadable_with_info(tmp_path):
    skill_md = write(tmp_path / "s" / "plain" / "SKILL.md", "# Just a body\n")
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert skill.loadable and skill.name == "plain" and skill.short == ""
    assert codes(skill.problems) == [sk.CODE_NO_FRONTMATTER]


# --------------------------------------------------------------------------
# pattern-learning roots (claude / burin)


def test_learned_skill_without_short_in_claude_layer_is_info(tmp_path):
    text = sk.render_learned_skill("learned-x", "Desc", "When", "prompt_cluster", "# X\n")
    skill_md = write(tmp_path / ".claude" / "skills" / "learned-x" / "SKILL.md", text)
    skill = sk.parse_skill_file(str(skill_md), "claude")
    assert skill.loadable
    assert skill.signature is None
    assert [p.severity for p in skill.problems] == [Severity.INFO]
    assert "Harn's own skill loader would reject this file if it were in a Harn skill layer" in skill.problems[0].message
    assert sorted(skill.unknown_fields) == ["category", "tags"]
    assert skill.description == "Desc" and skill.when_to_use == "When"

    same = sk.parse_skill_file(str(skill_md), "project")
    assert not same.loadable
    assert [p.code for p in same.problems if p.severity is Severity.ERROR] == [sk.CODE_MISSING_SHORT]


# --------------------------------------------------------------------------
# filesystem sources (unit vectors)


def _single_root_paths(tmp_path: Path, root: Path, layer: str = "project", namespace: str | None = None):
    layer_root = SimpleNamespace(layer=layer, path=str(root), namespace=namespace)
    return make_paths(tmp_path, [layer_root])


def test_fs_source_one_level(tmp_path):
    vector = unit("fs-source-one-level")
    root = tmp_path / ".harn" / "skills"
    write_files(root, vector["files"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root))
    assert len(inventory.skills) == vector["asserted"]["listed"]
    assert [s.name for s in inventory.skills] == vector["asserted"]["names"]
    deploy = inventory.get("deploy")
    assert deploy.short == vector["asserted"]["fetch(deploy).short"]
    assert deploy.description == vector["asserted"]["fetch(deploy).description"]
    assert deploy.body == vector["asserted"]["fetch(deploy).body"]


def test_fs_source_root_single(tmp_path):
    vector = unit("fs-source-root-single")
    root = tmp_path / "solo-root"
    write_files(root, vector["files"])
    write(root / "nested" / "SKILL.md", "---\nshort: ignored when the root is itself a skill\n---\n")
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root, "env"))
    assert len(inventory.skills) == vector["asserted"]["listed"]
    assert inventory.skills[0].name == vector["asserted"]["name"]


def test_fs_source_name_fallback(tmp_path):
    vector = unit("fs-source-name-fallback")
    root = tmp_path / ".harn" / "skills"
    write_files(root, vector["files"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root))
    assert inventory.get("nameless").name == vector["asserted"]["fetch(nameless).name"]


def test_fs_source_namespace(tmp_path):
    vector = unit("fs-source-namespace")
    root = tmp_path / ".harn" / "skills"
    write_files(root, vector["files"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root, namespace=vector["namespace"]))
    assert inventory.skills[0].id == vector["asserted"]["listed[0].id"]
    assert inventory.get("acme/ops/deploy") is not None
    assert inventory.get("deploy") is None and inventory.get("other/deploy") is None
    skill = sk.parse_skill_file(str(root / "deploy" / "SKILL.md"), "project", str(root), vector["namespace"])
    assert skill.id == "acme/ops/deploy" and skill.namespace == "acme/ops"


def test_fs_source_missing_root(tmp_path):
    vector = unit("fs-source-missing-root")
    inventory = sk.discover_skills(_single_root_paths(tmp_path, tmp_path / "nope"))
    assert inventory.skills == vector["asserted"]["list of a non-existent root"]
    assert inventory.problems == [] and inventory.get("nope") is None
    # A whole project without any skill roots is fine too.
    inventory = sk.discover_skills(resolve(str(tmp_path), env={}, home=str(tmp_path / "home")))
    assert inventory.skills == [] and inventory.shadowed == [] and inventory.problems == []


def test_fs_source_requires_short(tmp_path):
    vector = unit("fs-source-requires-short")
    root = tmp_path / ".harn" / "skills"
    write_files(root, vector["files"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root))
    loadable = [s for s in inventory.skills if s.loadable]
    assert len(loadable) == vector["asserted"]["listed"]
    broken = inventory.skills[0]
    assert broken.name == "broken" and not broken.loadable
    assert any(vector["asserted"]["fetch(broken) error contains"] in p.message for p in broken.problems)


def test_loader_registry_entry_and_unknown_field_warning(tmp_path):
    vector = unit("loader-registry-entry")
    root = tmp_path / "a" / "skills"
    write_files(root, vector["files"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root, "cli"))
    assert len(inventory.skills) == vector["asserted"]["winners"]
    assert inventory.skills[0].short == vector["asserted"]["entry.short"]
    assert [p for p in inventory.problems if p.severity is not Severity.INFO] == []

    vector = unit("loader-unknown-field-warning")
    root = tmp_path / "b" / "skills"
    write_files(root, vector["files"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root, "cli"))
    assert len(inventory.skills) == vector["asserted"]["winners"]
    assert any(vector["asserted"]["some loader warning contains"] in p.message and p.severity is Severity.WARNING
               for p in inventory.problems)


# --------------------------------------------------------------------------
# provenance (§F.3)


def _skill_file(tmp_path: Path, text: str) -> Path:
    return write(tmp_path / "skill" / "SKILL.md", text)


def test_prov_roundtrip(tmp_path):
    vector = unit("prov-roundtrip")
    skill = _skill_file(tmp_path, vector["skill_bytes"])
    key = Key()
    sig = key.sign(skill)
    key.trust(tmp_path / "trusted")
    status = sk.verify_signature(skill.read_bytes(), str(sig), str(tmp_path / "trusted"), [])
    assert status.status == vector["asserted"]["status"] == sk.STATUS_VERIFIED
    assert status.signer_fingerprint == key.fingerprint
    assert status.signed and status.trusted and status.error is None
    assert status.signed_at == "2026-04-20T01:53:11.070643Z"


def test_prov_tampered(tmp_path):
    vector = unit("prov-tampered")
    skill = _skill_file(tmp_path, vector["skill_bytes_signed"])
    key = Key()
    sig = key.sign(skill)
    key.trust(tmp_path / "trusted")
    skill.write_text(vector["skill_bytes_after"])
    status = sk.verify_signature(skill.read_bytes(), str(sig), str(tmp_path / "trusted"), [])
    assert status.status == vector["asserted"]["status"]
    assert "modified after signing" in status.error
    assert status.signer_fingerprint == key.fingerprint and not status.signed


def test_prov_wrong_key(tmp_path):
    vector = unit("prov-wrong-key")
    skill = _skill_file(tmp_path, "---\nname: deploy\n---\nship it\n")
    signer, trusted = Key(), Key()
    sig = signer.sign(skill, fingerprint=trusted.fingerprint)
    trusted.trust(tmp_path / "trusted")
    status = sk.verify_signature(skill.read_bytes(), str(sig), str(tmp_path / "trusted"), [])
    assert status.status == vector["asserted"]["status"]
    assert "Ed25519" in status.error


def test_prov_missing_signer(tmp_path):
    vector = unit("prov-missing-signer")
    skill = _skill_file(tmp_path, "---\nname: deploy\n---\nship it\n")
    sig = Key().sign(skill)
    status = sk.verify_signature(skill.read_bytes(), str(sig), str(tmp_path / "trusted"), [])
    assert status.status == vector["asserted"]["status"]
    assert status.signed is vector["asserted"]["signed"] and status.trusted is vector["asserted"]["trusted"]
    status = sk.verify_signature(skill.read_bytes(), str(sig), None, [])
    assert status.status == sk.STATUS_MISSING_SIGNER


def test_prov_allowed_signers(tmp_path):
    vector = unit("prov-allowed-signers")
    skill = _skill_file(tmp_path, "---\nname: deploy\n---\nship it\n")
    key = Key()
    sig = key.sign(skill)
    key.trust(tmp_path / "trusted")
    status = sk.verify_signature(skill.read_bytes(), str(sig), str(tmp_path / "trusted"), ["not-the-signer"])
    assert status.status == vector["asserted"]["status"]
    status = sk.verify_signature(skill.read_bytes(), str(sig), str(tmp_path / "trusted"), [key.fingerprint])
    assert status.status == sk.STATUS_VERIFIED


def test_prov_status_flags_for_broken_envelopes(tmp_path):
    flags = {row["status"]: row for row in unit("prov-status-flags")["computed"]}
    skill = _skill_file(tmp_path, "---\nshort: s\n---\nbody\n")
    data = skill.read_bytes()
    sig = Path(str(skill) + ".sig")
    trusted = tmp_path / "trusted"

    status = sk.verify_signature(data, str(sig), str(trusted), [])
    assert status.status == sk.STATUS_MISSING_SIGNATURE and status.signed is flags["missing_signature"]["signed"]

    sig.write_text("{not json")
    status = sk.verify_signature(data, str(sig), str(trusted), [])
    assert status.status == sk.STATUS_INVALID_SIGNATURE and status.signer_fingerprint is None

    key = Key()
    key.trust(trusted)
    key.sign(skill)
    envelope = json.loads(sig.read_text())
    for mutate, fingerprint_reported in [
        (lambda e: e.update(schema="harn-skill-sig/v2"), True),
        (lambda e: e.pop("signed_at"), False),
        (lambda e: e.update(skill_sha256=5), False),
        (lambda e: e.update(ed25519_sig_base64="not base64!"), True),
        (lambda e: e.update(ed25519_sig_base64="AAAA"), True),
    ]:
        broken = json.loads(json.dumps(envelope))
        mutate(broken)
        sig.write_text(json.dumps(broken, indent=2))
        status = sk.verify_signature(data, str(sig), str(trusted), [])
        assert status.status == sk.STATUS_INVALID_SIGNATURE, broken
        assert (status.signer_fingerprint == key.fingerprint) is fingerprint_reported

    # Duplicate fields are rejected like serde does; a non-object too.
    sig.write_text('{"schema": "harn-skill-sig/v1", "schema": "harn-skill-sig/v1"}')
    assert sk.verify_signature(data, str(sig), str(trusted), []).status == sk.STATUS_INVALID_SIGNATURE
    sig.write_text("[]")
    assert sk.verify_signature(data, str(sig), str(trusted), []).status == sk.STATUS_INVALID_SIGNATURE

    # A key file that does not parse makes the signature invalid (Harn's loader does the same).
    write(trusted / f"{key.fingerprint}.pub", "garbage")
    key.sign(skill)
    status = sk.verify_signature(data, str(sig), str(trusted), [])
    assert status.status == sk.STATUS_INVALID_SIGNATURE and status.signed


def test_prov_hostile_fingerprint_is_not_used_as_a_path(tmp_path):
    skill = _skill_file(tmp_path, "---\nshort: s\n---\nbody\n")
    key = Key()
    write(tmp_path / "evil.pub", key.pem)
    key.sign(skill, fingerprint="../evil")
    status = sk.verify_signature(skill.read_bytes(), str(skill) + ".sig", str(tmp_path / "trusted"), [])
    assert status.status == sk.STATUS_MISSING_SIGNER


def test_loader_verified_provenance_and_invalid_signature_warning(tmp_path):
    vector = unit("loader-verified-provenance")
    root = tmp_path / "skills"
    write_files(root, vector["files"])
    key = Key()
    key.sign(root / "deploy" / "SKILL.md")
    key.trust(tmp_path / "trusted")
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root, "cli"), str(tmp_path / "trusted"))
    deploy = inventory.get("deploy")
    assert deploy.signature.signed and deploy.signature.trusted
    assert [p for p in inventory.problems if p.severity is not Severity.INFO] == []

    vector = unit("loader-invalid-signature-warning")
    root = tmp_path / "skills2"
    write_files(root, vector["files_signed"])
    key.sign(root / "deploy" / "SKILL.md")
    write_files(root, vector["files_after_signing"])
    inventory = sk.discover_skills(_single_root_paths(tmp_path, root, "cli"), str(tmp_path / "trusted"))
    deploy = inventory.get("deploy")
    assert deploy.loadable  # no require_signature: Harn warns but still loads it
    assert deploy.signature.status == sk.STATUS_INVALID_SIGNATURE
    mismatch = [p for p in deploy.problems if p.code == sk.CODE_SIGNATURE_INVALID]
    assert mismatch and mismatch[0].severity is Severity.ERROR
    assert "does not match the current contents" in mismatch[0].message


def test_require_signature_without_signature_is_error(tmp_path):
    skill_md = write(tmp_path / "s" / "strict" / "SKILL.md",
                     "---\nname: strict\nshort: s\nrequire_signature: true\n---\nbody\n")
    skill = sk.parse_skill_file(str(skill_md), "project", trusted_signers_dir=str(tmp_path / "trusted"))
    assert skill.signature.status == sk.STATUS_MISSING_SIGNATURE
    required = [p for p in skill.problems if p.code == sk.CODE_SIGNATURE_REQUIRED]
    assert required and required[0].severity is Severity.ERROR and required[0].line == 4
    assert "refuses to load" in required[0].message


# --------------------------------------------------------------------------
# the real signed fixture


SIGNED_DIR = SAMPLES / "skills/conformance/tests/skills"
SIGNED_SKILL = SIGNED_DIR / "load_skill_accepts_valid_signature/.harn/skills/signed-review/SKILL.md"
SIGNER_KEY = SIGNED_DIR / "signers/752857540d2b9a5efba8d16c61e7e42de61decf8d2df9dcbe726557d3daf0c32.pub"


def test_signed_fixture_verifies_with_its_real_key(tmp_path):
    trusted = tmp_path / "trusted-signers"
    trusted.mkdir()
    shutil.copy(SIGNER_KEY, trusted / SIGNER_KEY.name)
    skill = sk.parse_skill_file(str(SIGNED_SKILL), "project", trusted_signers_dir=str(trusted))
    assert skill.signature.status == sk.STATUS_VERIFIED
    assert skill.signature.signer_fingerprint == SIGNER_KEY.stem
    assert skill.fields["trusted_signers"] == [SIGNER_KEY.stem]
    assert skill.problems == []

    # Without the key installed: Harn says missing_signer.
    skill = sk.parse_skill_file(str(SIGNED_SKILL), "project", trusted_signers_dir=str(tmp_path / "empty"))
    assert skill.signature.status == sk.STATUS_MISSING_SIGNER


def test_signed_fixture_modified_after_signing(tmp_path):
    trusted = tmp_path / "trusted-signers"
    trusted.mkdir()
    shutil.copy(SIGNER_KEY, trusted / SIGNER_KEY.name)
    copy = tmp_path / "skills" / "signed-review"
    copy.mkdir(parents=True)
    shutil.copy(SIGNED_SKILL, copy / "SKILL.md")
    shutil.copy(str(SIGNED_SKILL) + ".sig", copy / "SKILL.md.sig")
    (copy / "SKILL.md").write_bytes(SIGNED_SKILL.read_bytes() + b"\n")
    skill = sk.parse_skill_file(str(copy / "SKILL.md"), "project", trusted_signers_dir=str(trusted))
    assert skill.signature.status == sk.STATUS_INVALID_SIGNATURE
    assert "modified after signing" in skill.signature.error
    assert sk.CODE_SIGNATURE_INVALID in codes(skill.problems)

    # Same bytes length but the sha256 in the .sig forged to match: Ed25519 catches it.
    sig = json.loads((copy / "SKILL.md.sig").read_text())
    sig["skill_sha256"] = hashlib.sha256((copy / "SKILL.md").read_bytes()).hexdigest()
    (copy / "SKILL.md.sig").write_text(json.dumps(sig, indent=2))
    skill = sk.parse_skill_file(str(copy / "SKILL.md"), "project", trusted_signers_dir=str(trusted))
    assert skill.signature.status == sk.STATUS_INVALID_SIGNATURE
    assert "Ed25519" in skill.signature.error


def test_signed_fixture_project_uses_local_signer_registry(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(SIGNED_DIR, project)
    paths = resolve(str(project), env={}, home=str(tmp_path / "home"))
    inventory = sk.discover_skills(paths)
    signed = inventory.get("signed-review")
    unsigned = inventory.get("unsigned-review")
    assert signed.layer == "manifest" and signed.signature.status == sk.STATUS_VERIFIED
    assert unsigned.signature.status == sk.STATUS_MISSING_SIGNATURE
    assert [p for p in inventory.problems if p.severity is not Severity.INFO] == []
    # An HTTP registry is never fetched.
    inventory = sk.discover_skills(paths, registry_url="https://example.invalid/signers")
    assert inventory.get("signed-review").signature.status == sk.STATUS_MISSING_SIGNER


# --------------------------------------------------------------------------
# layering and shadowing


def _layer_skill(root: Path, name: str, desc: str) -> None:
    template = unit("discovery-layers")["skill_template"]
    write(root / name / "SKILL.md", template.replace("<name>", name).replace("<desc>", desc))


def test_discovery_higher_layer_shadows_lower(tmp_path):
    case = unit("discovery-layers")["asserted"][0]
    cli, user = tmp_path / "cli", tmp_path / "home" / ".harn" / "skills"
    _layer_skill(cli, "deploy", "cli version")
    _layer_skill(user, "deploy", "user version")
    _layer_skill(user, "review", "review")
    paths = make_paths(tmp_path, [SkillLayerRoot("cli", str(cli)), SkillLayerRoot("user", str(user))])
    inventory = sk.discover_skills(paths)
    assert len(inventory.skills) == case["winners"]
    deploy, review = inventory.get("deploy"), inventory.get("review")
    assert deploy.layer == case["deploy.layer"] and deploy.description == case["deploy.description"]
    assert review.layer == case["review.layer"]
    assert [(s.id, s.shadowed_by, s.layer) for s in inventory.shadowed] == [
        (row["id"], row["winner"], row["loser"]) for row in case["shadowed"]
    ]


def test_discovery_namespace_bypasses_collision(tmp_path):
    case = unit("discovery-layers")["asserted"][1]
    project, user = tmp_path / ".harn" / "skills", tmp_path / "user"
    _layer_skill(project, "deploy", "p")
    _layer_skill(user, "deploy", "u")
    paths = make_paths(tmp_path, [SkillLayerRoot("project", str(project)),
                                  SimpleNamespace(layer="user", path=str(user), namespace="personal")])
    inventory = sk.discover_skills(paths)
    assert [s.id for s in inventory.skills] == case["winner ids"]
    assert inventory.shadowed == case["shadowed"]


def test_discovery_disabled_layer(tmp_path):
    case = unit("discovery-layers")["asserted"][2]
    project, system = tmp_path / ".harn" / "skills", tmp_path / "xdg" / "harn" / "skills"
    _layer_skill(project, "alpha", "a")
    _layer_skill(system, "beta", "b")
    paths = make_paths(tmp_path, [SkillLayerRoot("project", str(project)), SkillLayerRoot("system", str(system))])
    inventory = sk.discover_skills(paths, disabled_layers=case["disabled_layers"])
    assert [s.id for s in inventory.skills] == case["winners"]
    assert codes(inventory.problems) == [sk.CODE_LAYER_DISABLED]
    # The same from harn.toml [skills] disable.
    write(tmp_path / "harn.toml", '[skills]\ndisable = ["system"]\n')
    assert [s.id for s in sk.discover_skills(paths).skills] == case["winners"]


def test_discovery_custom_lookup_order(tmp_path):
    case = unit("discovery-layers")["asserted"][3]
    cli, user = tmp_path / "cli", tmp_path / "user"
    _layer_skill(cli, "deploy", "c")
    _layer_skill(user, "deploy", "u")
    paths = make_paths(tmp_path, [SkillLayerRoot("cli", str(cli)), SkillLayerRoot("user", str(user))])
    inventory = sk.discover_skills(paths, lookup_order=case["lookup_order"])
    assert inventory.get("deploy").layer == case["deploy.layer"]
    assert (inventory.shadowed[0].shadowed_by, inventory.shadowed[0].layer) == (
        case["shadowed[0]"]["winner"], case["shadowed[0]"]["loser"])
    write(tmp_path / "harn.toml", '[skills]\nlookup_order = ["user", "cli"]\n')
    assert sk.discover_skills(paths).get("deploy").layer == "user"


def test_unloadable_skill_does_not_shadow(tmp_path):
    project, user = tmp_path / ".harn" / "skills", tmp_path / "user"
    write(project / "deploy" / "SKILL.md", "---\nname: deploy\n---\nno short\n")
    _layer_skill(user, "deploy", "user version")
    paths = make_paths(tmp_path, [SkillLayerRoot("project", str(project)), SkillLayerRoot("user", str(user))])
    inventory = sk.discover_skills(paths)
    assert inventory.get("deploy").layer == "user"
    assert inventory.shadowed == []
    assert [(s.layer, s.loadable) for s in inventory.skills] == [("project", False), ("user", True)]


def test_pattern_learning_roots_do_not_compete(tmp_path):
    paths = resolve(str(tmp_path), env={}, home=str(tmp_path / "home"))
    _layer_skill(tmp_path / ".harn" / "skills", "deploy", "harn")
    write(tmp_path / ".claude" / "skills" / "deploy" / "SKILL.md",
          sk.render_learned_skill("deploy", "d", "w", "tool_sequence", "body"))
    inventory = sk.discover_skills(paths)
    assert [(s.id, s.layer) for s in inventory.skills] == [("deploy", "project"), ("deploy", "claude")]
    assert inventory.shadowed == []
    assert inventory.get("deploy").layer == "project"


# --------------------------------------------------------------------------
# symlinks


def test_symlink_out_of_project_is_not_followed(tmp_path):
    project, outside = tmp_path / "proj", tmp_path / "outside"
    write(project / "harn.toml", "")
    _layer_skill(outside, "evil", "outside the project")
    write(outside / "loose.md", "---\nshort: loose\n---\n")
    skills_root = project / ".harn" / "skills"
    _layer_skill(skills_root, "good", "inside")
    os.symlink(outside / "evil", skills_root / "evil")  # directory symlink leaving the project
    (skills_root / "filelink").mkdir()
    os.symlink(outside / "loose.md", skills_root / "filelink" / "SKILL.md")  # file symlink leaving it
    _layer_skill(project / "shared", "inproj", "via an in-project symlink")
    os.symlink(project / "shared" / "inproj", skills_root / "inproj")  # stays inside: followed

    inventory = sk.discover_skills(resolve(str(project), env={}, home=str(tmp_path / "home")))
    assert sorted(s.id for s in inventory.skills) == ["good", "inproj"]
    outside_problems = [p for p in inventory.problems if p.code == sk.CODE_SYMLINK_OUTSIDE]
    assert len(outside_problems) == 2


def test_symlinked_skill_root_out_of_project_is_not_followed(tmp_path):
    project, outside = tmp_path / "proj", tmp_path / "outside"
    write(project / "harn.toml", "")
    _layer_skill(outside, "evil", "x")
    (project / ".harn").mkdir()
    os.symlink(outside, project / ".harn" / "skills")
    inventory = sk.discover_skills(resolve(str(project), env={}, home=str(tmp_path / "home")))
    assert inventory.skills == []
    assert codes(inventory.problems) == [sk.CODE_SYMLINK_OUTSIDE]


def test_user_layer_is_read_but_symlinks_leaving_it_are_not(tmp_path):
    project, home, elsewhere = tmp_path / "proj", tmp_path / "home", tmp_path / "elsewhere"
    write(project / "harn.toml", "")
    user_root = home / ".harn" / "skills"
    _layer_skill(user_root, "mine", "user skill")
    _layer_skill(elsewhere, "far", "x")
    os.symlink(elsewhere / "far", user_root / "far")
    inventory = sk.discover_skills(resolve(str(project), env={}, home=str(home)))
    assert [(s.id, s.layer) for s in inventory.skills] == [("mine", "user")]
    assert codes(inventory.problems) == [sk.CODE_SYMLINK_OUTSIDE]


def test_sig_symlink_leaving_project_is_not_followed(tmp_path):
    project, outside = tmp_path / "proj", tmp_path / "outside"
    write(project / "harn.toml", "")
    skill_md = write(project / ".harn" / "skills" / "x" / "SKILL.md", "---\nshort: s\n---\n")
    write(outside / "x.sig", "{}")
    os.symlink(outside / "x.sig", str(skill_md) + ".sig")
    inventory = sk.discover_skills(resolve(str(project), env={}, home=str(tmp_path / "home")))
    skill = inventory.get("x")
    assert skill.signature is None
    assert sk.CODE_SYMLINK_OUTSIDE in codes(skill.problems)


# --------------------------------------------------------------------------
# names and the learned-skill writer (§E.3)


def test_slugify_and_valid_names():
    assert sk.slugify("Draft Release Notes: Changelog!") == "draft-release-notes-changelog"
    assert sk.slugify("--A__b--") == "a-b"
    assert sk.slugify("../../x") == "x"
    assert sk.is_valid_skill_name("learned-draft-release-notes-changelog")
    for bad in ("", "../../x", "Upper", "-a", "a-", "a b", "a_b", "a--b"):
        assert not sk.is_valid_skill_name(bad), bad


def test_render_matches_spec_example_exactly():
    text = sk.render_learned_skill(
        "learned-draft-release-notes-changelog",
        "Reusable guidance learned from 5 similar prompts.",
        "Use when the request matches these recurring prompt terms: draft, release, notes, changelog.",
        "prompt_cluster",
        "\n# Draft Release Notes Changelog\n\nReusable guidance learned from 5 similar prompts.\n\n",
    )
    assert text == (
        "---\n"
        "name: learned-draft-release-notes-changelog\n"
        'description: "Reusable guidance learned from 5 similar prompts."\n'
        'when-to-use: "Use when the request matches these recurring prompt terms: draft, release, notes, '
        'changelog."\n'
        "user-invocable: true\n"
        "disable-model-invocation: false\n"
        "allowed-tools: []\n"
        "category: Command\n"
        "tags: [learned, prompt-cluster]\n"
        "---\n"
        "\n"
        "# Draft Release Notes Changelog\n"
        "\n"
        "Reusable guidance learned from 5 similar prompts.\n"
    )


NASTY = [
    'He said "hi" and \\ left',
    "line one\nline two\n",
    "tab\there, cr\r, nel\x85 ls\u2028 ps\u2029 end",
    "  padded  ",
    "---",
    "# not a comment: {flow} [seq] &anchor *alias !tag %directive @ `",
    "bell\x07 esc\x1b del\x7f bom\ufeff nul\x00",
    "unicode: é 漢字 🚀",
    "",
    "\\n literally",
]


@pytest.mark.parametrize("value", NASTY)
def test_render_round_trips_strings(value):
    if "\n" in value:  # Harn's writer would split the field over two lines: refused, naming the field
        with pytest.raises(ValueError, match="`description` contains a line break"):
            sk.render_learned_skill("learned-x", value, "w", "agent_curator", "body", short="s")
        with pytest.raises(ValueError, match="`when-to-use` contains a line break"):
            sk.render_learned_skill("learned-x", "d", value, "agent_curator", "body")
        return
    text = sk.render_learned_skill("learned-x", value, value + "!", "agent_curator", "body", short=value + "?")
    frontmatter, body = sk.split_frontmatter(text)
    fields, unknown, errors = sk.parse_frontmatter(frontmatter)
    assert fields["description"] == value
    assert fields["when_to_use"] == value + "!"
    assert fields["short"] == value + "?"
    assert fields["user_invocable"] is True and fields["disable_model_invocation"] is False
    assert fields["allowed_tools"] == []
    assert sorted(unknown) == ["category", "tags"]
    assert errors == []
    assert body == "\nbody\n"
    loaded = yaml.safe_load(frontmatter)  # plain PyYAML agrees too
    assert loaded["description"] == value and loaded["tags"] == ["learned", "agent-curator"]


def test_render_with_short_is_loadable_in_a_harn_layer(tmp_path):
    text = sk.render_learned_skill("learned-x", "d", "w", "prompt_cluster", "body", short="Short card")
    assert text.splitlines()[1:3] == ["name: learned-x", 'short: "Short card"']
    skill_md = write(tmp_path / ".harn" / "skills" / "learned-x" / "SKILL.md", text)
    skill = sk.parse_skill_file(str(skill_md), "project")
    assert skill.loadable and skill.short == "Short card"


def test_render_refuses_invalid_names_and_quotes_non_string_slugs():
    for bad in ("../../x", "Bad Name", ""):
        with pytest.raises(ValueError):
            sk.render_learned_skill(bad, "d", "w", "s", "b")
    for name in ("true", "123", "null", "1e3"):
        # in a Harn loader layer (short given) the file must load with YAML: quoted
        text = sk.render_learned_skill(name, "d", "w", "s", "b", short="s")
        fields, _, errors = sk.parse_frontmatter(sk.split_frontmatter(text)[0])
        assert errors == [] and fields["name"] == name
        # in Harn's own roots the bytes are Harn's: `"name: " + name`
        assert sk.render_learned_skill(name, "d", "w", "s", "b").splitlines()[1] == f"name: {name}"
    text = sk.render_learned_skill("ok", "d", "w", "weird source]", "b", short="s")
    assert yaml.safe_load(sk.split_frontmatter(text)[0])["tags"] == ["learned", "weird source]"]
    # Harn writes the source raw (`tags: [learned, " + source.replace("_", "-") + "]"`)
    assert "tags: [learned, weird source]]\n" in sk.render_learned_skill("ok", "d", "w", "weird source]", "b")
