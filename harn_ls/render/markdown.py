"""Markdown helpers: every string that comes from project data goes through one of these.

The project folder is someone else's: a fact claim, a proposal description or a
skill name may be written to look like harn-ls' own structure, to link to a
`command:` URI, to load a remote image or to carry HTML. Data is therefore never
pasted into Markdown as it is:

- `escape_markdown(text)` -- prose (claims, descriptions): every character that could
  take part in Markdown structure where it stands is backslash-escaped (inline delimiters
  always, block markers at a line start, `.`/`:`/`&`/`_` where they would make a domain, a
  scheme, an entity or emphasis), so line starts cannot open a block (heading, list, quote,
  fence, indented code, table, thematic break), and there is no HTML, link or autolink.
  Lossless: `unescape_markdown(escape_markdown(s)) == s`.
- `cell(text)` -- the same on one line (table cells, list items, headings).
- `inline(text)` / `code_cell(text)` -- an identifier as a code span (outside / inside a table).
- `fence(text, lang)` -- a block of data (JSON, file text) in a fence it cannot close.
- `link(label, uri)` -- a link whose target harn-ls made (`harn-state:` / `file:`), label escaped.
- `capped_markdown(text, max_bytes, more_link)` -- escaped prose cut at a byte budget,
  with "… N more bytes" and where to see the rest.

New document renderers should use only these for data (see docs/guarantees.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import orjson

from harn_ls.formats.harn_time import utc_text
from harn_ls.render.limits import DOC_LINE_BYTES, DOC_VALUE_BYTES, more_bytes
from harn_ls.util.message_text import code_span
from harn_ls.util.progress import scaled_bytes
from harn_ls.util.utf8 import cut_utf8

_B64 = re.compile(r"^[A-Za-z0-9+/=\s]{512,}$")
LONG_STRING = 2000

# ASCII punctuation that can start or take part in Markdown structure in CommonMark, GFM or the
# renderers VS Code uses (marked for hovers, markdown-it + linkify + math for the preview): emphasis,
# code, links and images, autolinks (`:` of a scheme, `.` of a domain), HTML and entities, tables,
# headings and setext underlines, lists, quotes, thematic breaks, strikethrough, math, theme icons.
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~=:$&")
# Escaped wherever they are: they open or close inline structure anywhere in a line.
_ALWAYS = frozenset("\\`*{}[]<>|~$")
# Escaped at the start of a line only: block markers (heading, list, quote, setext, break, fence).
_LINE_START = frozenset("#+-=!")
_LEADING = {" ": "&#32;", "\t": "&#9;"}
_ENTITIES = {"&#32;": " ", "&#9;": "\t", "&#13;": "\r"}
_ORDERED = re.compile(r"^\d{1,9}[.)]")


def _escape_line(line: str) -> str:
    out = []
    i = 0
    # Leading blanks would make an indented code block or a continuation: spell them as entities.
    while i < len(line) and line[i] in _LEADING:
        out.append(_LEADING[line[i]])
        i += 1
    first = i
    ordered = _ORDERED.match(line, first)
    n = len(line)
    for j in range(first, n):
        ch = line[j]
        if ch in _ALWAYS:
            out.append("\\" + ch)
            continue
        if ch == "\r":
            out.append("&#13;")
            continue
        if ch not in MARKDOWN_SPECIAL:
            out.append(ch)
            continue
        nxt = line[j + 1] if j + 1 < n else ""
        prev = line[j - 1] if j > first else ""
        if j == first and ch in _LINE_START:
            esc = True
        elif ordered is not None and j == ordered.end() - 1:
            esc = True  # "1." / "1)" would start an ordered list
        elif ch == "_":
            esc = not (prev.isalnum() and nxt.isalnum())  # intraword `_` never opens or closes emphasis
        elif ch == ".":
            esc = nxt.isalnum()  # breaks domains (www.x.y, x.com, a@b.c) for every autolinker
        elif ch == ":":
            esc = nxt == "/"  # breaks scheme autolinks (https://)
        elif ch == "&":
            esc = nxt.isalnum() or nxt == "#"  # an entity (&lt; &#60;) would show another character
        elif ch in "()":
            esc = True  # link destinations, and "1)" lists
        elif ch == "!":
            esc = nxt == "["
        else:
            esc = False  # # + - = mid-line: plain text
        out.append("\\" + ch if esc else ch)
    return "".join(out)


def escape_markdown(text: Any) -> str:
    """`text` as inert Markdown that shows exactly its characters.

    Newlines are kept: a line break inside a paragraph is a hard break (`\\` at the end of the line),
    so lines show as lines; blank lines separate paragraphs. Nothing in the result is a link, an
    image, HTML, emphasis, code or a block other than a paragraph."""
    s = "" if text is None else str(text)
    if "\n" not in s:
        return _escape_line(s)
    lines = s.split("\n")
    out = []
    last = len(lines) - 1
    for n, line in enumerate(lines):
        esc = _escape_line(line)
        if n < last:
            # `\` + newline is a hard line break; only between two non-blank lines (at the end of a
            # paragraph a backslash would show).
            esc += "\\\n" if line and lines[n + 1] else "\n"
        out.append(esc)
    return "".join(out)


def take_escape(text: str, i: int, entities: dict[str, str] = _ENTITIES) -> tuple[str, int] | None:
    """At `text[i]`: (the character a backslash escape or one of `entities` stands for, the index after
    it), or None when no escape starts there. Shared by `unescape_markdown` and the terminal renderer."""
    ch = text[i]
    if ch == "\\" and i + 1 < len(text):
        return text[i + 1], i + 2
    if ch == "&":
        for ent, value in entities.items():
            if text.startswith(ent, i):
                return value, i + len(ent)
    return None


def unescape_markdown(text: str) -> str:
    """The inverse of `escape_markdown` (tests, and clients that want the data back)."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        taken = take_escape(text, i)
        if taken is not None:
            out.append(taken[0])
            i = taken[1]
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _one_line(text: Any, max_bytes: int, shown: Callable[[str], str]) -> str:
    """`shown` of `text` cut at `max_bytes` of data, line breaks as spaces, then "… N more bytes"."""
    s, dropped = cut_utf8("" if text is None else str(text), max_bytes)
    s = s.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return shown(s) + (" *" + more_bytes(dropped) + "*" if dropped else "")


