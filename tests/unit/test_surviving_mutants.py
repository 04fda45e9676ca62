"""Six plausible bugs that the suite once let through (issue 35): each test fails with the mutation in
its docstring applied and passes on the real code. `scripts/mutate.py` plants them (and others) one
at a time: see docs/internals.md, "Mutation runs"."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import threading
from pathlib import Path

import orjson
import pytest

from harn_ls.actions import atomic_write
from harn_ls.actions import checkpoints as ckpt_actions
from harn_ls.cache.checkpoint_history import CheckpointHistory
from harn_ls.cache.log_stamps import compare_log, stamp_log
from harn_ls.formats import state_files as sf
from harn_ls.formats.events import Event
from harn_ls.formats.hitl import requests as hitl_fmt
from harn_ls.model.workspace import Workspace
from tests.helpers.lock_holder import lock_holder  # noqa: F401 (pytest fixture)
from tests.helpers.samples import SAMPLES
from tests.unit.test_cache import NOTES, cache_env, check, project  # noqa: F401 (fixtures)

CONSTRUCTED = SAMPLES / "constructed"
TAIL_HASH_BYTES = 4096  # the state cache's validator hashes the 4 KiB before the offset (docs/internals.md)


# ------------------------------------------------------------------ 1. formats/hitl/requests.py
def _event(topic: str, eid: int, kind: str, payload: dict) -> Event:
    return Event(topic, eid, kind, payload, {"request_id": payload.get("request_id", "")}, 1_777_885_200_000 + eid)


@pytest.mark.parametrize("kind", ["approval", "dual_control"])
def test_only_approved_true_counts_as_an_approval(kind):
    """Mutation: hitl `_apply` counts `approved is not False` (not `is True`) as an approval. Harn
    counts a response without `approved`, or with the string "true", as a denial (harn-formats:
    "hitl.response_received without approved -> counted as a denial"), never towards the quorum."""
    rid = f"hitl_{kind}_019df237-6590-789f-8c58-97172ca41e44"
    topic = "hitl.approvals" if kind == "approval" else "hitl.dual_control"
    people = ["alice", "bob", "carol"]
    payload = {"request_id": rid, "kind": kind, "requested_at": "2026-05-04T09:00:00Z",
               "payload": {"action": "deploy", "reviewers": people, "approvers": people, "quorum": 2, "n": 2}}
    events = [
        _event(topic, 1, f"hitl.{kind}_requested" if kind == "dual_control" else "hitl.approval_requested", payload),
        _event("hitl.responses", 1, "hitl.response_received", {"request_id": rid, "reviewer": "alice", "reason": "?"}),
        _event("hitl.responses", 2, "hitl.response_received", {"request_id": rid, "reviewer": "bob", "approved": "true"}),
        _event("hitl.responses", 3, "hitl.response_received", {"request_id": rid, "reviewer": "carol", "approved": 1}),
    ]
    requests, _problems = hitl_fmt.derive(events)
    req = requests[rid]
    assert len(req.responses) == 3  # every response was read...
    assert req.approvals == [] and req.to_json()["approvals"] == []  # ...and none of them approves
    assert req.state != "answered"
    # the real approval still counts (the test is not blind to approvals)
    events.append(_event("hitl.responses", 4, "hitl.response_received", {"request_id": rid, "reviewer": "bob", "approved": True}))
    assert hitl_fmt.derive(events)[0][rid].approvals == ["bob"]


# ------------------------------------------------------------------ 2. cache/log_stamps.py compare_log
def test_an_edit_of_the_last_record_followed_by_an_append_is_not_an_append(project, cache_env):
    """Mutation: `compare_log` skips the sha256 of the 4 KiB before the cached offset. An in-place edit
    of the last record (same length) followed by an append then passes for a plain append, and the
    stale cached record is served."""
    log = project / NOTES
    check(project)  # the cache now holds the notes log up to its end
    data = log.read_bytes()
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[1]
    assert b"store" in last or b"forget" in last or b"update" in last
    i = len(data) - len(last) - 1 + last.index(b'"', last.index(b'"id"') + 5) + 1  # first byte of the last id
    edited = data[:i] + (b"Z" if data[i:i + 1] != b"Z" else b"Y") + data[i + 1:]
    assert len(edited) == len(data) and i > len(data) - TAIL_HASH_BYTES
    offset = len(data)
    v = stamp_log(str(log), offset, data.count(b"\n"), 0, data[:64])
    with open(log, "r+b") as fh:  # in place: the same inode, the same head
        fh.write(edited)
        fh.write(b'{"type":"forget","forgotten_ids":["nothing-here"],"forgotten_at":"2026-06-01T10:00:00Z"}\n')
    assert compare_log(str(log), v) == "changed"
    check(project)  # and the whole load equals an uncached one


def _cached_validator(project: Path, rel: str) -> dict:
    from harn_ls.cache.store import ProjectCache

    cache = ProjectCache(str(project))
    [(ns, e)] = [(ns, e) for ns, e in cache.manifest["namespaces"].items() if e.get("path") == str(project / rel)]
    return e["validator"]


def test_a_log_replaced_by_a_rewritten_copy_is_not_an_append(project, cache_env):
    """Mutation (found by scripts/mutate.py): `compare_log` skips the device/inode comparison. A log
    rewritten by rename (an editor, a compaction) with a record in the middle changed - outside the
    head and the hashed 4 KiB before the offset - and then appended to passes for an append, and
    the stale middle record is served."""
    from tests.unit.test_cache import append, event

    log = project / NOTES
    append(log, b"".join(event("store", f"bulk-{n}", "agent/notes", n) for n in range(120)))  # ~30 KiB
    check(project)
    data = log.read_bytes()
    v = _cached_validator(project, NOTES)
    middle = data.index(b'"bulk-20"')
    assert len(v["head"]) // 2 < middle < v["offset"] - TAIL_HASH_BYTES
    rewritten = data[:middle] + b'"bulk-2X"' + data[middle + 9:] + event("store", "late", "agent/notes", 999)
    tmp = log.with_name(".events.jsonl.rewrite")
    tmp.write_bytes(rewritten)
    os.replace(tmp, log)
    assert compare_log(str(log), v) == "changed"
    check(project)


def test_an_edit_of_the_first_record_followed_by_an_append_is_not_an_append(project, cache_env):
    """Mutation (found by scripts/mutate.py): `compare_log` skips the comparison of the log's first
    bytes. The first record edited in place (same length, far before the hashed 4 KiB) and then an
    append passes for an append, and the stale first record is served."""
    from tests.unit.test_cache import append, event

    log = project / NOTES
    append(log, b"".join(event("store", f"bulk-{n}", "agent/notes", n) for n in range(120)))
    check(project)
    v = _cached_validator(project, NOTES)
    data = log.read_bytes()
    head = len(v["head"]) // 2
    i = data.index(b'"id"') + 6  # inside the first record's id, within the compared head
    assert i < head and i < v["offset"] - TAIL_HASH_BYTES
    with open(log, "r+b") as fh:
        fh.seek(i)
        fh.write(b"Z" if data[i:i + 1] != b"Z" else b"Y")
        fh.seek(0, os.SEEK_END)
        fh.write(event("store", "late", "agent/notes", 999))
    assert compare_log(str(log), v) == "changed"
    check(project)


def test_a_torn_tail_cut_back_is_a_change(project, cache_env):
    """Mutation (found by scripts/mutate.py): `compare_log` skips its shrink check. A log cached with a
    torn last line (bytes past the parsed offset) and then cut back to that offset is no append."""
    log = project / NOTES
    with open(log, "ab") as fh:
        fh.write(b'{"type":"store","id":"torn-')
    check(project)
    v = _cached_validator(project, NOTES)
    assert v["size"] > v["offset"]  # the torn bytes are past what was parsed
    with open(log, "r+b") as fh:
        fh.truncate(v["offset"])
    assert compare_log(str(log), v) == "changed"
    check(project)


def test_a_plain_append_is_still_an_append(tmp_path):
    """(The other side: the check is not simply "always changed".)"""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"a":1}\n' * 2000)
    data = log.read_bytes()
    v = stamp_log(str(log), len(data), 2000, 0, data[:64])
    with open(log, "ab") as fh:
        fh.write(b'{"b":2}\n')
    assert compare_log(str(log), v) == "appended"


# ------------------------------------------------------------------ 3. formats/state_files.py verify_receipt
def _resign(receipt: dict) -> dict:
    """The receipt's hash and signature made again over its (changed) content, with a fresh key:
    what a forger who rewrote the events, or a signer fed rewritten events, produces."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    unsigned = json.loads(json.dumps(receipt))
    unsigned["chain"]["receipt_hash"] = ""
    unsigned["signatures"] = []
    canonical = orjson.dumps(unsigned)
    receipt["chain"]["receipt_hash"] = "sha256:" + hashlib.sha256(canonical).hexdigest()
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    sig = receipt["signatures"][0]
    sig["public_key_base64"] = base64.b64encode(public).decode()
    sig["key_id"] = "ed25519:" + hashlib.sha256(public).hexdigest()[:32]
    sig["signature_base64"] = base64.b64encode(key.sign(b"harn provenance receipt v1\n" + canonical)).decode()
    return receipt


