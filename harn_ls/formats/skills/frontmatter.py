"""Splitting a SKILL.md into frontmatter and body (§F.2).

The hardened YAML loader lives in `yaml_core`: splitting needs no YAML, and PyYAML costs
~30 ms to import, which a project without skills never has to pay.
"""

from __future__ import annotations

from harn_ls.util.lean_dataclass import lean_dataclass
from harn_ls.util.rust_text import rust_trim

# --------------------------------------------------------------------------
# Splitting (§F.2, later Harn version)


@lean_dataclass(frozen=True)
class _Split:
    """A SKILL.md split into its frontmatter and body, with the lines they start on."""

    frontmatter: str | None
    body: str
    yaml_line: int  # 1-based file line of the first YAML line (0 = no frontmatter)
    body_line: int  # 1-based file line where the body starts


def _lines_with_ends(text: str) -> list[str]:
    # Split on "\n" only, like Rust's str::lines(); str.splitlines() would also
    # break on \x0b, \x1c, U+2028 ... and disagree with Harn.
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _split(text: str) -> _Split:
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _lines_with_ends(text)
    offset = 0
    opener = -1
    for index, line in enumerate(lines):
        stripped = rust_trim(line)
        if opener < 0:
            if not stripped:
                offset += len(line)
                continue
            if stripped != "---":
                return _Split(None, text, 0, 1)
            opener = index
            offset += len(line)
            fm_start = offset
            continue
        if stripped == "---":
            return _Split(text[fm_start:offset], text[offset + len(line):], opener + 2, index + 2)
        offset += len(line)
    # No opener at all (blank file) or unterminated: the whole file is body.
    return _Split(None, text, 0, 1)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter YAML or None, body) exactly as Harn's later splitter.

    An optional BOM and leading blank lines are skipped; the first non-blank
    line must be `---` after trimming, the next such line closes. CRLF files
    keep their `\\r\\n` inside both parts. No opener, or no closer: `None` and
    the whole (BOM-less) text as body. `---\\n---\\n` gives `""`, not None.
    """
    split = _split(text)
    return split.frontmatter, split.body
