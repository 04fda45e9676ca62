"""Issue 12 item 10: honest trust labels for skill signatures.

Before: a cloned project that ships its own signer key (`harn.toml` `[skills] signer_registry_url =
"signers"` plus `signers/<fingerprint>.pub`) got its skill labelled "verified" in the tree, the skill
document and `inspect`. After: "signed by a key this project ships" (and not `trusted`); a registry the
project points outside itself is ignored with a problem.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harn_ls.formats import paths as paths_mod  # noqa: E402
from harn_ls.formats import skills as sk  # noqa: E402
from harn_ls.model.workspace import Workspace  # noqa: E402
from harn_ls.render import RenderSettings, render_uri  # noqa: E402
from harn_ls.render.inspect import inspect_json  # noqa: E402

SKILL = "---\nname: deploy\nshort: Deploy to production\ndescription: Deploys to production\n---\nRun the deploy script.\n"


class Key:
    def __init__(self) -> None:
        self.private = Ed25519PrivateKey.generate()
        pub = self.private.public_key()
        raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.fingerprint = hashlib.sha256(raw).hexdigest()
        self.pem = pub.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def put(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{self.fingerprint}.pub").write_bytes(self.pem)

    def sign(self, skill: Path) -> None:
        data = skill.read_bytes()
        Path(str(skill) + ".sig").write_text(json.dumps({
            "schema": sk.SIG_SCHEMA, "signed_at": "2026-04-20T01:53:11Z", "signer_fingerprint": self.fingerprint,
            "ed25519_sig_base64": base64.b64encode(self.private.sign(data)).decode(),
            "skill_sha256": hashlib.sha256(data).hexdigest()}, indent=2))


def _project(tmp_path: Path, registry: str | None) -> tuple[Path, Path, Key]:
    proj = tmp_path / "proj"
    skill = proj / ".harn" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    key = Key()
    key.sign(skill)
    (proj / "harn.toml").write_text(f'[skills]\nsigner_registry_url = "{registry}"\n' if registry else "")
    return proj, skill, key


def _load(proj: Path, home: Path) -> Workspace:
    ws = Workspace(paths_mod.resolve(str(proj), env={}, home=str(home)))
    ws.rescan()
    return ws


def test_key_shipped_by_the_project_is_not_verified(tmp_path):
    proj, _, key = _project(tmp_path, "signers")
    key.put(proj / "signers")  # the repository vouches for itself
    ws = _load(proj, tmp_path / "home")
    sig = ws.skills.get("deploy").signature
    assert sig.status == sk.STATUS_VERIFIED  # the cryptography checks out (Harn's own status)...
    assert sig.key_source == "project" and not sig.trusted  # ...but nothing the user trusts vouches for it
    assert sig.label == "signed by a key this project ships"
    doc = render_uri(ws, "harn-state:/skills/deploy.md", RenderSettings())
    assert "signed by a key this project ships" in doc and "verified" not in doc
    index = render_uri(ws, "harn-state:/index.md", RenderSettings())
    assert "signature signed by a key this project ships" in index and "signature verified" not in index
    row = next(s for rows in inspect_json(ws)["skills"].values() for s in rows if s["id"] == "deploy")
    assert row["signature_label"] == "signed by a key this project ships"


def test_key_the_user_trusts_is_verified(tmp_path):
    proj, _, key = _project(tmp_path, "signers")
    home = tmp_path / "home"
    key.put(home / ".harn" / "trusted-signers")
    key.put(proj / "signers")  # shipped too: the user's own copy decides
    ws = _load(proj, home)
    sig = ws.skills.get("deploy").signature
    assert (sig.status, sig.key_source, sig.trusted, sig.label) == (sk.STATUS_VERIFIED, "user", True, "verified")


def test_registry_outside_the_project_is_ignored(tmp_path):
    evil = tmp_path / "proj-evil" / "signers"
    proj, _, key = _project(tmp_path, "../proj-evil/signers")
    key.put(evil)
    ws = _load(proj, tmp_path / "home")
    sig = ws.skills.get("deploy").signature
    assert sig.status == sk.STATUS_MISSING_SIGNER and not sig.trusted
    probs = [p for p in ws.problems() if p.code == sk.CODE_ROOT_OUTSIDE]
    assert len(probs) == 1 and "signer_registry_url '../proj-evil/signers' is outside the project" in probs[0].message
