"""SKILL.md.sig envelopes checked exactly like Harn's `verify_skill` (§F.3)."""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from harn_ls.formats.parse_limits import loads_json

from .common import (
    MAX_KEY_BYTES,
    MAX_SIG_BYTES,
    SIG_SCHEMA,
    STATUS_INVALID_SIGNATURE,
    STATUS_MISSING_SIGNATURE,
    STATUS_MISSING_SIGNER,
    STATUS_UNTRUSTED_SIGNER,
    STATUS_VERIFIED,
    _read_bounded,
)

# --------------------------------------------------------------------------
# Signatures (§F.3)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


@dataclass(frozen=True)
class SignatureStatus:
    """Whether a skill's signature verifies, and who signed it."""

    status: str  # verified | missing_signature | invalid_signature | missing_signer | untrusted_signer
    signer_fingerprint: str | None = None
    error: str | None = None
    signed_at: str | None = None
    signed: bool = False  # Harn's provenance `signed` flag (hash matched, signer named)
    signature_path: str = ""
    # Where the signer's key came from: "user" (~/.harn/trusted-signers), "project" (a signer registry the
    # project's own harn.toml names: the repository vouches for itself), "registry" (a registry the user chose).
    key_source: str = ""

    @property
    def trusted(self) -> bool:
        """Verified against a key the user trusts (a key the project ships proves nothing)."""
        return self.status == STATUS_VERIFIED and self.key_source != "project"

    @property
    def label(self) -> str:
        """What to show: never "verified" for a key that came with the repository itself."""
        if self.status == STATUS_VERIFIED and self.key_source == "project":
            return "signed by a key this project ships"
        return self.status.replace("_", " ")


_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_ENVELOPE_FIELDS = ("schema", "signed_at", "signer_fingerprint", "ed25519_sig_base64", "skill_sha256")


def _load_envelope(raw: bytes) -> dict[str, str]:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out and key in _ENVELOPE_FIELDS:
                raise ValueError(f"duplicate field `{key}`")  # serde rejects these
            out[key] = value
        return out

    value = loads_json(raw.decode("utf-8"), object_pairs_hook=no_duplicates)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    for name in _ENVELOPE_FIELDS:
        if name not in value:
            raise ValueError(f"missing field `{name}`")
        if not isinstance(value[name], str):
            raise ValueError(f"field `{name}` must be a string")
    return value


def _load_public_key(fingerprint: str, dirs: Sequence[str]
                     ) -> tuple[tuple[Ed25519PublicKey, str] | None, str | None]:
    """(key or None, error or None). A key file that does not parse is an error."""
    # start-up: cryptography (OpenSSL bindings, ~40 ms) loads only when a skill is signed
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    for directory in dirs:
        candidate = os.path.join(directory, fingerprint + ".pub")
        if not os.path.isfile(candidate):
            continue
        try:
            key = load_pem_public_key(_read_bounded(candidate, MAX_KEY_BYTES))
        except (OSError, ValueError, TypeError) as exc:
            return None, f"failed to parse {candidate}: {exc}"
        if not isinstance(key, Ed25519PublicKey):
            return None, f"failed to parse {candidate}: not an Ed25519 public key"
        return (key, directory), None
    return None, None


def verify_signature(
    skill_bytes: bytes,
    sig_path: str,
    trusted_signers_dir: str | None,
    trusted_signers: Sequence[str] = (),
    *,
    registry_dir: str | None = None,
    registry_is_project: bool = True,
) -> SignatureStatus:
    """Harn's `verify_skill`, same check order and statuses (§F.3).

    `registry_is_project`: the registry was named by the project's own harn.toml, so a signature that
    verifies only against one of its keys gets `key_source="project"` (not trusted, labelled so).

    `trusted_signers` is the skill's own allowlist (empty = any trusted key).
    `registry_dir` is a local-path signer registry (`signer_registry_url`
    that is a path or file:// URL); HTTP registries are never fetched.
    """
    # start-up: cryptography (OpenSSL bindings, ~40 ms) loads only when a skill is signed
    from cryptography.exceptions import InvalidSignature

    try:
        raw = _read_bounded(sig_path, MAX_SIG_BYTES)
    except FileNotFoundError:
        return SignatureStatus(STATUS_MISSING_SIGNATURE, signature_path=sig_path)
    except (OSError, ValueError) as exc:
        return SignatureStatus(
            STATUS_INVALID_SIGNATURE, error=f"failed to read signature {sig_path}: {exc}", signature_path=sig_path
        )
    try:
        envelope = _load_envelope(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return SignatureStatus(
            STATUS_INVALID_SIGNATURE,
            error=f"{sig_path} is not valid {SIG_SCHEMA} JSON: {exc}",
            signature_path=sig_path,
        )
    fingerprint = envelope["signer_fingerprint"]
    signed_at = envelope["signed_at"]

    key_source = ""

    def status(code: str, error: str | None = None, signed: bool = False) -> SignatureStatus:
        return SignatureStatus(code, fingerprint, error, signed_at, signed, sig_path, key_source)

    if envelope["schema"] != SIG_SCHEMA:
        return status(STATUS_INVALID_SIGNATURE, f"{sig_path} declares unsupported schema {envelope['schema']}")
    if envelope["skill_sha256"] != sha256(skill_bytes).hexdigest():
        return status(
            STATUS_INVALID_SIGNATURE,
            f"{sig_path} does not match the current contents of the skill (modified after signing)",
        )
    # The fingerprint becomes a file name: refuse anything but 64 hex digits
    # so a hostile .sig cannot point us at ../../somewhere.pub.
    dirs = [d for d in (trusted_signers_dir, registry_dir) if d]
    key = None
    if _HEX64.match(fingerprint):
        found, key_error = _load_public_key(fingerprint, dirs)
        if found is not None:
            key, key_dir = found
            key_source = "user" if key_dir == trusted_signers_dir else ("project" if registry_is_project else "registry")
    else:
        key_error = None
    if key_error:
        return status(STATUS_INVALID_SIGNATURE, key_error, signed=True)
    if key is None:
        where = trusted_signers_dir or "the trusted-signers directory"
        return status(
            STATUS_MISSING_SIGNER,
            f"signed by {fingerprint}, but {fingerprint}.pub is not present in {where}",
            signed=True,
        )
    try:
        signature = base64.b64decode(envelope["ed25519_sig_base64"].encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        return status(STATUS_INVALID_SIGNATURE, f"signature is not valid base64: {exc}", signed=True)
    if len(signature) != 64:
        return status(
            STATUS_INVALID_SIGNATURE,
            f"signature is not valid Ed25519 bytes: expected 64 bytes, got {len(signature)}",
            signed=True,
        )
    try:
        key.verify(signature, skill_bytes)
    except InvalidSignature:
        return status(STATUS_INVALID_SIGNATURE, f"{sig_path} failed Ed25519 verification", signed=True)
    allowed = set(trusted_signers)
    if allowed and fingerprint not in allowed:
        return status(
            STATUS_UNTRUSTED_SIGNER,
            f"signed by {fingerprint}, which is not in the skill's trusted_signers allowlist",
            signed=True,
        )
    return status(STATUS_VERIFIED, signed=True)
