"""Every write harn-ls makes, byte for byte against what Harn writes in the same situation.

For each write: the file produced, Harn's expected bytes (built here from
Harn's own formulas -- transcribed from its source, cited per test -- and the
vectors in ../shared/harn-samples), and a read-back through harn-ls's readers
that follow Harn's reading rules. Nothing here calls harn-ls's writers to
build an expectation.

Harn sources used (burin-labs/harn):
* pattern_knowledge.harn @0526ba57: pl_write_skill, pl_yaml_scalar,
  pl_frontmatter_value, pl_skill_namespace_dir, pattern_learning_reject,
  pl_add_days_iso, pl_replace_state, pl_migrate_*;
* pattern_knowledge_persistence.harn @12fc74ed: pl_store_record, pl_tags;
* stdlib/memory.rs @094874f4: ForgetEvent / MemoryRecord field order,
  memory_forget, append_event (compact JSON + "\\n"), parse_tags (sorted);
* stdlib/datetime.rs (mirror e45362cf): date_parse, date_add, date_to_zone
  (chrono `to_rfc3339()`), date_now_iso (`to_rfc3339_opts(Millis, true)`);
* checkpoint.rs (harn-formats §B.2, §O.6): serde_json pretty, keys sorted,
  no trailing newline; `<pipeline>.lock`, flock, 5 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from harn_ls.actions import ActionFailed
from harn_ls.actions import checkpoints as C
from harn_ls.actions import facts as FA
from harn_ls.actions import migrate as M
from harn_ls.actions import proposals as P
from harn_ls.formats import checkpoints as CK
from harn_ls.formats import pattern_learning as pl
from harn_ls.formats import probes as PF
from harn_ls.model.workspace import Workspace
from tests.helpers.samples import SAMPLES
from tests.helpers.tree import snapshot
from tests.oracles import pattern_learning as plor

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "sample-project"
LOG = ".harn/memory/project/pattern-learning/events.jsonl"
NOW_NS = 1778577243512848123  # 2026-05-12T09:14:03.512848123Z
NOW_DATE_ISO = "2026-05-12T09:14:03.512Z"  # Harn's clock.date_iso(): to_rfc3339_opts(Millis, true)
NOW_RFC3339 = "2026-05-12T09:14:03.512848123+00:00"  # chrono Utc::now().to_rfc3339() (AutoSi)
UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
FIELD_ORDER_FORGET = ["type", "id", "namespace", "predicate", "forgotten_ids", "forgotten_at"]


def compact(value) -> str:
    """serde_json::to_string: no spaces, non-ASCII raw, `/` unescaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def serde_pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def sort_deep(value):
    if isinstance(value, dict):
        return {k: sort_deep(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sort_deep(v) for v in value]
    return value


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return dest


def appended_lines(path: Path, before: bytes) -> list[bytes]:
    data = path.read_bytes()
    assert data.startswith(before)
    tail = data[len(before):]
    assert tail.endswith(b"\n")
    return tail.split(b"\n")[:-1]


def harn_forget_line(line: bytes, namespace: str, predicate, forgotten_ids, forgotten_at: str) -> bytes:
    """The bytes Harn's memory_forget appends, with the line's own uuid v7 (random by nature)."""
    event_id = json.loads(line)["id"]
    assert UUID7.fullmatch(event_id) and int(event_id.replace("-", "")[:12], 16) == NOW_NS // 1_000_000
    return compact({"type": "forget", "id": event_id, "namespace": namespace, "predicate": predicate,
                    "forgotten_ids": forgotten_ids, "forgotten_at": forgotten_at}).encode()


def harn_store_line(record_id: str, namespace: str, key: str, value: dict, kind: str, stored_at: str) -> bytes:
    """pl_store_record -> memory_store: value + schema/record_kind (sorted), text = compact value, tags sorted."""
    value = sort_deep({**value, "schema": "harn.pattern_learning.v1", "record_kind": kind})
    return compact({"type": "store", "id": record_id, "namespace": namespace, "key": key, "value": value,
                    "text": compact(value),
                    "tags": sorted(["pattern_learning", f"pattern_learning:{kind}", "schema:harn.pattern_learning.v1"]),
                    "stored_at": stored_at, "provenance": {"source": "harn.pattern_learning"}}).encode()


def add_pending(project: Path, value: dict, namespace: str = "project/pattern-learning",
                log: str = LOG) -> str:
    record_id = f"pending_{value['id'].replace('-', '_')}_0123456789ab"
    line = harn_store_line(record_id, namespace, f"pending:{value['id']}", value, "pending", "2026-05-12T08:00:00.000Z")
    path = project / log
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        fh.write(line + b"\n")
    return record_id


def proposal(pid: str, name: str, **extra) -> dict:
    value = {"id": pid, "kind": "skill", "source": "prompt_cluster", "name": name, "title": "T",
             "description": "D", "when_to_use": "W", "body": "\n# T\n\nbody\n\n", "support": 9,
             "sample_prompts": [], "tool_sequence": [], "created_at": NOW_DATE_ISO, "last_seen_at": NOW_DATE_ISO}
    value.update(extra)
    return value


# ---------------------------------------------------------------- Reject: state record

def harn_add_days_iso(now_iso: str, days: int) -> str:
    """pl_add_days_iso, step by step with datetime.rs's number types (Int seconds or Float seconds)."""
    import calendar
    import math

    base, frac = now_iso[:-1].split(".")
    secs = calendar.timegm(tuple(int(x) for x in re.split(r"[-T:]", base)) + (0, 0, 0))
    nanos = int(frac) * 1_000_000
    parsed = secs if nanos == 0 else float(secs) + float(nanos) / 1e9  # date_parse -> timestamp_value

    def from_number(v):  # datetime_from_arg: Int -> (s, 0); Float -> micros = (v * 1e6).round()
        if isinstance(v, int):
            return v, 0
        x = v * 1_000_000.0
        micros = int(math.floor(x) + (1 if x - math.floor(x) >= 0.5 else 0))
        return micros // 1_000_000, (micros % 1_000_000) * 1000

    s, n = from_number(parsed)
    millis = s * 1000 + n // 1_000_000 + days * 86_400_000  # date_add(.., duration_days(days))
    added = millis // 1000 if millis % 1000 == 0 else millis / 1000.0  # timestamp_millis_value
    s, n = from_number(added)
    import time
    head = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s))
    digits = "" if n == 0 else f".{n // 1_000_000:03d}" if n % 1_000_000 == 0 else \
        f".{n // 1000:06d}" if n % 1000 == 0 else f".{n:09d}"
    return f"{head}{digits}+00:00"  # chrono to_rfc3339(): AutoSi, "+00:00", never "Z"


