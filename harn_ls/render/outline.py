"""The outline of a Markdown text: its ATX headings (`#` to `######`) outside fenced code, each with
the lines its section spans. Pure; the document symbols of `harn-state:` documents and of the
Markdown state files (SKILL.md, ...) come from it (lsp/document_symbols.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harn_ls.render.limits import LABEL_BYTES, one_line
from harn_ls.render.terminal import markdown_to_text
from harn_ls.util.text_positions import LINE_BREAK_RE

MAX_HEADINGS = 2000  # a hostile file of headings: the outline is cut, the document still opens
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@dataclass(frozen=True)
class Heading:
    """One ATX heading and the lines of its section."""

    level: int  # 1..6
    title: str  # plain one-line text (Markdown escapes undone), capped
    line: int  # 0-based line of the heading
    end_line: int  # 0-based last line of its section (before the next heading of its level or above)


def outline(text: str, limit: int = MAX_HEADINGS) -> list[Heading]:
    lines = LINE_BREAK_RE.split(text)
    found: list[tuple[int, str, int]] = []
    fence: str | None = None
    for n, line in enumerate(lines):
        f = _FENCE.match(line)
        if fence is not None:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) and not line.strip()[len(f.group(1)):]:
                fence = None
            continue
        if f:
            fence = f.group(1)
            continue
        m = _ATX.match(line)
        if m:
            title = one_line(markdown_to_text(m.group(2) or "").strip(), LABEL_BYTES) or "(untitled)"
            found.append((len(m.group(1)), title, n))
            if len(found) >= limit:
                break
    last = len(lines) - 1
    while last > 0 and not lines[last].strip():
        last -= 1
    ends = [last] * len(found)
    open_: list[int] = []  # indexes of the headings whose section is still open, levels rising
    for i, (level, _title, line) in enumerate(found):
        while open_ and found[open_[-1]][0] >= level:
            ends[open_.pop()] = line - 1
        open_.append(i)
    return [Heading(level, title, line, max(line, end)) for (level, title, line), end in zip(found, ends, strict=True)]
