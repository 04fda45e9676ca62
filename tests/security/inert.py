"""A small checker for "data is inert" in harn-ls Markdown (no Markdown library needed).

`prose(md)` drops fenced blocks and code spans (their content is literal in CommonMark); what is
left must contain no structure coming from data: `assert_no_live_markup` finds any unescaped
`<` (HTML, autolinks), any image, and any link whose target harn-ls did not make."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_OUR_LINK = re.compile(r"\]\((harn-state:|file://)[^)\s]*\)")


# harn-ls's own one-line HTML blocks (pictures, folded tool calls): allowed only with these tags,
# no links, and images only from data: URIs. Data inside them is HTML/XML-escaped by the renderer.
_OUR_HTML_LINE = re.compile(r'^(<div class="harn-picture">|<details[ >])')
_OUR_TAGS = {"div", "details", "summary", "pre", "code", "img", "svg", "g", "rect", "line", "path", "text",
             "title", "polyline", "polygon", "circle", "defs", "pattern", "style", "tspan", "br", "span", "b", "em",
             "strong", "desc", "marker", "clippath", "lineargradient", "stop", "use", "small"}


class _OurHtml(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in _OUR_TAGS:
            self.bad.append(f"tag <{tag}>")
        for name, value in attrs:
            v = (value or "").strip().lower()
            if name in ("href", "xlink:href", "action", "formaction") or name.startswith("on"):
                self.bad.append(f"attribute {name}={value!r}")
            if name == "src" and not v.startswith("data:image/"):
                self.bad.append(f"image source {value!r}")
            if v.startswith(("command:", "javascript:")) or (v.startswith(("http:", "https:")) and name != "xmlns"):
                self.bad.append(f"attribute {name}={value!r}")


def check_our_html_line(line: str) -> list[str]:
    parser = _OurHtml()
    parser.feed(line)
    parser.close()
    return parser.bad


def prose(md: str) -> str:
    out = []
    fence = None
    for line in md.split("\n"):
        if fence is None and _OUR_HTML_LINE.match(line):
            bad = check_our_html_line(line)
            assert not bad, f"harn-ls HTML line carries live markup: {bad[:3]}"
            continue
        m = _FENCE.match(line.lstrip())
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            out.append(_drop_code_spans(line))
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
            fence = None
    return "\n".join(out)


def _drop_code_spans(line: str) -> str:
    out = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            out.append(line[i:i + 2])
            i += 2
            continue
        if ch == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            close = line.find("`" * run, i + run)
            while close != -1 and close + run < len(line) and line[close + run] == "`":
                close = line.find("`" * run, close + run + 1)
            if close != -1:
                out.append("CODE")
                i = close + run
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def unescaped(text: str, ch: str) -> list[int]:
    """Positions of `ch` not preceded by an escaping backslash."""
    hits = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == ch:
            hits.append(i)
        i += 1
    return hits


def assert_no_live_markup(md: str, where: str = "") -> None:
    p = prose(md)
    lt = unescaped(p, "<")
    assert not lt, f"{where}: raw '<' (HTML or autolink) at {[p[i:i + 30] for i in lt[:3]]}"
    assert "](command:" not in p, f"{where}: a command: link outside code"
    for i in unescaped(p, "!"):
        assert not p[i + 1:i + 2] == "[", f"{where}: an image: {p[i:i + 40]!r}"
    for i in unescaped(p, "]"):
        if p[i + 1:i + 2] == "(":
            assert _OUR_LINK.match(p, i), f"{where}: a link harn-ls did not make: {p[max(0, i - 20):i + 60]!r}"
    for word in ("http://", "https://", "www."):
        assert word not in p, f"{where}: a bare URL would be auto-linked: {word}"
