"""The file path of a client's `file:` URI, or None: the one place a URI from the client becomes a path."""

from __future__ import annotations

from pygls.uris import to_fs_path


def file_path(uri: str) -> str | None:
    """The path of a `file:` URI; None for another scheme, or one `urlparse` refuses (an unclosed IPv6
    bracket or a character that folds to '#' in the authority raise ValueError there): a URI the
    client sends is answered as belonging to no project, never with an internal error."""
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri)
    except ValueError:
        return None
