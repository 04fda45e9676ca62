"""Pattern learning projection, legacy Burin streams and Harn's id helpers (harn-formats §E)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from harn_ls.formats import pattern_learning as pl
from harn_ls.formats.jsonl import JsonlTail
from harn_ls.formats.memory import MemoryNamespace
from harn_ls.formats.memory_record import MemoryRecord, memory_record, value_text
from harn_ls.formats.skills.writer import is_valid_skill_name
from tests.helpers.samples import SAMPLES  # noqa: E402
from tests.oracles import pattern_learning as plor

_VECTOR_FILE = SAMPLES / "id-vectors.json"
VECTORS = {v["id"]: v for v in json.loads(_VECTOR_FILE.read_text())["vectors"]} if _VECTOR_FILE.is_file() else {}
NS = pl.NAMESPACE


def store_line(record_id: str, kind: str, value: dict, stored_at: str, key: str | None = None, tags=None) -> str:
    full = pl.pattern_record_value(value, kind)
    event = {"type": "store", "id": record_id, "namespace": NS,
             "key": key or pl.pattern_record_key(kind, value.get("id")), "value": full,
             "text": value_text(full), "tags": tags if tags is not None else pl.pattern_tags(kind),
             "stored_at": stored_at, "provenance": {"source": "harn.pattern_learning"}}
    return json.dumps(event)


def project_file(path: Path) -> tuple[MemoryNamespace, pl.PatternLearning]:
    ns = MemoryNamespace(NS, str(path))
    ns.apply_lines(JsonlTail(str(path)).read_new().lines)
    return ns, pl.project_pattern_learning(ns.records(), str(path))


OBS = {"id": "9b3e2f4a-6c1d-4e8a-b2f7-5d0c1e9a3b77", "observed_at": "2026-05-02T09:14:03.512Z",
       "prompt": "Draft release notes from the changelog for v0.9", "session_id": "sess-42",
       "tool_sequence": ["read-file", "git-log", "write-file"]}
PROPOSAL = {"body": "# Draft Release Notes Changelog\n\nbody", "created_at": "2026-05-02T09:20:00.000Z",
            "description": "Reusable guidance learned from 5 similar prompts.", "id": "prompt-f6542d51ca12",
            "kind": "skill", "last_seen_at": "2026-05-02T09:20:00.000Z", "name": "learned-draft-release-notes-changelog",
            "sample_prompts": ["Draft release notes from the changelog for v0.9"], "source": "prompt_cluster",
            "support": 5, "title": "Draft Release Notes Changelog", "tool_sequence": ["read-file", "git-log", "write-file"],
            "when_to_use": "Use when the request matches these recurring prompt terms: draft, release, notes, changelog."}
STATE = {"enabled": True, "suppressed_until": {"tools-1a2b3c4d5e6f": "2026-05-16T09:25:00Z"},
         "updated_at": "2026-05-02T09:25:00.000Z"}


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(ln + "\n" for ln in lines))
    return path


def test_spec_example_projects(tmp_path):
    p = write(tmp_path / "events.jsonl", [
        store_line(OBS["id"], "observation", OBS, OBS["observed_at"]),
        store_line("pending_prompt_f6542d51ca12_083ee8d142e8", "pending", PROPOSAL, "2026-05-02T09:20:00.000Z"),
        store_line("state_bb286f64726d", "state", STATE, "2026-05-02T09:25:00.000Z"),
    ])
    ns, learn = project_file(p)
    assert ns.problems == [] and learn.problems == [] and learn.rejected == []
    (obs,) = learn.observations
    assert (obs.id, obs.session_id, obs.tool_sequence, obs.visible_to_harn) == (OBS["id"], "sess-42", OBS["tool_sequence"], True)
    assert obs.record.key == f"observation:{OBS['id']}"
    (prop,) = learn.pending
    assert (prop.id, prop.kind, prop.source, prop.support, is_valid_skill_name(prop.name)) == (
        "prompt-f6542d51ca12", "skill", "prompt_cluster", 5, True)
    assert prop.when_to_use.startswith("Use when") and prop.record.id == "pending_prompt_f6542d51ca12_083ee8d142e8"
    assert (learn.state.enabled, learn.state.updated_at) == (True, "2026-05-02T09:25:00.000Z")
    assert learn.state.record.id == "state_bb286f64726d"
    assert learn.counts == {k: {"stored": 1, "visible": 1} for k in pl.KINDS}
    assert [pid for pid in learn.state.suppressed_until
            if pl.is_suppressed(pid, learn.state, "2026-05-10T00:00:00.000Z")] == ["tools-1a2b3c4d5e6f"]


def rec(seq: int, kind: str, value, *, rid: str | None = None, tags=None, stored_at="2026-05-02T09:00:00.000Z") -> MemoryRecord:
    full = pl.pattern_record_value(value, kind) if isinstance(value, dict) else value
    return memory_record(id=rid or f"r{seq}", namespace=NS, key=f"{kind}:{seq}", value=full, text="",
                        tags=tuple(tags if tags is not None else pl.pattern_tags(kind)), stored_at=stored_at,
                        seq=seq, line_no=seq + 1)


def proposal(pid: str, support, **extra) -> dict:
    return {"id": pid, "kind": "skill", "source": "prompt_cluster", "name": f"learned-{pid}", "support": support, **extra}


def test_pending_order_support_desc_then_id():
    records = [rec(0, "pending", proposal("tools-bbb", 3)), rec(1, "pending", proposal("prompt-zzz", 7)),
               rec(2, "pending", proposal("prompt-aaa", 3)), rec(3, "pending", proposal("curated-ccc", 12))]
    learn = pl.project_pattern_learning(records, "events.jsonl")
    assert [p.id for p in learn.pending] == ["curated-ccc", "prompt-zzz", "prompt-aaa", "tools-bbb"]
    vec = VECTORS["pattern-learning-proposals"]["computed"]
    two = pl.sort_pending([pl.Proposal(id=vec["tool_proposal_id"], support=2),
                           pl.Proposal(id=vec["prompt_proposal_id"], support=2)])
    assert [p.id for p in two] == vec["pending_order"]


def test_wrong_typed_and_wrong_schema_records_are_problems_rest_loads():
    records = [
        rec(0, "pending", proposal("prompt-ok", 5)),
        rec(1, "pending", proposal("prompt-strsupport", "5")),  # Harn's sort key arithmetic fails
        rec(2, "pending", proposal("prompt-booltitle", 2, title=7, sample_prompts=["a", 3])),
        rec(3, "pending", {**proposal("prompt-noschema", 1)}),
        rec(4, "pending", "just a string"),
        rec(5, "observation", {"id": "o1", "prompt": "hi", "session_id": "s"}),
        rec(6, "observation", {"id": 42, "prompt": "hi"}),
        rec(7, "state", {"enabled": "yes", "suppressed_until": {"a": "2030-01-01T00:00:00Z", "b": 5}, "updated_at": "z"}),
        rec(8, "pending", {"id": "p", "support": 1, "record_kind": "observation"}),
        memory_record(id="untagged", namespace=NS, key="x", value={"schema": pl.SCHEMA}, text="", tags=("misc",),
                     stored_at="t", seq=9, line_no=10),
    ]
    records[3] = records[3].with_changes(value={**records[3].value, "schema": "harn.pattern_learning.v0"})
    records[8] = records[8].with_changes(value={"id": "p", "support": 1, "schema": pl.SCHEMA, "record_kind": "observation"})
    learn = pl.project_pattern_learning(records, "events.jsonl")
    assert [p.id for p in learn.pending] == ["prompt-ok", "prompt-booltitle"]
    bool_title = learn.pending[1]
    assert bool_title.title == "" and bool_title.sample_prompts == []
    assert [o.id for o in learn.observations] == ["o1"]
    assert sorted(r.id for r in learn.rejected) == ["r1", "r3", "r4", "r6", "r8"]
    by_line = {(p.line, p.code) for p in learn.problems}
    assert {(2, "HL-PAT-004"), (3, "HL-PAT-004"), (4, "HL-PAT-002"), (5, "HL-PAT-001"), (7, "HL-PAT-004"),
            (9, "HL-PAT-003"), (10, "HL-PAT-006")} <= by_line
    # state: wrong-typed enabled falls back to Harn's default, the non-string suppression entry is dropped
    assert learn.state.enabled is True and learn.state.suppressed_until == {"a": "2030-01-01T00:00:00Z"}
    assert sum(1 for p in learn.problems if p.line == 8) == 2


def test_state_greatest_updated_at_string_compare():
    records = [rec(0, "state", {"enabled": True, "suppressed_until": {}, "updated_at": "2026-05-02T09:25:00.000Z"}),
               rec(1, "state", {"enabled": False, "suppressed_until": {}, "updated_at": "2026-05-02T09:25:00Z"}),
               rec(2, "state", {"enabled": True, "suppressed_until": {}, "updated_at": "2026-05-01T23:59:59.999Z"})]
    learn = pl.project_pattern_learning(records)
    # 'Z' > '.', so the seconds-only stamp wins although it is the same instant.
    assert learn.state.enabled is False and learn.state.record.id == "r1"
    assert len(learn.state_records) == 3
    assert pl.project_pattern_learning([]).state == pl.PatternState()


def test_is_suppressed_uses_string_compare():
    state = pl.PatternState(suppressed_until={"tools-1": "2026-05-16T09:25:00Z", "tools-2": 20260516})
    assert pl.is_suppressed("tools-1", state, "2026-05-16T09:24:59.999Z")
    assert pl.is_suppressed("tools-1", state, "2026-05-16T09:25:00.000Z")  # same instant, but 'Z' > '.'
    assert not pl.is_suppressed("tools-1", state, "2026-05-16T09:25:00Z")  # equal strings: not greater
    assert not pl.is_suppressed("tools-1", state, "2026-05-16T09:25:01.000Z")
    assert pl.is_suppressed("tools-1", state, "2026-05-16T09:25:00+00:00")  # '+' < 'Z'
    assert not pl.is_suppressed("tools-2", state, "2000")  # non-string never suppresses
    assert not pl.is_suppressed("tools-3", state, "2000")
    assert not pl.is_suppressed("tools-1", None, "2000")


def test_only_newest_200_per_kind_visible_to_harn():
    records = [rec(i, "observation", {"id": f"o{i}", "prompt": f"p{i}"}) for i in range(205)]
    records.append(rec(205, "pending", proposal("prompt-x", 5)))
    learn = pl.project_pattern_learning(records, "events.jsonl")
    assert learn.counts["observation"] == {"stored": 205, "visible": 200}
    assert learn.counts["pending"] == {"stored": 1, "visible": 1}
    assert [o.id for o in learn.observations if not o.visible_to_harn] == [f"o{i}" for i in range(5)]
    (notice,) = [p for p in learn.problems if p.code == "HL-PAT-005"]
    assert notice.line == 5 and "5 older observation" in notice.message


def test_id_helpers_against_vectors():
    now, uuid = "2026-05-02T09:20:00.000Z", "0196a20b-0000-7abc-8def-0123456789ab"
    h = hashlib.sha256(f"{now}:{uuid}".encode()).hexdigest()[:12]
    assert pl.pending_record_id("prompt-dbd835223382", now, uuid) == f"pending_prompt_dbd835223382_{h}"
    assert pl.state_record_id(now, uuid) == f"state_{h}"
    rules = {c["record"]: c for c in VECTORS["pattern-learning-record-ids"]["computed"]}
    pattern = rules["pending"]["memory_id_pattern"].replace("<12 hex of sha256(now + ':' + uuid)>", "[0-9a-f]{12}")
    assert re.fullmatch(pattern, pl.pending_record_id("prompt-dbd835223382", now, uuid))
    assert re.fullmatch(rules["state"]["memory_id_pattern"].replace("<12 hex of sha256(now + ':' + uuid)>", "[0-9a-f]{12}"),
                        pl.state_record_id(now, uuid))
    assert pl.pattern_record_key("pending", "prompt-dbd835223382") == rules["pending"]["memory_key"]
    assert pl.pattern_record_key("state") == "state"
    assert pl.pattern_tags("observation") == VECTORS["pattern-learning-record-ids"]["tags"]["observation"]
    assert pl.pattern_record_value({"id": "x"}, "pending") == {"id": "x", "schema": pl.SCHEMA, "record_kind": "pending"}
    vec = VECTORS["pattern-learning-proposals"]["computed"]
    assert plor.prompt_proposal_id(vec["prompt_cluster_key"]) == vec["prompt_proposal_id"]
    assert plor.tool_proposal_id(vec["tool_sequence_key"]) == vec["tool_proposal_id"]
    assert pl.slugify(vec["prompt_title"]) == vec["prompt_skill_name"].removeprefix("learned-")
    for case in VECTORS["pattern-learning-slugify-and-tools"]["computed"]:
        assert pl.slugify(case["input"]) == case["slug"]
    assert plor.curated_proposal_id("n", ["a", "b"]) == "curated-" + hashlib.sha256(b"n:a:b").hexdigest()[:12]


# -- legacy Burin streams ------------------------------------------------------------

def legacy_root(tmp_path: Path) -> tuple[Path, Path]:
    state_root = tmp_path / ".harn"
    (state_root / "session-store").mkdir(parents=True)
    pattern_dir = state_root / "memory" / "project" / "pattern-learning"
    return state_root, pattern_dir


def write_stream(state_root: Path, kind: str, payloads: list, tail: str = "") -> None:
    path = state_root / "session-store" / pl.LEGACY_STREAMS[kind]
    path.write_text("".join(json.dumps({"stream": kind, "payload": p}) + "\n" for p in payloads) + tail)


def test_legacy_streams_camel_case_mutations(tmp_path):
    state_root, pattern_dir = legacy_root(tmp_path)
    assert pl.legacy_stream_paths(str(state_root)) == {}
    assert not pl.needs_migration(str(state_root), str(pattern_dir))
    write_stream(state_root, "observation", [
        {"operation": "upsert",
         "record": {"id": "o1", "sessionID": "s1", "prompt": "first", "toolSequence": ["read"], "observedAt": "t1"}},
        {"operation": "upsert", "record": {"id": "o2", "sessionID": "s2", "prompt": "second"}},
        {"operation": "upsert", "record": {"id": "o1", "sessionID": "s1", "prompt": "first (edited)"}},
        {"operation": "delete", "id": "o2"},
        {"operation": "upsert", "record": {"id": "o3", "session_id": "s3", "prompt": "snake", "tool_sequence": ["edit"]}},
        {"operation": "frobnicate"},
    ], tail='{"payload": {"operation": "upsert", "rec')
    write_stream(state_root, "pending", [
        {"operation": "replace", "value": {"generatedAt": "g0", "proposals": [{"id": "old", "support": 1}]}},
        {"operation": "replace", "value": {"generatedAt": "g1", "proposals": [
            {"id": "prompt-a", "kind": "skill", "source": "prompt_cluster", "name": "learned-a", "title": "A",
             "whenToUse": "when a", "body": "b", "support": 2, "samplePrompts": ["x"], "toolSequence": [],
             "createdAt": "c", "lastSeenAt": "l"},
            {"id": "tools-b", "support": 9},
            {"id": "bad", "support": "many"}]}},
    ])
    write_stream(state_root, "state", [
        {"operation": "replace", "value": {"enabled": False, "suppressedUntil": {"tools-x": "2030-01-01T00:00:00Z"}}},
    ])
    paths = pl.legacy_stream_paths(str(state_root))
    assert set(paths) == {"observation", "pending", "state"}
    assert pl.needs_migration(str(state_root), str(pattern_dir))
    imp = pl.read_legacy_streams(str(state_root))
    assert [(o.id, o.prompt, o.session_id) for o in imp.observations] == [("o1", "first (edited)", "s1"), ("o3", "snake", "s3")]
    assert imp.observations[1].tool_sequence == ["edit"]
    assert [p.id for p in imp.proposals] == ["tools-b", "prompt-a"]
    a = imp.proposals[1]
    assert (a.when_to_use, a.sample_prompts, a.created_at, a.last_seen_at) == ("when a", ["x"], "c", "l")
    assert imp.generated_at == "g1" and a.record is None
    assert imp.state.enabled is False and imp.state.suppressed_until == {"tools-x": "2030-01-01T00:00:00Z"}
    codes = [p.code for p in imp.problems]
    assert "HL-JSONL-004" in codes and codes.count("HL-PAT-007") == 2  # unknown op + unusable proposal
    # marker present -> migrated
    pattern_dir.mkdir(parents=True)
    marker = Path(pl.migration_marker_path(str(pattern_dir)))
    assert marker.name == ".burin-session-store-migrated-v1.json"
    marker.write_text(json.dumps({"migrated_at": "now", "schema": pl.SCHEMA}, indent=2))
    assert not pl.needs_migration(str(state_root), str(pattern_dir))


def test_legacy_clear_and_replace(tmp_path):
    state_root, _ = legacy_root(tmp_path)
    write_stream(state_root, "observation", [
        {"operation": "upsert", "record": {"id": "o1", "prompt": "a"}},
        {"operation": "clear"},
        {"operation": "replace", "records": [{"id": "o5", "prompt": "x"}, {"id": "o6", "prompt": 3}, "junk"]},
    ])
    write_stream(state_root, "state", [{"operation": "replace", "value": {"enabled": True}}, {"operation": "clear"}])
    (state_root / "session-store" / pl.LEGACY_STREAMS["pending"]).write_text('{"no_payload": 1}\nnot json\n')
    imp = pl.read_legacy_streams(str(state_root))
    assert [o.id for o in imp.observations] == ["o5"]
    assert imp.state is None and imp.proposals == []
    codes = [p.code for p in imp.problems]
    assert codes.count("HL-PAT-007") == 3 and "HL-JSONL-001" in codes
