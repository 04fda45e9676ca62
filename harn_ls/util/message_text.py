"""Text a client shows as a message (notifications, progress, log lines, `harn/hitlArrived`):
data and setting values in it are inert.

A message is not Markdown, but clients still find links in it: VS Code turns
`[label](command:...)` (and `https:` / `file:` targets) anywhere in a notification's text into
a live link, with no escape syntax (`\\[x\\](command:y)` is still a link there; only what stands
between `]` and `(` matters), and clicking it runs the command, in Restricted Mode too. Other
clients render messages as Markdown (inline, reference and autolinks, raw HTML) or as plain
text. A value from the project (a proposal name, a path, a HITL prompt) or from a workspace
setting (`harnState.skillRoot`) must therefore reach none of these as structure:

- `quote(value)` -- one value inside a message: one line, invisible and direction-changing
  characters shown as escapes, capped, link syntax broken (`defuse`), in a code span. Readable
  in a plain-text client, inert code in a Markdown one, no link in VS Code's notifications.
- `defuse(text)` -- a whole message, applied by the server at the one place each kind of
  message leaves it (`harn_ls.lsp.messages`), so a value that reached a message unquoted
  (an exception's text naming a path) is still no link.

What breaks a link, in every renderer at once: a backslash between `]` and `(` / `[` / `:`
(no inline link, reference link or link definition; VS Code's notification parser needs `](`
adjacent), and before a `<` that could open an autolink or HTML. Nothing is normalized: a
look-alike bracket (`［`, `⁅`) stays what it is, which no renderer reads as syntax.
"""

from __future__ import annotations

import re
from typing import Any

from harn_ls.util.utf8 import cut_utf8

QUOTE_BYTES = 300  # one value inside a message (raw bytes, before escaping)

# Invisible characters that can reorder or hide what a message shows (bidi overrides and
# isolates, zero-width spaces, line/paragraph separators, BOM): shown as `\uXXXX`.
_HIDDEN = frozenset("\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    code = ord(ch)
    if ch in _HIDDEN:
        return f"\\u{code:04x}"
    return _SHORT.get(ch, f"\\x{code:02x}")


_CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if c != 0x0A]
_SPELLED = str.maketrans({ch: _visible(ch) for ch in (*_CONTROLS, *_HIDDEN)})  # keeps line breaks
_SPELLED_ONE_LINE = str.maketrans({ch: _visible(ch) for ch in (*_CONTROLS, *_HIDDEN, "\n")})
# `]` right before `(`, `[` or `:`: an inline link, a reference link, a link definition
_BRACKET_PAIRS = ("](", "][", "]:")
# `<` opening an autolink (`<scheme:`, `<user@`) or HTML (`<a`, `</`, `<!`, `<?`)
_ANGLE = re.compile(r"<(?=[A-Za-z/!?])")


def _escape_angles(s: str) -> str:
    """A backslash before each `_ANGLE` not already escaped: after an even run of backslashes
    (which Markdown reads as literal backslashes). Each run is walked once: linear."""
    out: list[str] = []
    last = 0
    for m in _ANGLE.finditer(s):
        i = j = m.start()
        while j > last and s[j - 1] == "\\":
            j -= 1
        if (i - j) % 2 == 0:
            out += (s[last:i], "\\")
            last = i
    out.append(s[last:])
    return "".join(out)


def defuse(text: Any, keep_newlines: bool = True) -> str:
    """`text` with every link, autolink and HTML tag broken, for every client at once (see the
    module docstring). Only backslashes are added and hidden characters spelled out, so the
    message still reads as written; applying it twice changes nothing more. Linear time."""
    s = "" if text is None else str(text)
    s = s.translate(_SPELLED if keep_newlines else _SPELLED_ONE_LINE)
    if "]" in s:
        for pair in _BRACKET_PAIRS:  # an inserted backslash never makes another pair
            s = s.replace(pair, pair[0] + "\\" + pair[1])
    if "<" in s:
        s = _escape_angles(s)
    return s


def code_span(s: str) -> str:
    """`s` as one Markdown code span: a fence longer than any backtick run in it, padded when it
    starts or ends with a backtick or is all blanks (shared with render/markdown.py `inline`)."""
    ticks = "`" * (max(map(len, re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip(" ") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def quote(value: Any, max_bytes: int = QUOTE_BYTES) -> str:
    """One data or setting value inside a message: one line, capped, inert, in a code span."""
    s = "" if value is None else str(value)
    if not s:
        return "(empty)"
    head, dropped = cut_utf8(s, max_bytes)
    shown = code_span(defuse(head, keep_newlines=False))
    return shown + (f" (… {dropped:,} more bytes)" if dropped else "")


def quote_json(value: Any, max_bytes: int = QUOTE_BYTES) -> str:
    """A setting's value (any JSON value) inside a message: a string as `quote` shows it, anything else
    (null, a number, a list) as its JSON text, quoted the same way."""
    if isinstance(value, str):
        return quote(value, max_bytes)
    # start-up: orjson is loaded by then (settings are parsed from JSON)
    import orjson

    try:
        text = orjson.dumps(value, default=str).decode()
    except orjson.JSONEncodeError:  # (not from JSON: a nested value too deep, a key that is not a string)
        text = str(value)
    return quote(text, max_bytes)
