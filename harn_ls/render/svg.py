"""Tiny SVG helpers: every data string goes through `esc`, pictures are one line.

A picture is embedded in Markdown as one `<div class="harn-picture">…</div>`
line: an HTML block that ends at the line break, so Markdown never reads inside
it, and a plain-text reader can drop the line (`strip_pictures`).
"""

from __future__ import annotations

import re

MAX_SVG_BYTES = 400_000  # a picture larger than this is replaced by a note

PICTURE_PREFIX = '<div class="harn-picture">'


def esc(text: object) -> str:
    """XML-escape text for an element body or a double- or single-quoted attribute; no raw line breaks."""
    s = "" if text is None else str(text)
    return html_text(re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]", "\ufffd", s))  # not allowed in XML 1.0


def num(x: float) -> str:
    """Compact coordinate."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "?"
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 120:
        return f"{s:.1f} s"
    m, s = divmod(int(round(s)), 60)
    if m < 120:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def fmt_int(n: int | float | None) -> str:
    return "" if n is None else f"{int(n):,}"


def fmt_cost(c: float | None) -> str:
    return "" if c is None else f"${c:.4f}"


def picture(svg: str, alt: str = "") -> str:
    """The Markdown line that shows an SVG (inline, so its <title> hovers work in the rendered view)."""
    if len(svg.encode("utf-8")) > MAX_SVG_BYTES:
        return f"*(picture omitted: larger than {MAX_SVG_BYTES // 1000} KB)*"
    assert "\n" not in svg and "\r" not in svg
    return f'{PICTURE_PREFIX}<!-- {esc(alt).replace("--", "- -")} -->{svg}</div>'


def strip_pictures(markdown: str) -> str:
    """The document for plain-text readers: picture lines removed (their tables stay)."""
    if PICTURE_PREFIX not in markdown:
        return markdown
    out: list[str] = []
    skip_blank = False
    for line in markdown.split("\n"):
        if line.startswith(PICTURE_PREFIX):
            skip_blank = True  # the blank line that followed the picture goes with it
            continue
        if skip_blank and not line.strip():
            skip_blank = False
            continue
        skip_blank = False
        out.append(line)
    return "\n".join(out)


def extract_pictures(markdown: str) -> list[str]:
    """The raw SVGs of a document, in order (for `--format svg`)."""
    out = []
    for line in markdown.split("\n"):
        if line.startswith(PICTURE_PREFIX):
            start = line.find("<svg")
            end = line.rfind("</svg>")
            if start >= 0 and end > start:
                out.append(line[start:end + len("</svg>")])
    return out


_MD_PUNCT = re.compile(r"([\\`*_\[\]|~!])")
# What an autolinker (GFM, markdown-it linkify) turns into a link: a scheme's `://`, a leading `//`
# (protocol-relative), a domain's `.`. Backslash-escaped, as escape_markdown does: the text shows the
# same, but the escape splits the text where a linkifier looks, so no anchor is made.
_AUTOLINK = re.compile(r"(:(?=/)|/(?=/)|\.(?=[^\W_]))")


def md_escape_lines(s: str) -> str:
    """`md_text`'s escapes, line breaks kept (every escape is line-local)."""
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_PUNCT.sub(r"\\\1", s)
    return _AUTOLINK.sub(r"\\\1", s)


def md_text(text: object) -> str:
    """Data text safe in Markdown prose or a table cell: no HTML, no emphasis/links/code, no
    autolinked URL or domain, one line."""
    s = md_escape_lines("" if text is None else str(text))
    return s.replace("\r", " ").replace("\n", " ")


def html_text(text: object) -> str:
    """Data text inside our own one-line HTML (e.g. <details>): markup characters as entities, no raw line breaks."""
    s = "" if text is None else str(text)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#39;")
    return s.replace("\r\n", "&#10;").replace("\n", "&#10;").replace("\r", "&#10;")
