"""Skill names and the learned-skill writer (§E.3): text for the accept action to write."""

from __future__ import annotations

import re

from yaml.nodes import ScalarNode

from harn_ls.util.rust_text import rust_trim

from ..pattern_learning import slugify  # Harn's one slug rule (skill and tool names)
from ..pattern_learning import yaml_scalar as pl_yaml_scalar  # Harn's SKILL.md field quoting
from .yaml_core import _CoreResolver

# --------------------------------------------------------------------------
# Names and the learned-skill writer (§E.3)

def is_valid_skill_name(name: str) -> bool:
    """Harn accepts a name only when it is non-empty and already its own slug."""
    return bool(name) and slugify(name) == name


def _yaml_printable(ch: str) -> bool:
    code = ord(ch)
    return (
        code in (0x09,)
        or 0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    ) and code != 0xFEFF


_DQ_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0",
               "\x85": "\\N", "\u2028": "\\L", "\u2029": "\\P"}


def yaml_double_quoted(text: str) -> str:
    """A YAML double-quoted scalar that loads back to exactly `text`.

    Escapes `\\` and `"`, every line break (also NEL/LS/PS, which YAML would
    fold) and every non-printable character.
    """
    out = ['"']
    for ch in text:
        if ch in _DQ_ESCAPES:
            out.append(_DQ_ESCAPES[ch])
        elif _yaml_printable(ch):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_PLAIN_TAG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _plain_or_quoted(text: str) -> str:
    """Plain when YAML 1.2 would read it back as this same string, else quoted."""
    # (types-PyYAML leaves BaseResolver.resolve unannotated)
    if _PLAIN_TAG.match(text) and _CoreResolver().resolve(  # type: ignore[no-untyped-call]
            ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str":
        return text
    return yaml_double_quoted(text)


def render_learned_skill(
    name: str,
    description: str,
    when_to_use: str,
    source: str,
    body: str,
    short: str | None = None,
) -> str:
    """SKILL.md text exactly as Harn's `pl_write_skill` writes it (§E.3).

    Byte for byte Harn's writer (pattern_knowledge.harn @0526ba57): frontmatter
    `name` (raw), `description` and `when-to-use` through `pl_yaml_scalar`
    (double quotes, only `\\` and `"` escaped: tabs, ESC and non-ASCII are
    written as they are, which Harn's line-prefix reader reads back exactly),
    `user-invocable: true`, `disable-model-invocation: false`,
    `allowed-tools: []`, `category: Command`, `tags: [learned, <source, _ -> ->]`
    (raw); then a blank line, the trimmed body and a final newline.

    Refused (ValueError naming the field) where Harn's own writer would make a
    file Harn cannot read back: a line break in `description`, `when-to-use`
    or the source tag would split the field over two lines.
    Raises ValueError for a name Harn would refuse (HARN-PATTERN-002).

    `short`, when given, is for a Harn loader layer (`.harn/skills`), which
    Harn's pattern learning never writes: there the file must also load with
    Harn's YAML loader, so `short` goes right after `name` and every text field
    is a fully escaped YAML double-quoted scalar (not Harn's bytes: Harn has no
    writer for that place).
    """
    if not is_valid_skill_name(name):
        raise ValueError(f"HARN-PATTERN-002: invalid skill name {name!r} (must equal its own slug)")
    description = "" if description is None else str(description)
    when_to_use = "" if when_to_use is None else str(when_to_use)
    tag = str(source or "").replace("_", "-")
    for field_name, value in (("description", description), ("when-to-use", when_to_use), ("tags (source)", tag)):
        if "\n" in value:
            raise ValueError(f"refused: the proposal's `{field_name}` contains a line break; Harn's SKILL.md writer "
                             "would split it over two lines and Harn's reader (one line per field) could not read it "
                             "back. Edit the proposal's text first")
    if short is None:
        lines = ["---", f"name: {name}",
                 f"description: {pl_yaml_scalar(description)}",
                 f"when-to-use: {pl_yaml_scalar(when_to_use)}"]
        tags = f"tags: [learned, {tag}]"
    else:
        lines = ["---", f"name: {_plain_or_quoted(name)}", f"short: {yaml_double_quoted(short)}",
                 f"description: {yaml_double_quoted(description)}",
                 f"when-to-use: {yaml_double_quoted(when_to_use)}"]
        tags = f"tags: [learned, {_plain_or_quoted(tag)}]"
    lines += [
        "user-invocable: true",
        "disable-model-invocation: false",
        "allowed-tools: []",
        "category: Command",
        tags,
        "---",
        "",
        rust_trim(str(body or "")),
    ]
    return "\n".join(lines) + "\n"