def test_harn_add_days_matches_the_documented_form():
    # harn-formats §E.2: `2026-04-25T17:32:09.481+00:00`, no fraction when it is zero
    assert harn_add_days_iso("2026-04-11T17:32:09.481Z", 14) == "2026-04-25T17:32:09.481+00:00"
    assert harn_add_days_iso("2026-04-11T17:32:09.000Z", 14) == "2026-04-25T17:32:09+00:00"
    for ms in (0, 1, 10, 100, 481, 999):
        for days in (1, 14, 365, 36500):
            now_ms = 1775928729000 + ms
            iso = pl.suppressed_until_after(now_ms, days)
            secs, rest = divmod(now_ms, 1000)
            import time
            now_iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rest:03d}Z"
            assert iso == harn_add_days_iso(now_iso, days)


def test_reject_bytes_and_read_back(project):
    ws = Workspace.load(str(project))
    pid = "tools-7742da9fd499"
    space = ws.memory["project/pattern-learning"]
    pending_ids = [r.id for r in space.by_key(f"pending:{pid}")]
    state_ids = [r.id for r in space.by_key("state")]
    old_state = dict(ws.pattern.state.record.value)
    log = project / LOG
    before = log.read_bytes()
    result = P.reject_proposal(ws, pid, days=14, now=NOW_NS)
    lines = appended_lines(log, before)
    assert len(lines) == 3
    until = harn_add_days_iso(NOW_DATE_ISO, 14)
    assert until == "2026-05-26T09:14:03.512+00:00"
    assert lines[0] == harn_forget_line(lines[0], "project/pattern-learning", {"key": f"pending:{pid}"}, pending_ids,
                                        NOW_RFC3339)
    assert lines[1] == harn_forget_line(lines[1], "project/pattern-learning", {"key": "state"}, state_ids, NOW_RFC3339)
    state_id = json.loads(lines[2])["id"]
    assert re.fullmatch(r"state_[0-9a-f]{12}", state_id)
    suppressed = {**old_state.get("suppressed_until", {}), pid: until}
    assert lines[2] == harn_store_line(state_id, "project/pattern-learning", "state",
                                       {"enabled": old_state.get("enabled", True), "suppressed_until": suppressed,
                                        "updated_at": NOW_DATE_ISO}, "state", NOW_DATE_ISO)
    assert list(json.loads(lines[0])) == FIELD_ORDER_FORGET
    assert result["suppressed_until"] == until
    # read back as Harn reads it: the proposal is gone, suppressed (string compare) until then
    cold = Workspace.load(str(project))
    assert cold.proposal(pid) is None
    assert cold.pattern.state.suppressed_until[pid] == until
    assert pl.is_suppressed(pid, cold.pattern.state, "2026-05-26T09:14:03.511Z")
    assert not pl.is_suppressed(pid, cold.pattern.state, "2026-05-26T09:14:03.512Z")


