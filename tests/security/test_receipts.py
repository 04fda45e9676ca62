"""Issue 27 item 5 and issue 35 ("a receipt's key_id is never tied to its key"): honest receipt labels.

A receipt carries its own public key, so any signature on it verifies against a key the receipt
brought. Before, such a receipt showed "✅ verified" (tree item, `inspect`, document), also one
re-signed with a fresh key that kept the genuine `key_id`. Now:
- signed only by a key the receipt carries: "signed by a key the receipt carries (not by a key you
  trust)" — never "verified";
- a `key_id` that is not `ed25519:` + sha256(its public key)[:16 bytes] is HL-RCPT-003 and the
  receipt "does NOT verify" (Harn's own `verify_receipt` does not check this; harn-ls does, since the
  receipt page tells users to pin the key id);
- "verified" only when a signing key is in `~/.harn/trusted-signers/<sha256 of the key>.pub`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from harn_ls.formats.state_files import key_id_errors, read_receipts, receipt_key_id, verify_receipt
from harn_ls.model.workspace import Workspace
from harn_ls.render import render_uri
from harn_ls.render.inspect import inspect_json, inspect_text
from harn_ls.render.tree_items import TreeOptions, tree_items
from tests.helpers.samples import SAMPLES
from tests.lsp.conftest import REPO, SAMPLE, make_client_fixture

RECEIPTS = SAMPLES / "constructed" / "receipts"
GENUINE = "receipt-019df23b-d93a-7ea5-b96a-7f4325c408b1"
GENUINE_KEY_ID = "ed25519:fe812c12f3ab4ce6ac5db69ac352f906"
pytestmark = pytest.mark.skipif(not RECEIPTS.is_dir(), reason="constructed harn-samples not found")


def serde_text(value) -> str:
    """serde_json's compact text for the values these tests use: Python's, but ryu spells 1e20 without "+"."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("e+", "e")


def resign(receipt: dict, key: Ed25519PrivateKey, key_id: str | None = None) -> dict:
    """The receipt signed again with `key` (Harn's message: domain line + canonical unsigned receipt)."""
    out = json.loads(json.dumps(receipt))
    unsigned = json.loads(json.dumps(out))
    unsigned["chain"]["receipt_hash"] = ""
    unsigned["signatures"] = []
    canonical = serde_text(unsigned)
    pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    sig = key.sign(b"harn provenance receipt v1\n" + canonical.encode())
    out["signatures"] = [{"algorithm": "ed25519", "key_id": key_id or receipt_key_id(pub),
                          "public_key_base64": base64.b64encode(pub).decode(),
                          "signature_base64": base64.b64encode(sig).decode(), "signed_at": "2026-05-04T09:05:01Z"}]
    return out


def make_project(tmp_path: Path) -> tuple[Path, Ed25519PrivateKey]:
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    rdir = proj / ".harn" / "receipts"
    rdir.mkdir(parents=True, exist_ok=True)
    genuine = json.loads((RECEIPTS / f"{GENUINE}.json").read_text())
    fresh = Ed25519PrivateKey.generate()
    (rdir / "receipt-fresh.json").write_text(json.dumps(resign(genuine, fresh)))
    (rdir / "receipt-forged-id.json").write_text(json.dumps(resign(genuine, fresh, GENUINE_KEY_ID)))
    return proj, fresh


def trust(home: Path, key: Ed25519PrivateKey) -> None:
    d = home / ".harn" / "trusted-signers"
    d.mkdir(parents=True, exist_ok=True)
    pub = key.public_key()
    raw = pub.public_bytes(Encoding.Raw, PublicFormat.Raw)
    (d / f"{hashlib.sha256(raw).hexdigest()}.pub").write_bytes(
        pub.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))


