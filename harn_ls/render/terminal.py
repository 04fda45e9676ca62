"""Text for a terminal: what the CLI prints.

Two jobs, both pure:

* `safe_for_terminal` makes data text harmless on a terminal. A memory record,
  a fact claim or a skill name can carry ESC sequences (clear the screen, set
  the window title, OSC 52 writes the clipboard), other C0/C1 controls, or bidi
  overrides that make a line read differently from what it holds ("Trojan
  source"). Each such character is printed as a visible `\\uXXXX` escape, the
  same spelling a JSON string uses, so `--json` output (which never holds raw
  controls) stays valid JSON and decodes to the same text.
* `markdown_to_text` turns the Markdown documents harn-ls serves into plain
  text for `--format text`: backslash escapes and our entities undone, code
  spans unwrapped, emphasis markers dropped, `[label](uri)` as `label <uri>`,
  `<details>`/`<summary>` folding as plain lines. Structure is ours; the text
  between it comes out as it was written (and then goes through
  `safe_for_terminal`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from collections.abc import Iterable

# bidi embeddings/overrides/isolates and marks, line/paragraph separators: they change how a
# line reads without being visible; the rest of category Cf (ZWJ in emoji, soft hyphen) is kept
_INVISIBLE_REORDERING = frozenset(
    "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
)


# C0 controls but tab and newline, DEL, C1 controls, and the invisible reordering characters
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(sorted(_INVISIBLE_REORDERING)) + "]")


def safe_for_terminal(text: str) -> str:
    """`text` with every control character (but newline and tab) and bidi control as `\\uXXXX`."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


class TerminalSafeWriter:
    """A text stream wrapper: everything written goes through `safe_for_terminal`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.wrapped = stream

    def write(self, text: str) -> int:
        self._stream.write(safe_for_terminal(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer...: the wrapped stream's
        return getattr(self._stream, name)


_ENTITIES = {"&#32;": " ", "&#9;": "\t", "&#13;": "\r", "&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"'}
_SUMMARY = re.compile(r"^\s*<summary>(.*)</summary>\s*$")
_FOLD_TAGS = re.compile(r"^\s*</?details( open)?>\s*$")


def _inline_to_text(line: str) -> str:
    # start-up: render/markdown.py (urllib.parse, orjson) loads for text output only: every CLI command
    # loads this module for its terminal-safe stream
    from harn_ls.render.markdown import take_escape

    out: list[str] = []
    i, n = 0, len(line)
    link_starts: list[int] = []  # positions in `out` of an unescaped `[` (dropped if it opens a link)
    no_closer: set[int] = set()
    while i < n:
        ch = line[i]
        taken = take_escape(line, i, _ENTITIES) if ch in "\\&" else None
        if taken is not None:
            out.append(taken[0])
            i = taken[1]
        elif ch == "`":
            j = i
            while j < n and line[j] == "`":
                j += 1
            run = j - i
            fence = line[i:j]
            # A run length with no closer after some point has none after any later point either:
            # remembered, so a line of unclosed runs is scanned once, not once per run.
            end = -1 if run in no_closer else line.find(fence, j)
            while end != -1 and end + run < n and line[end + run] == "`":  # a longer run is not the closer
                end = line.find(fence, end + run + 1)
            if end == -1:
                no_closer.add(run)
                out.append(fence)
                i += run
                continue
            body = line[i + run:end]
            if len(body) >= 2 and body[0] == " " and body[-1] == " " and body.strip(" "):
                body = body[1:-1]
            out.append(body)
            i = end + run
        elif ch == "*":  # emphasis: data text never holds a bare `*` (escape_markdown escapes it)
            i += 1
        elif ch == "[":
            link_starts.append(len(out))
            out.append("[")
            i += 1
        elif ch == "]" and link_starts and line.startswith("](", i):
            close = line.find(")", i + 2)
            if close == -1:
                out.append(ch)
                i += 1
                continue
            out[link_starts.pop()] = ""  # a link's `[` is not text
            uri = line[i + 2:close]
            out.append(f" <{uri}>")
            i = close + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)  # a `[` that never closed a link stays as text


def markdown_to_text(markdown: str) -> str:
    """Plain text of one of our Markdown documents (see the module docstring)."""
    lines_out: list[str] = []
    in_fence = ""
    for line in markdown.split("\n"):
        stripped = line.lstrip(" ")
        if in_fence:
            if stripped.startswith(in_fence) and not stripped[len(in_fence):].strip("`~ "):
                in_fence = ""
                continue
            lines_out.append(line)
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            marker = stripped[0]
            in_fence = stripped[: len(stripped) - len(stripped.lstrip(marker))]
            continue
        if _FOLD_TAGS.match(line):
            continue
        summary = _SUMMARY.match(line)
        if summary:
            lines_out.append("▸ " + _inline_to_text(summary.group(1)))
            continue
        lines_out.append(_inline_to_text(line))
    return "\n".join(lines_out)