# ---------------------------------------------------------------- Accept: SKILL.md

def harn_skill_md(name: str, description: str, when_to_use: str, source: str, body: str) -> str:
    """pl_write_skill: join([...], "\\n") with pl_yaml_scalar and the trimmed body."""
    def scalar(v):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "\n".join(["---", "name: " + name, "description: " + scalar(description),
                      "when-to-use: " + scalar(when_to_use), "user-invocable: true",
                      "disable-model-invocation: false", "allowed-tools: []", "category: Command",
                      "tags: [learned, " + source.replace("_", "-") + "]", "---", "", body.strip(), ""])


NASTY_FIELDS = [
    ('Say "hi" to C:\\Users\\me', 'quote " and backslash \\ and \\" both'),
    ("tab\there", "esc \x1b[31mred\x1b[0m"),
    ("é 漢字 🚀 — non-ASCII", "NEL\x85 LS\u2028 CR\r inside"),
    ("  padded  ", ""),
    ("\\n literally, not a newline", "ends with a backslash \\"),
]


@pytest.mark.parametrize("description,when_to_use", NASTY_FIELDS)
def test_accept_skill_bytes_and_harn_read_back(project, description, when_to_use):
    pid = "curated-0123456789ab"
    add_pending(project, proposal(pid, "learned-nasty", description=description, when_to_use=when_to_use,
                                  source="agent_curator"))
    ws = Workspace.load(str(project))
    log = project / LOG
    before = log.read_bytes()
    result = P.accept_proposal(ws, pid, now=NOW_NS)
    skill = project / ".claude/skills/learned-nasty/SKILL.md"
    data = skill.read_bytes()
    assert data == harn_skill_md("learned-nasty", description, when_to_use, "agent_curator",
                                 "\n# T\n\nbody\n\n").encode("utf-8")
    # Harn's reader (pl_frontmatter_value) gets the fields back exactly
    text = data.decode("utf-8")
    assert plor.frontmatter_value(text, "description") == description
    assert plor.frontmatter_value(text, "when-to-use") == when_to_use
    # the forget event Harn appends after writing the file
    lines = appended_lines(log, before)
    assert lines == [harn_forget_line(lines[0], "project/pattern-learning", {"key": f"pending:{pid}"},
                                      [f"pending_{pid.replace('-', '_')}_0123456789ab"], NOW_RFC3339)]
    assert result["warning"] == ""
    cold = Workspace.load(str(project))
    assert cold.proposal(pid) is None
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(skill.stat().st_mode) == 0o666 & ~umask  # fs.write_text's mode


@pytest.mark.parametrize("field,value", [("description", "line one\nline two"), ("when_to_use", "a\nwhen-to-use: evil"),
                                         ("source", "prompt\ncluster")])
