"""Markdown for every `harn-state:` document, shared by the server and the CLI.

A URI only names things in the loaded model (a namespace, a fact id, a run
id); nothing here opens a path taken from a URI, so `harn-state:` cannot be
used to read arbitrary files.

The URI helpers live in `render/uri.py` (a leaf); renderers import them from there,
never from this package, so `harn_ls.render` is not part of any import cycle.
"""

from __future__ import annotations

from harn_ls.render.uri import SCHEME, RenderSettings, StateUri, UriError, make_uri, parse_uri

__all__ = ["SCHEME", "RenderSettings", "StateUri", "UriError", "make_uri", "parse_uri", "render_uri"]


def render_uri(ws, uri: str, settings: RenderSettings | None = None) -> str:
    """The Markdown of one `harn-state:` document, at most 1 MB."""
    # start-up: the document renderers (timeline, charts, transcripts) load on the first document, not with make_uri
    from harn_ls.render.documents import render_uri as render_document

    return render_document(ws, uri, settings)
