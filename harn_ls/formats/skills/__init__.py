"""SKILL.md files: frontmatter, discovery across layers, signatures (harn-formats §F, §E.3).

Reading never raises on bad data: every defect becomes a `Problem` on the
`Skill` (or on the `SkillInventory` for things found while walking roots).
The only writer here is `render_learned_skill`, which returns text for the
accept action to write.

Decisions where the spec is silent (see also the docstrings):

* YAML is parsed with PyYAML but with YAML 1.2 core-schema scalars, because
  Harn uses serde_yaml: `yes`/`no`/`on`/`off` and dates stay strings, `0777`
  is decimal, `<<` is an ordinary key.
* Field shapes follow serde's strictness: a number where a string is
  expected is an error (Harn then skips the skill); `null` is accepted for
  optional strings and for list/map fields (serde_yaml reads it as empty)
  but not for `name`/`short`/`description` or booleans.
* Exact duplicate keys are errors (serde_yaml rejects them); a hyphenated
  and an underscored spelling of the same field is a warning, last one wins.
* Skills in the pattern-learning roots (`claude`, `burin`) never take part in
  Harn's shadowing and are judged leniently: Harn's own loader never reads
  them, so what it would reject there is INFO.

Modules: `common` (limits, codes), `frontmatter` (split, hardened YAML),
`validation` (field shapes), `signatures` (.sig), `skill_file` (one SKILL.md),
`discovery` (layers, shadowing), `writer` (learned skills). This package
re-exports their public names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .common import (  # noqa: F401
    CODE_DUPLICATE_KEY,
    CODE_FIELD_TYPE,
    CODE_FIELD_VALUE,
    CODE_INVALID_UTF8,
    CODE_LAYER_DISABLED,
    CODE_MANIFEST,
    CODE_MISSING_SHORT,
    CODE_NO_FRONTMATTER,
    CODE_NOT_MAPPING,
    CODE_ROOT_OUTSIDE,
    CODE_SIGNATURE_INVALID,
    CODE_SIGNATURE_REQUIRED,
    CODE_SIGNER,
    CODE_SYMLINK_OUTSIDE,
    CODE_TOO_LARGE,
    CODE_UNKNOWN_FIELD,
    CODE_UNREADABLE,
    CODE_YAML,
    CODE_YAML_LIMIT,
    HARN_LAYERS,
    MAX_KEY_BYTES,
    MAX_SIG_BYTES,
    MAX_SKILL_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    MISSING_SHORT_MESSAGE,
    PATTERN_LAYERS,
    SIG_SCHEMA,
    STATUS_INVALID_SIGNATURE,
    STATUS_MISSING_SIGNATURE,
    STATUS_MISSING_SIGNER,
    STATUS_UNTRUSTED_SIGNER,
    STATUS_VERIFIED,
)
from .discovery import SkillInventory, discover_skills  # noqa: F401
from .frontmatter import split_frontmatter  # noqa: F401

# Reading a project without skills needs neither the SKILL.md reader (`skill_file`, `signatures`)
# nor PyYAML (`validation`, `writer`): their public names load on first use (PEP 562 __getattr__)
_LAZY = {"SignatureStatus": "signatures", "verify_signature": "signatures", "Skill": "skill_file",
         "parse_skill_file": "skill_file", "parse_frontmatter": "validation", "slugify": "writer",
         "is_valid_skill_name": "writer", "yaml_double_quoted": "writer", "render_learned_skill": "writer"}


if TYPE_CHECKING:  # what __getattr__ gives, for the checker
    from types import ModuleType

    from ..pattern_learning import slugify as slugify  # (writer's name for it)
    from .signatures import SignatureStatus as SignatureStatus
    from .signatures import verify_signature as verify_signature
    from .skill_file import Skill as Skill
    from .skill_file import parse_skill_file as parse_skill_file
    from .validation import parse_frontmatter as parse_frontmatter
    from .writer import is_valid_skill_name as is_valid_skill_name
    from .writer import render_learned_skill as render_learned_skill
    from .writer import yaml_double_quoted as yaml_double_quoted


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    found: ModuleType
    if module == "signatures":
        # start-up: see _LAZY
        from . import signatures as found
    elif module == "skill_file":
        # start-up: see _LAZY
        from . import skill_file as found
    elif module == "validation":
        # start-up: see _LAZY (PyYAML only when frontmatter is parsed)
        from . import validation as found
    elif module == "writer":
        # start-up: see _LAZY (PyYAML only when a learned skill is written)
        from . import writer as found
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(found, name)
    globals()[name] = value  # later look-ups skip this function
    return value


__all__ = [
    "MAX_SKILL_BYTES",
    "MAX_SIG_BYTES",
    "MAX_KEY_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "SIG_SCHEMA",
    "HARN_LAYERS",
    "PATTERN_LAYERS",
    "STATUS_VERIFIED",
    "STATUS_MISSING_SIGNATURE",
    "STATUS_INVALID_SIGNATURE",
    "STATUS_MISSING_SIGNER",
    "STATUS_UNTRUSTED_SIGNER",
    "CODE_UNREADABLE",
    "CODE_INVALID_UTF8",
    "CODE_TOO_LARGE",
    "CODE_YAML",
    "CODE_NOT_MAPPING",
    "CODE_FIELD_TYPE",
    "CODE_MISSING_SHORT",
    "CODE_MANIFEST",
    "CODE_UNKNOWN_FIELD",
    "CODE_SIGNATURE_INVALID",
    "CODE_SIGNER",
    "CODE_SIGNATURE_REQUIRED",
    "CODE_SYMLINK_OUTSIDE",
    "CODE_YAML_LIMIT",
    "CODE_DUPLICATE_KEY",
    "CODE_NO_FRONTMATTER",
    "CODE_LAYER_DISABLED",
    "CODE_FIELD_VALUE",
    "CODE_ROOT_OUTSIDE",
    "MISSING_SHORT_MESSAGE",
    "split_frontmatter",
    "parse_frontmatter",
    "SignatureStatus",
    "verify_signature",
    "Skill",
    "parse_skill_file",
    "SkillInventory",
    "discover_skills",
    "slugify",
    "is_valid_skill_name",
    "yaml_double_quoted",
    "render_learned_skill",
]