def test_accept_refuses_a_newline_harn_could_not_read_back(project, tmp_path, field, value):
    pid = "curated-0123456789ac"
    add_pending(project, proposal(pid, "learned-newline", **{field: value}))
    ws = Workspace.load(str(project))
    before = snapshot(tmp_path)
    shown = {"description": "description", "when_to_use": "when-to-use", "source": "tags (source)"}[field]
    with pytest.raises(ActionFailed, match=re.escape(f"`{shown}` contains a line break")):
        P.accept_proposal(ws, pid, now=NOW_NS)
    assert snapshot(tmp_path) == before


def test_accept_empty_slug_namespace_goes_to_custom(project):
    """pl_skill_namespace_dir: slug of the namespace, `custom` when empty (namespace `__/__` here)."""
    ns = "__/__"
    pid = "prompt-0123456789ad"
    add_pending(project, proposal(pid, "learned-custom"), namespace=ns, log=".harn/memory/__/__/events.jsonl")
    ws = Workspace.load(str(project))
    P.accept_proposal(ws, pid, now=NOW_NS, namespace=ns)
    skill = project / ".claude/skills/custom/learned-custom/SKILL.md"
    assert skill.read_bytes() == harn_skill_md("learned-custom", "D", "W", "prompt_cluster", "# T\n\nbody").encode()
    assert pl.skill_namespace_dir("project/team a") == "project-team-a"
    assert pl.skill_namespace_dir("  __  ") == "custom"


def test_custom_skill_root_is_warned_in_the_preview(project):
    from harn_ls.render import RenderSettings, parse_uri
    from harn_ls.render.documents import render

    ws = Workspace.load(str(project))
    pid = "prompt-2629ccc60808"
    plan = P.planned_files(ws, ws.proposal(pid), skill_root=".harn/skills")
    assert "Harn will not see skills here and may propose this one again" in plan.warning
    assert P.planned_files(ws, ws.proposal(pid), skill_root=".burin/skills").warning == ""
    assert P.planned_files(ws, ws.proposal(pid)).warning == ""
    doc = render(ws, parse_uri(f"harn-state:/proposals/{pid}.md"), RenderSettings(skill_root=".harn/skills"))
    assert "**Warning:**" in doc and "may propose this one again" in doc
    assert "**Warning:**" not in render(ws, parse_uri(f"harn-state:/proposals/{pid}.md"), RenderSettings())


# ---------------------------------------------------------------- Forget stage: checkpoint

