"""Size caps for everything harn-ls sends: one place, pure functions, no Markdown.

Every byte of a project is someone else's: a fact claim, a checkpoint value or a
skill name can be megabytes. Each field harn-ls shows has a budget here, a value
over its budget is cut at a UTF-8 character boundary and ends with
"… N more bytes", and a whole response never exceeds `MAX_RESPONSE_BYTES`.

Cut raw data first, then escape it (escaping grows a string by a bounded factor;
see `harn_ls.render.markdown.escape_markdown`).
"""

from __future__ import annotations

from typing import Any

from harn_ls.util.utf8 import cut_utf8, utf8_len

MAX_RESPONSE_BYTES = 1_000_000  # hover, a document, a tree page, a diagnostics batch, workspace/symbol

# Per-field budgets (bytes of raw data, before escaping).
LABEL_BYTES = 200  # tree item labels, symbol names, lens titles
DESCRIPTION_BYTES = 200  # tree item descriptions, symbol container names
TOOLTIP_BYTES = 4_000  # tree item tooltips
HOVER_VALUE_BYTES = 4_000  # a fact claim in a hover
HOVER_FACTS = 20  # facts shown in one hover (the rest are counted)
MESSAGE_BYTES = 4_000  # one diagnostic message
DOC_VALUE_BYTES = 64_000  # one value (claim, description, JSON value, file text) in a document
DOC_LINE_BYTES = 1_000  # one table cell / list item / heading in a document


def more_bytes(n: int) -> str:
    """The marker that ends every cut value."""
    return f"… {n:,} more bytes"


def cap_text(s: Any, max_bytes: int, more_link: str | None = None) -> str:
    """Plain text of at most `max_bytes` UTF-8 bytes: cut with "… N more bytes" (and where to
    see the rest) when it is longer. For text that is not Markdown (labels, titles, messages)."""
    text = "" if s is None else str(s)
    head, dropped = cut_utf8(text, max_bytes)
    if not dropped:
        return text
    link = f" (full view: {more_link})" if more_link else ""
    # Room for the marker with the largest count it could show (the count only shrinks as the head grows).
    room = max_bytes - utf8_len(" " + more_bytes(utf8_len(text)) + link)
    if room <= 0:
        return cut_utf8(more_bytes(utf8_len(text)), max_bytes)[0]
    head, dropped = cut_utf8(text, room)
    return head + " " + more_bytes(dropped) + link


def one_line(s: Any, max_bytes: int = LABEL_BYTES) -> str:
    """A single line of plain text (tree labels, lens titles, symbol names): whitespace runs become
    one space, other control characters are dropped, then capped with "… N more bytes"."""
    text = "" if s is None else str(s)
    prefix = text[: max_bytes + 64]  # never normalise megabytes only to throw them away
    flat = " ".join("".join(ch if ch.isprintable() or ch.isspace() else " " for ch in prefix).split())
    flat = flat.replace("$(", "$ (")  # VS Code draws `$(name)` in titles, labels and picks as an icon
    if len(prefix) == len(text):
        return cap_text(flat, max_bytes)
    total = utf8_len(text)
    marker_room = utf8_len(" " + more_bytes(total))
    head, _ = cut_utf8(flat, max(0, max_bytes - marker_room))
    return head + " " + more_bytes(total - utf8_len(head))


def cap_response(text: str, limit: int = MAX_RESPONSE_BYTES, note: str | None = None) -> str:
    """A whole response body (document, hover): at most `limit` bytes, ending with `note`."""
    if utf8_len(text) <= limit:
        return text
    if note is None:
        note = f"\n\n{more_bytes(utf8_len(text) - limit)} (harn-ls caps a response at {limit:,} bytes)\n"
    head, _ = cut_utf8(text, limit - utf8_len(note))
    return head + note
