"""The file path of a client's `file:` URI, or None: the one place a URI from the client becomes a path."""

from __future__ import annotations

from pygls.uris import to_fs_path


def file_path(uri: str) -> str | None:
    """The path of a `file:` URI (its scheme in any case, RFC 3986 §3.1); None for another scheme, one
    `urlparse` refuses (an unclosed IPv6 bracket or a character that folds to '#' in the authority raise
    ValueError there), or one whose path holds a NUL (`%00`: every os call on it raises ValueError): a
    URI the client sends is answered as belonging to no project, never with an internal error."""
    if uri[:5].lower() != "file:":
        return None
    try:
        path = to_fs_path(uri)
    except ValueError:
        return None
    return None if path is None or "\x00" in path else path