def test_key_id_is_tied_to_its_key():
    genuine = json.loads((RECEIPTS / f"{GENUINE}.json").read_text())
    assert verify_receipt(genuine) == [] and key_id_errors(genuine) == []
    pub = base64.b64decode(genuine["signatures"][0]["public_key_base64"])
    assert receipt_key_id(pub) == GENUINE_KEY_ID
    forged = resign(genuine, Ed25519PrivateKey.generate(), GENUINE_KEY_ID)
    assert verify_receipt(forged) == []  # Harn's verifier alone passes it ...
    errs = key_id_errors(forged)  # ... the key id check does not
    assert len(errs) == 1 and GENUINE_KEY_ID in errs[0] and "not the id of its public key" in errs[0]


def test_a_receipt_with_a_float_verifies_as_harn_hashes_it():
    """Harn hashes a receipt's events and the receipt itself over serde_json's compact text, where 1e20 is
    `1e20`; orjson writes `1e+20`, so a genuine receipt holding such a float once read "does NOT verify"."""
    genuine = json.loads((RECEIPTS / f"{GENUINE}.json").read_text())
    assert "e+" not in json.dumps(genuine)  # (serde_text's one replacement touches only the float below)
    receipt = json.loads(json.dumps(genuine))
    events = receipt["event_log"]["events"]
    last = events[-1]
    last["payload"]["cost_usd"] = 1e20
    hdrs = {k: v for k, v in sorted(last["headers"].items()) if k != "harn.provenance.record_hash"}
    wrapper = {"topic": last["topic"], "event_id": last["event_id"], "kind": last["kind"], "payload": last["payload"],
               "headers": hdrs, "occurred_at_ms": last["occurred_at_ms"]}
    assert '"cost_usd":1e20' in serde_text(wrapper)
    last["record_hash"] = "sha256:" + hashlib.sha256(serde_text(wrapper).encode()).hexdigest()
    last["headers"]["harn.provenance.record_hash"] = last["record_hash"]
    level = [e["record_hash"] for e in sorted(events, key=lambda e: (e["topic"], e["event_id"]))]
    while len(level) > 1:
        pairs = [(level[i], level[i + 1] if i + 1 < len(level) else level[i]) for i in range(0, len(level), 2)]
        level = ["sha256:" + hashlib.sha256((a + b).encode()).hexdigest() for a, b in pairs]
    receipt["chain"]["event_root_hash"] = level[0]
    unsigned = json.loads(json.dumps(receipt))
    unsigned["chain"]["receipt_hash"] = ""
    unsigned["signatures"] = []
    receipt["chain"]["receipt_hash"] = "sha256:" + hashlib.sha256(serde_text(unsigned).encode()).hexdigest()
    signed = resign(receipt, Ed25519PrivateKey.generate())
    assert verify_receipt(signed) == []
    signed["event_log"]["events"][-1]["payload"]["cost_usd"] = 2e20  # and a changed float still fails
    assert "record_hash does not match the event's content" in " ".join(verify_receipt(signed))


def test_a_topic_that_is_not_a_string_fails_the_receipt_and_spares_the_others(tmp_path):
    """A receipt event whose topic is a JSON list (unhashable) once raised TypeError out of
    verify_receipt, and read_receipts lost every receipt of the folder. Harn's ReceiptEvent.topic
    is a String: such a receipt fails, validly signed or not, and the genuine one beside it still reads."""
    genuine = json.loads((RECEIPTS / f"{GENUINE}.json").read_text())
    hostile = json.loads(json.dumps(genuine))
    hostile["event_log"]["events"][0]["topic"] = ["agent.events", "x"]
    hostile = resign(hostile, Ed25519PrivateKey.generate())
    errors = verify_receipt(hostile)
    assert "topic is a JSON list, not a string" in " ".join(errors)
    rdir = tmp_path / "proj" / ".harn" / "receipts"
    rdir.mkdir(parents=True)
    (rdir / f"{GENUINE}.json").write_text(json.dumps(genuine))
    (rdir / "receipt-list-topic.json").write_text(json.dumps(hostile))
    problems: list = []
    found = {r.path.rsplit("/", 1)[-1]: r for r in read_receipts(str(rdir), problems, str(tmp_path / "proj"))}
    assert found[f"{GENUINE}.json"].status == "self-signed"
    bad = found["receipt-list-topic.json"]
    assert bad.status == "failed" and any("not a string" in e for e in bad.errors)
    assert [p.code for p in problems] == ["HL-RCPT-002"] and "receipt-list-topic" in problems[0].path