@pytest.mark.skipif(not CONSTRUCTED.is_dir(), reason="constructed harn-samples not found")
def test_events_rewritten_under_their_old_record_hashes_never_verify():
    """Mutation: `verify_receipt` skips the record_hash check against each event's content. A receipt
    whose events were edited (record hashes, chain and root left as they were) and whose receipt
    hash and signature were made again then verifies."""
    exp = json.loads((CONSTRUCTED / "expected-state.json").read_text())["receipt"]
    genuine = json.loads((CONSTRUCTED / exp["file"]).read_text())
    assert sf.verify_receipt(genuine) == []
    assert sf.verify_receipt(_resign(json.loads(json.dumps(genuine)))) == []  # re-signing alone is fine
    forged = json.loads(json.dumps(genuine))
    events = forged["event_log"]["events"]
    target = next(e for e in events if isinstance(e.get("payload"), dict) and e["payload"])
    field = next(iter(target["payload"]))
    target["payload"][field] = "rewritten after the fact"
    errors = sf.verify_receipt(_resign(forged))
    label = f"{target['topic']}#{target['event_id']}"
    assert f"{label}: record_hash does not match the event's content" in errors


def _sample_receipt() -> dict:
    exp = json.loads((CONSTRUCTED / "expected-state.json").read_text())["receipt"]
    receipt = json.loads((CONSTRUCTED / exp["file"]).read_text())
    events = receipt["event_log"]["events"]
    assert sf.verify_receipt(receipt) == [] and [e["event_id"] for e in events] == [1, 2]
    assert events[0]["topic"] == events[1]["topic"] and events[1]["prev_hash"] == events[0]["record_hash"]
    return receipt


