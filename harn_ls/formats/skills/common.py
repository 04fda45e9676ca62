"""Constants, problem codes and small helpers shared by the SKILL.md modules."""

from __future__ import annotations

from harn_ls.util.safe_read import ReadRefused, read_confined

# --------------------------------------------------------------------------
# Constants

MAX_SKILL_BYTES = 1024 * 1024  # refuse to parse bigger SKILL.md files
MAX_SIG_BYTES = 64 * 1024  # a real .sig is ~375 bytes
MAX_KEY_BYTES = 16 * 1024  # a PEM SPKI Ed25519 key is 113 bytes
MAX_YAML_DEPTH = 100  # serde_yaml's own recursion limit is 128
MAX_YAML_NODES = 20_000  # nodes, also after alias expansion (billion-laughs guard); real frontmatter has ~50

SIG_SCHEMA = "harn-skill-sig/v1"

#: Harn loader layers in default priority order (§F.1). `cli` and `host` have
#: no on-disk roots we can see but are valid labels in harn.toml.
HARN_LAYERS = ("cli", "env", "project", "manifest", "user", "package", "system", "host")
#: Roots pattern learning writes/reads (§E.3) — not Harn loader layers.
PATTERN_LAYERS = ("claude", "burin")

STATUS_VERIFIED = "verified"
STATUS_MISSING_SIGNATURE = "missing_signature"
STATUS_INVALID_SIGNATURE = "invalid_signature"
STATUS_MISSING_SIGNER = "missing_signer"
STATUS_UNTRUSTED_SIGNER = "untrusted_signer"

CODE_UNREADABLE = "HL-SKILL-001"
CODE_INVALID_UTF8 = "HL-SKILL-002"
CODE_TOO_LARGE = "HL-SKILL-003"
CODE_YAML = "HL-SKILL-004"
CODE_NOT_MAPPING = "HL-SKILL-005"
CODE_FIELD_TYPE = "HL-SKILL-006"
CODE_MISSING_SHORT = "HL-SKILL-007"
CODE_UNKNOWN_FIELD = "HL-SKILL-008"
CODE_SIGNATURE_INVALID = "HL-SKILL-009"
CODE_SIGNER = "HL-SKILL-010"
CODE_SIGNATURE_REQUIRED = "HL-SKILL-011"
CODE_SYMLINK_OUTSIDE = "HL-SKILL-012"
CODE_YAML_LIMIT = "HL-SKILL-013"
CODE_DUPLICATE_KEY = "HL-SKILL-014"
CODE_NO_FRONTMATTER = "HL-SKILL-015"
CODE_LAYER_DISABLED = "HL-SKILL-016"
CODE_FIELD_VALUE = "HL-SKILL-017"
CODE_MANIFEST = "HL-SKILL-019"  # harn.toml is not valid TOML: its [skills] settings are not applied
CODE_ROOT_OUTSIDE = "HL-SKILL-018"  # a root or registry the project config puts outside the project: ignored

MISSING_SHORT_MESSAGE = "SKILL.md frontmatter requires a non-empty `short` field"



class _TooLarge(ValueError):
    pass


def _read_bounded(path: str, limit: int) -> bytes:
    """Read a regular file up to `limit` bytes; raise OSError/ValueError otherwise.

    Through safe_read: the open itself never blocks (a FIFO swapped in after a stat) and the type is
    checked on the open file. Confinement is the caller's (`confine_to`)."""
    try:
        return read_confined(path, None, limit)
    except ReadRefused as exc:
        if exc.kind == "too-large":
            raise _TooLarge(f"larger than {limit} bytes") from None
        raise ValueError("not a regular file") from None
