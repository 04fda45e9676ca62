"""Text as Harn's Rust sees it: `char::is_whitespace` (Unicode White_Space) and `str::trim`.

Python's `str.strip()` also strips \\x1c-\\x1f, which Rust keeps: every place that trims or splits
like Harn spells the set out from here."""

from __future__ import annotations

RUST_WHITESPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                   "\u2028\u2029\u202f\u205f\u3000")


def rust_trim(text: str) -> str:
    """`str::trim`: Unicode White_Space stripped from both ends, nothing else."""
    return text.strip(RUST_WHITESPACE)