@pytest.mark.skipif(not CONSTRUCTED.is_dir(), reason="constructed harn-samples not found")
def test_an_event_cut_from_the_chain_never_verifies():
    """Mutation (found by scripts/mutate.py): `verify_receipt` skips the prev_hash chain check. The
    first event of a topic cut out, the root of what is left and the signature made again: only the
    chain shows that an event is missing."""
    forged = _sample_receipt()
    events = forged["event_log"]["events"]
    del events[0]
    forged["chain"]["event_root_hash"] = sf._merkle_root([e["record_hash"] for e in events])
    errors = sf.verify_receipt(_resign(forged))
    assert errors == [f"{events[0]['topic']}#2: prev_hash does not match the previous event's record_hash"]


@pytest.mark.skipif(not CONSTRUCTED.is_dir(), reason="constructed harn-samples not found")
def test_a_root_that_does_not_cover_the_events_never_verifies():
    """Mutation (found by scripts/mutate.py): `verify_receipt` skips the Merkle root check. The last
    event cut out (the chain before it stays whole), the receipt signed again over the old root."""
    forged = _sample_receipt()
    del forged["event_log"]["events"][-1]
    assert sf.verify_receipt(_resign(forged)) == ["event_root_hash does not match the events"]


# ------------------------------------------------------------------ 4. actions/checkpoints.py forget_stage
@pytest.fixture
def sample(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "sample-project", dest, symlinks=True)
    return dest