def cell(text: Any, max_bytes: int = DOC_LINE_BYTES) -> str:
    """Data on one line: a table cell, a list item, a heading. Escaped, line breaks shown as
    spaces, cut at `max_bytes` of data with "… N more bytes"."""
    return _one_line(text, max_bytes, _escape_line)


def inline(text: Any, max_bytes: int = DOC_LINE_BYTES) -> str:
    """An identifier or a path as a code span (inert: no links or HTML inside code). Not for tables:
    see `code_cell`."""
    return _one_line(text, max_bytes, code_span)


def code_cell(text: Any, max_bytes: int = DOC_LINE_BYTES) -> str:
    """`inline` inside a GFM table row: a `|` would end the cell even inside a code span, and GFM
    lets `\\|` stand for it there."""
    return inline(text, max_bytes).replace("|", "\\|")


def fence(text: Any, lang: str = "") -> str:
    """A fenced code block that `text` cannot close (the fence is longer than any backtick run in it)."""
    text = "" if text is None else str(text)
    ticks = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    f = "`" * max(3, ticks + 1)
    if not text.endswith("\n"):
        text += "\n"
    return f"{f}{lang}\n{text}{f}\n"


def capped_fence(text: Any, lang: str = "", max_bytes: int = DOC_VALUE_BYTES, more: str = "") -> str:
    """`fence` of at most `max_bytes` of `text`; a cut value is followed by "… N more bytes" and `more`
    (Markdown made by harn-ls, e.g. a `link` to where the whole value is)."""
    text = "" if text is None else str(text)
    head, dropped = cut_utf8(text, max_bytes)
    out = fence(head, lang)
    if dropped:
        out += f"\n*{more_bytes(dropped)}*" + (f" — {more}" if more else "") + "\n"
    return out


def capped_markdown(text: Any, max_bytes: int = DOC_VALUE_BYTES, more: str = "") -> str:
    """`escape_markdown` of at most `max_bytes` of `text`, then "… N more bytes" and `more`."""
    text = "" if text is None else str(text)
    head, dropped = cut_utf8(text, max_bytes)
    out = escape_markdown(head)
    if dropped:
        out += f"\n\n*{more_bytes(dropped)}*" + (f" — {more}" if more else "")
    return out