def test_forget_stage_bytes_mode_lock_and_read_back(project):
    path = project / ".harn/checkpoints/ingest.json"
    original = json.loads(path.read_text())
    os.chmod(path, 0o600)
    ws = Workspace.load(str(project))
    C.forget_stage(ws, "ingest", "fetch")
    expected = {k: v for k, v in original.items() if k != "fetch"}
    # CheckpointState::save: serde_json::to_string_pretty of the BTreeMap, no trailing newline
    assert path.read_bytes() == serde_pretty(dict(sorted(expected.items()))).encode("utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lock = project / ".harn/checkpoints/ingest.lock"
    assert lock.is_file() and lock.stat().st_size == 0  # Harn's lock file: created, never written
    cf = CK.read_checkpoint_file(str(path))
    assert sorted(cf.entries) == sorted(expected) and not cf.problems
    assert cf.entries["prepare"].keyed


# ---------------------------------------------------------------- Invalidate fact

def test_invalidate_fact_bytes_and_read_back(project):
    ws = Workspace.load(str(project))
    fact = sorted(ws.facts_by_id.values(), key=lambda f: f.id)[0]
    log = Path(ws.namespace_path(fact.namespace))
    before = log.read_bytes()
    FA.invalidate_fact(ws, fact.id, now=NOW_NS)
    lines = appended_lines(log, before)
    # invalidate_facts("fact_...") -> predicate {id}; memory_forget lists the matching active ids
    assert lines == [harn_forget_line(lines[0], fact.namespace, {"id": fact.id}, [fact.id], NOW_RFC3339)]
    assert fact.id not in Workspace.load(str(project)).facts_by_id


# ---------------------------------------------------------------- Probe fact

def test_probe_fact_event_matches_harns_store_fact():
    """store_fact's memory line for a typecheck probe (without our extra file_range item): id, key, tags, text."""
    observed = "typecheck outcome=pass errors=0 warnings=0"
    event = PF.typecheck_fact_event("fn x() {}", "pass", observed, "harn check <snippet> --json", None,
                                    NOW_DATE_ISO, NOW_RFC3339)
    trace = "probe_" + hashlib.sha256(f"typecheck\nfn x() {{}}\n{observed}".encode()).hexdigest()[:16]
    evidence = [{"kind": "tool_output", "ref": trace, "snippet": observed}]
    provenance = {"command": "harn check <snippet> --json", "probe_kind": "typecheck", "source": "probe"}
    claim = "probe typecheck `fn x() {}` → pass"
    seed = "observation\n" + claim + "\n" + compact(sort_deep(evidence)) + "\n" + compact(sort_deep(provenance))
    fid = "fact_" + hashlib.sha256(seed.encode()).hexdigest()[:32]
    value = sort_deep({"asserted_at": NOW_DATE_ISO, "claim": claim, "confidence": 0.9, "evidence": evidence,
                       "id": fid, "kind": "observation", "provenance": provenance, "schema": "harn.fact.v1"})
    tags = sorted({"fact", "fact:observation", "schema:harn.fact.v1", "fact:evidence:tool_output",
                   f"fact:evidence_ref:{trace}", f"fact:evidence:tool_output:{trace}",
                   "fact:observation:evidence:tool_output", f"fact:observation:evidence_ref:{trace}",
                   f"fact:observation:evidence:tool_output:{trace}"})
    expected = {"type": "store", "id": fid, "namespace": "project/facts", "key": f"fact:observation:{fid}",
                "value": value, "text": compact(value), "tags": tags, "stored_at": NOW_RFC3339,
                "provenance": provenance}
    assert compact(event) == compact(expected)


def test_probe_vector_from_the_samples():
    from harn_ls.formats import facts as F

    v = {x["id"]: x for x in json.loads((SAMPLES / "id-vectors.json").read_text())["vectors"]}["probe-format-doc-echo-hi"]
    c = v["computed"]
    fact_input = PF.probe_fact_input("eval", "echo hi", "pass", c["observed"], lang="shell", command="echo hi")
    env = F.normalize_fact(fact_input, {"asserted_at": NOW_DATE_ISO})
    assert env["id"] == c["auto_fact"]["fact_id"] and env["evidence"][0]["ref"] == c["trace_id"]


# ---------------------------------------------------------------- Migration

def test_migration_records_and_marker(project):
    ss = project / ".harn/session-store"
    ss.mkdir(parents=True, exist_ok=True)
    obs = {"operation": "upsert", "record": {"id": "obs-1", "sessionID": "s-1", "sourceId": "ignored-by-harn",
                                             "prompt": "  Deploy\twith  token=abc,def\n now ",
                                             "toolSequence": ["Read File", "load_skill", "git.log"],
                                             "observedAt": "2026-05-01T00:00:00.000Z"}}
    pend = {"operation": "replace", "value": {"generatedAt": "2026-05-01T00:00:00.000Z", "proposals": [
        {"id": "prompt-aaaaaaaaaaaa", "source": "prompt_cluster", "name": "learned-x", "title": " Spaced   title ",
         "description": "d", "whenToUse": "w", "body": "b", "support": 3, "samplePrompts": ["p"],
         "toolSequence": ["a"], "evidenceIds": ["dropped-by-harn"]}]}}
    state = {"operation": "replace",
             "value": {"enabled": False, "suppressedUntil": {"tools-bbbbbbbbbbbb": "2026-06-01T00:00:00Z"}}}
    for stream, payload in (("observations", obs), ("pending", pend), ("state", state)):
        (ss / f"burin.agent_context.pattern_learning.{stream}.jsonl").write_text(json.dumps({"payload": payload}) + "\n")
    log = project / LOG
    before = log.read_bytes()
    ws = Workspace.load(str(project))
    state_ids = [r.id for r in ws.memory["project/pattern-learning"].by_key("state")]
    M.migrate_pattern_learning(ws, now=NOW_NS)
    lines = appended_lines(log, before)
    assert len(lines) == 4
    # pl_observation_from_legacy -> pl_observation_from_input (persistence module @12fc74ed)
    assert lines[0] == harn_store_line("obs-1", "project/pattern-learning", "observation:obs-1", {
        "id": "obs-1", "source_id": "", "session_id": "s-1", "run_id": "", "evidence_kind": "",
        "prompt": "Deploy with token=<redacted> now", "tool_sequence": ["read-file", "git-log"],
        "observed_at": "2026-05-01T00:00:00.000Z"}, "observation", NOW_DATE_ISO)
    # pl_migrate_pending's `normalized`: pl_text fields, created/last_seen fall back to now, nothing else
    pending_id = json.loads(lines[1])["id"]
    assert re.fullmatch(r"pending_prompt_aaaaaaaaaaaa_[0-9a-f]{12}", pending_id)
    assert lines[1] == harn_store_line(pending_id, "project/pattern-learning", "pending:prompt-aaaaaaaaaaaa", {
        "id": "prompt-aaaaaaaaaaaa", "kind": "skill", "source": "prompt_cluster", "name": "learned-x",
        "title": "Spaced title", "description": "d", "when_to_use": "w", "body": "b", "support": 3,
        "sample_prompts": ["p"], "tool_sequence": ["a"], "created_at": NOW_DATE_ISO,
        "last_seen_at": NOW_DATE_ISO}, "pending", NOW_DATE_ISO)
    # pl_migrate_state -> pl_replace_state: forget {key: state}, store the legacy state
    assert lines[2] == harn_forget_line(lines[2], "project/pattern-learning", {"key": "state"}, state_ids, NOW_RFC3339)
    state_id = json.loads(lines[3])["id"]
    assert lines[3] == harn_store_line(state_id, "project/pattern-learning", "state", {
        "enabled": False, "suppressed_until": {"tools-bbbbbbbbbbbb": "2026-06-01T00:00:00Z"},
        "updated_at": NOW_DATE_ISO}, "state", NOW_DATE_ISO)
    marker = project / ".harn/memory/project/pattern-learning/.burin-session-store-migrated-v1.json"
    assert marker.read_text() == serde_pretty({"migrated_at": NOW_DATE_ISO, "schema": "harn.pattern_learning.v1"})
    cold = Workspace.load(str(project))
    assert not cold.migration_needed
    assert cold.proposal("prompt-aaaaaaaaaaaa") is not None
    assert cold.pattern.state.enabled is False


def test_migration_without_a_state_stream_replaces_the_state_as_harn_does(project):
    """pl_migrate_state reads a missing stream as {enabled: true, suppressedUntil: {}} and replaces the state."""
    ss = project / ".harn/session-store"
    ss.mkdir(parents=True, exist_ok=True)
    (ss / "burin.agent_context.pattern_learning.observations.jsonl").write_text(json.dumps({"payload": {
        "operation": "upsert", "record": {"id": "obs-2", "prompt": "p", "observedAt": "2026-05-01T00:00:00.000Z"}}}) + "\n")
    ws = Workspace.load(str(project))
    state_ids = [r.id for r in ws.memory["project/pattern-learning"].by_key("state")]
    assert state_ids and ws.pattern.state.suppressed_until  # the sample project has a suppression
    log = project / LOG
    before = log.read_bytes()
    M.migrate_pattern_learning(ws, now=NOW_NS)
    lines = appended_lines(log, before)
    assert lines[-2] == harn_forget_line(lines[-2], "project/pattern-learning", {"key": "state"}, state_ids, NOW_RFC3339)
    assert lines[-1] == harn_store_line(json.loads(lines[-1])["id"], "project/pattern-learning", "state", {
        "enabled": True, "suppressed_until": {}, "updated_at": NOW_DATE_ISO}, "state", NOW_DATE_ISO)
    assert Workspace.load(str(project)).pattern.state.suppressed_until == {}