def test_labels_in_tree_inspect_and_document(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    proj, fresh = make_project(tmp_path)
    ws = Workspace.load(str(proj))
    by_file = {os.path.basename(r.path): r for r in ws.event_logs.receipts}
    assert by_file["receipt-fresh.json"].status == "self-signed"
    assert by_file["receipt-forged-id.json"].status == "failed"
    codes = [p.code for p in ws.problems() if p.path.endswith("receipt-forged-id.json")]
    assert codes == ["HL-RCPT-003"]

    items = {it["id"]: it for it in tree_items(ws, "runs", "harnstate", TreeOptions("test.open", 200))}
    fresh_item, forged_item = items["receipt:receipt-fresh"], items["receipt:receipt-forged-id"]
    assert fresh_item["description"] == "signed by a key the receipt carries (not by a key you trust)"
    assert "verified" not in json.dumps(fresh_item).replace("unverified", "")
    assert forged_item["description"] == "does NOT verify"

    lines = [ln for ln in inspect_text(ws).splitlines() if "receipt-" in ln]
    assert any("signed by a key the receipt carries" in ln for ln in lines)
    assert any("does NOT verify" in ln for ln in lines)
    assert not any(" verified" in ln.replace("does NOT verify", "") for ln in lines)
    data = {r["path"]: r for r in inspect_json(ws)["receipts"]}
    assert data[".harn/receipts/receipt-fresh.json"]["status"] == "self-signed"

    doc = render_uri(ws, "harn-state:/receipts/receipt-fresh.md")
    assert "✅" not in doc and "signed by a key the receipt carries" in doc
    forged_doc = render_uri(ws, "harn-state:/receipts/receipt-forged-id.md")
    assert "✅" not in forged_doc and "does NOT verify" in forged_doc and "not the id of its public key" in forged_doc

    # The user pins the fresh key: now (and only now) "verified"; the forged key id stays failed.
    trust(home, fresh)
    ws = Workspace.load(str(proj))
    by_file = {os.path.basename(r.path): r for r in ws.event_logs.receipts}
    assert by_file["receipt-fresh.json"].status == "verified"
    assert by_file["receipt-forged-id.json"].status == "failed"
    assert "✅ verified: signed by a key you trust" in render_uri(ws, "harn-state:/receipts/receipt-fresh.md")


def test_inspect_cli_never_says_verified(tmp_path):
    proj, _ = make_project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run([sys.executable, "-m", "harn_ls", "inspect", str(proj)], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO), HOME=str(home)))
    lines = [ln for ln in done.stdout.splitlines() if "receipt-" in ln and ".harn" not in ln]
    assert any("signed by a key the receipt carries" in ln for ln in lines), done.stdout
    assert not any(" verified" in ln.replace("does NOT verify", "") for ln in lines)


# ------------------------------------------------------------------------------------------ over LSP (stdio)
@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)[0]


client = make_client_fixture()


async def test_tree_and_document_over_lsp(client):
    tree = await client.protocol.send_request_async("harn/tree", {"view": "runs", "parent": "harnstate", "page": 0})
    items = {it.id: it for it in tree.items}
    assert items["receipt:receipt-fresh"].description == "signed by a key the receipt carries (not by a key you trust)"
    assert items["receipt:receipt-forged-id"].description == "does NOT verify"
    from lsprotocol import types

    doc = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/receipts/receipt-forged-id.md"))).text
    assert "✅" not in doc and "HL-RCPT-003" not in doc and "not the id of its public key" in doc
    uri = (client.project / ".harn/receipts/receipt-forged-id.json").as_uri()
    await client.rec.wait_for(lambda: uri in client.diagnostics, 10)
    assert "HL-RCPT-003" in [d.code for d in client.diagnostics[uri]]