_LINK_SCHEMES = ("harn-state:", "file:")


def link(label: Any, uri: str) -> str:
    """A Markdown link to a target harn-ls built (`harn-state:` or `file:`); the label is data and escaped.

    Anything else (a `command:` URI, `http:`) is refused: such a target could only come from data."""
    if not uri.startswith(_LINK_SCHEMES):
        raise ValueError(f"refusing to link to {uri[:40]!r}: harn-ls links only to harn-state: and file: targets")
    target = quote(uri, safe="/:?=&%#@~-_.,;!*'+")
    return f"[{cell(label, 300)}]({target})"


def file_link(label: Any, abs_path: str, line: int | None = None) -> str:
    """A link to a file on disk (percent-encoded, so a hostile name cannot end the link)."""
    uri = "file://" + quote(abs_path, safe="/-_.~")
    if line is not None:
        uri += f"#L{int(line)}"
    return f"[{cell(label, 300)}]({uri})"


def human_bytes(n: int) -> str:
    """A size in a document: '512 B', '12.3 KB' (the unit as progress.scaled_bytes picks it)."""
    value, unit = scaled_bytes(n)
    return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"


MAX_ITEMS = 200  # list items and object keys shown per level
MAX_DEPTH = 48  # nesting shown; deeper values are summarised


def summarize_value(value: Any, limit: int = LONG_STRING, _depth: int = 0) -> Any:
    """Replace base64 blobs, very long strings, long lists and objects and deep nesting, so a
    document stays readable and small whatever the value is."""
    if isinstance(value, str):
        if len(value) > 512 and _B64.match(value[:4096]):
            return f"<base64, {human_bytes(len(value))} omitted>"
        head, dropped = cut_utf8(value, limit)
        return head + " " + more_bytes(dropped) if dropped else value
    if isinstance(value, (dict, list)) and _depth >= MAX_DEPTH:
        return f"<{'object' if isinstance(value, dict) else 'list'} nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for n, (k, v) in enumerate(value.items()):
            if n == MAX_ITEMS:
                out[f"<{len(value) - MAX_ITEMS} more keys>"] = None
                break
            out[summarize_value(str(k), 200)] = summarize_value(v, limit, _depth + 1)
        return out
    if isinstance(value, list):
        items = [summarize_value(v, limit, _depth + 1) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"<{len(value) - MAX_ITEMS} more items>")
        return items
    return value


def pretty_json(value: Any, limit: int = LONG_STRING) -> str:
    try:
        return orjson.dumps(summarize_value(value, limit), option=orjson.OPT_INDENT_2).decode()
    except (TypeError, RecursionError):
        return cut_utf8(repr(value), DOC_VALUE_BYTES)[0]


def short_text(text: Any, n: int = 80) -> str:
    """One line of at most `n` characters (plain text: escape it before it goes into Markdown)."""
    raw = str(text or "")
    s = " ".join(raw[: n * 4 + 16].split())
    return s if len(s) <= n and len(raw) <= n * 4 + 16 else s[: n - 1] + "…"


_EPOCH = re.compile(r"^\d{9,13}(\.\d+)?$", re.ASCII)


def display_time(value: Any) -> str:
    """Run records mix RFC 3339 strings and epoch seconds or milliseconds (numbers or strings):
    one form, `YYYY-MM-DD HH:MM:SS` (UTC), read by `harn_time.utc_text`. Anything that is no
    time a clock can show (`1e400`, `nan`, a word) comes back as written, cut to 19 characters."""
    if value is None or value == "":
        return ""
    shown = utc_text(value)
    return shown if shown is not None else str(value)[:19]


def moment(value: Any) -> Any:
    """A timestamp for people: epoch seconds (or milliseconds) as UTC time with the raw number kept.

    Run records written by some Harn mirrors hold `started_at` as epoch seconds; anything else
    (RFC 3339 text, None) is returned unchanged.
    """
    text = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not _EPOCH.match(text):
        return value
    return f"{display_time(text)} UTC (epoch {text})"
