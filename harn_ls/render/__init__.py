"""Markdown for every `harn-state:` document, shared by the server and the CLI.

A URI only names things in the loaded model (a namespace, a fact id, a run
id); nothing here opens a path taken from a URI, so `harn-state:` cannot be
used to read arbitrary files.

The URI helpers live in `render/uri.py` (a leaf); renderers import them from there,
never from this package, so `harn_ls.render` is not part of any import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace
    from harn_ls.render.uri import SCHEME, RenderSettings, StateUri, UriError, make_uri, parse_uri

__all__ = ["SCHEME", "RenderSettings", "StateUri", "UriError", "make_uri", "parse_uri", "render_uri"]
_URI_NAMES = frozenset(__all__) - {"render_uri"}


def __getattr__(name: str) -> object:
    """The URI helpers, re-exported from render/uri.py on first use: a CLI command that only prints
    through render/terminal.py (inspect --json) never loads them (dataclasses, urllib.parse)."""
    if name not in _URI_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # start-up: render/uri.py (~10 ms) loads on the first URI helper asked for, not with the package
    from harn_ls.render import uri

    return getattr(uri, name)


def render_uri(ws: Workspace, uri: str, settings: RenderSettings | None = None) -> str:
    """The Markdown of one `harn-state:` document, at most 1 MB."""
    # start-up: the document renderers (timeline, charts, transcripts) load on the first document, not with make_uri
    from harn_ls.render.documents import render_uri as render_document

    return render_document(ws, uri, settings)
