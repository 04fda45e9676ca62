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

from typing import Any

from harn_ls.render.limits import cut_utf8

QUOTE_BYTES = 300  # one value inside a message (raw bytes, before escaping)

# Invisible characters that can reorder or hide what a message shows (bidi overrides and
# isolates, zero-width spaces, line/paragraph separators, BOM): shown as `\uXXXX`.
_HIDDEN = frozenset("\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_AFTER_BRACKET = frozenset("([:")  # `](` inline link, `][` reference link, `]:` definition


def _visible(ch: str, keep_newlines: bool) -> str:
    code = ord(ch)
    if ch == "\n" and keep_newlines:
        return ch
    if code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
        return _SHORT.get(ch, f"\\x{code:02x}")
    if ch in _HIDDEN:
        return f"\\u{code:04x}"
    return ch


def _opens_tag_or_autolink(s: str, i: int) -> bool:
    """`<` at `s[i]` followed by what starts an autolink (`<scheme:` / `<user@`) or HTML (`<a`, `</`, `<!`, `<?`)."""
    if i + 1 >= len(s):
        return False
    nxt = s[i + 1]
    return nxt in "/!?" or (nxt.isascii() and nxt.isalpha())


def defuse(text: Any, keep_newlines: bool = True) -> str:
    """`text` with every link, autolink and HTML tag broken, for every client at once (see the
    module docstring). Only backslashes are added and hidden characters made visible, so the
    message still reads as written; applying it twice changes nothing more."""
    s = "" if text is None else str(text)
    out: list[str] = []
    backslashes = 0  # consecutive backslashes just before this character
    prev = ""
    for i, ch in enumerate(s):
        shown = _visible(ch, keep_newlines)
        if shown != ch:
            out.append(shown)
            backslashes = 0
            prev = ch
            continue
        if ch in _AFTER_BRACKET and prev == "]":
            out.append("\\")
        elif ch == "<" and backslashes % 2 == 0 and _opens_tag_or_autolink(s, i):
            out.append("\\")
        out.append(ch)
        backslashes = backslashes + 1 if ch == "\\" else 0
        prev = ch
    return "".join(out)


def code_span(s: str) -> str:
    """`s` as one Markdown code span: a fence longer than any backtick run in it, padded when it
    starts or ends with a backtick or is all blanks (shared with render/markdown.py `inline`)."""
    longest = run = 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * (longest + 1)
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