def test_forget_stage_keeps_a_stage_saved_while_it_waited_for_the_lock(sample, lock_holder, monkeypatch):
    """Mutation: `forget_stage` does not read the file again under the lock (it writes back the copy
    it read before waiting), losing a stage Harn saved while we waited. Here the stage is saved
    after our first read, while a second process holds the lock, before it lets go."""
    ws = Workspace.load(str(sample))
    path = sample / ".harn/checkpoints/review.json"
    holder = lock_holder(sample / ".harn/checkpoints/review.lock")
    first_read = threading.Event()
    real_read = ckpt_actions._read_under_lock

    def spy(*args, **kwargs):  # (only tells the test the action has read the file once)
        out = real_read(*args, **kwargs)
        first_read.set()
        return out

    monkeypatch.setattr(ckpt_actions, "_read_under_lock", spy)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(ckpt_actions.forget_stage(ws, "review", "lint")))
    worker.start()
    assert first_read.wait(10)
    assert worker.is_alive()  # waiting for the lock the holder keeps
    # Harn, under its lock, saves a new stage: temp file + rename, as its writer does
    data = json.loads(path.read_text())
    data["late_stage"] = {"saved": "while harn-ls waited"}
    tmp = path.with_name(".review.json.harn-tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)
    holder.stdin.close()
    worker.join(15)
    assert not worker.is_alive()
    after = json.loads(path.read_text())
    assert set(after) == {"collect_diff", "reviewed_pr", "summarize", "late_stage"}
    assert after["late_stage"] == {"saved": "while harn-ls waited"} and result["remaining"] == sorted(after)


# ------------------------------------------------------------------ 5. actions/__init__.py atomic write
@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o775, 0o2770, 0o620])
def test_a_replaced_file_keeps_modes_the_umask_would_strip(sample, umask_022, mode):
    """Mutation: the atomic write does not copy the replaced file's mode and owner onto the new file
    (`_keep_owner_and_mode` dropped). 0600 and 0640 survive umask 022 by chance; these do not."""
    target = sample / ".harn/checkpoints/review.json"
    os.chmod(target, mode)
    atomic_write(str(sample), str(target), "{}")
    assert stat.S_IMODE(target.stat().st_mode) == mode and target.read_text() == "{}"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_a_replaced_file_keeps_its_owner_and_group(sample, umask_022):
    """Mutation: as above; the owner and group of a file another user owns are kept (as root)."""
    target = sample / ".harn/checkpoints/review.json"
    os.chown(target, 4321, 4322)
    os.chmod(target, 0o664)
    atomic_write(str(sample), str(target), "{}")
    st = target.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o664)


# ------------------------------------------------------------------ 6. cache/checkpoint_history.py _enforce_total
def test_the_total_cap_never_evicts_the_newest_version_of_a_pipeline(tmp_path):
    """Mutation: `_enforce_total` may evict any version (not only those before each pipeline's
    newest). Two pipelines whose newest versions alone exceed the total cap keep both."""
    hist = CheckpointHistory(str(tmp_path / "proj"), folder=str(tmp_path / "history"), max_bytes=200)
    body = lambda tag: json.dumps({"stage": tag, "pad": "x" * 90}).encode()  # noqa: E731  (~110 bytes)
    assert hist.record("ingest", body("i1"), seen_at=1.0) == 1
    assert hist.record("review", body("r1"), seen_at=2.0) == 1
    assert hist.record("ingest", body("i2"), seen_at=3.0) == 2  # over the cap: i1 goes, not r1
    assert hist.record("review", body("r2"), seen_at=4.0) == 2  # over the cap: r1 goes
    assert hist.record("ingest", body("i3"), seen_at=5.0) == 3
    assert hist.total_bytes() > hist.max_bytes  # the newest two alone are over it...
    assert [v.n for v in hist.versions("ingest")] == [3] and [v.n for v in hist.versions("review")] == [2]
    assert hist.read("ingest", 3) == body("i3") and hist.read("review", 2) == body("r2")  # ...and both stay
