"""Oracles for Harn's pattern-learning ids and SKILL.md reader (harn-formats §E).

harn-ls never mints proposal ids (Harn's curator does) and never reads the
fields back out of a SKILL.md it wrote, so these copies live here, for the tests.
"""

from __future__ import annotations

from collections.abc import Iterable

from harn_ls.formats.pattern_learning import short_hash
from harn_ls.util.rust_text import RUST_WHITESPACE


def prompt_proposal_id(cluster_key: str) -> str:
    """Mirrors Harn's id for a prompt-cluster proposal: `prompt-<short hash of the cluster key>`."""
    return f"prompt-{short_hash(cluster_key)}"


def tool_proposal_id(sequence_key: str) -> str:
    """Mirrors Harn's id for a tool-sequence proposal: `tools-<short hash of the sequence key>`."""
    return f"tools-{short_hash(sequence_key)}"


def curated_proposal_id(name: str, evidence_ids: Iterable[str]) -> str:
    """Mirrors Harn's id for a curated proposal: `curated-<short hash of name:ev1:ev2...>`."""
    return f"curated-{short_hash(name + ':' + ':'.join(evidence_ids))}"


def frontmatter_value(text: str, key: str) -> str:
    """Mirrors Harn's `pl_frontmatter_value`: how it reads `description` / `when-to-use` back from a SKILL.md.

    The first line (anywhere in the file) whose trimmed text starts with `key:`;
    the rest trimmed, one pair of surrounding quotes removed, then `\\"` -> `"`
    and `\\\\` -> `\\`. Empty when no line matches.
    """
    prefix = key + ":"
    for line in text.split("\n"):
        trimmed = line.strip(RUST_WHITESPACE)
        if trimmed.startswith(prefix):
            value = trimmed[len(prefix):].strip(RUST_WHITESPACE)
            if len(value) >= 2 and ((value[0] == '"' and value[-1] == '"') or (value[0] == "'" and value[-1] == "'")):
                value = value[1:-1]
            return value.replace('\\"', '"').replace("\\\\", "\\")
    return ""
