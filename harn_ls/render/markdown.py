"""Small Markdown helpers: escaping, fences that cannot be broken, summaries of huge values."""

from __future__ import annotations

import re
from typing import Any

import orjson

_B64 = re.compile(r"^[A-Za-z0-9+/=\s]{512,}$")
LONG_STRING = 2000


def cell(text: Any) -> str:
    """Text safe inside one Markdown table cell."""
    s = "" if text is None else str(text)
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def inline(text: Any) -> str:
    s = "" if text is None else str(text)
    s = s.replace("\r", " ").replace("\n", " ")
    ticks = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def fence(text: str, lang: str = "") -> str:
    ticks = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    f = "`" * max(3, ticks + 1)
    if not text.endswith("\n"):
        text += "\n"
    return f"{f}{lang}\n{text}{f}\n"


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def summarize_value(value: Any, limit: int = LONG_STRING) -> Any:
    """Replace base64 blobs and very long strings so a document stays readable and small."""
    if isinstance(value, str):
        if len(value) > 512 and _B64.match(value[:4096]):
            return f"<base64, {human_bytes(len(value))} omitted>"
        if len(value) > limit:
            return value[:limit] + f"… <{human_bytes(len(value) - limit)} more>"
        return value
    if isinstance(value, dict):
        return {k: summarize_value(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > 200:
            return [summarize_value(v, limit) for v in value[:200]] + [f"<{len(value) - 200} more items>"]
        return [summarize_value(v, limit) for v in value]
    return value


def pretty_json(value: Any, limit: int = LONG_STRING) -> str:
    try:
        return orjson.dumps(summarize_value(value, limit), option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(value)


def short_text(text: Any, n: int = 80) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"
