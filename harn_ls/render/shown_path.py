"""How documents and `inspect` show a path: one spelling everywhere, in a module that loads nothing
(`inspect --json` prints through it without the Markdown and URI helpers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace


def shown_path(ws: Workspace, path: str) -> str:
    """`path` relative to the project when inside it, else as it is (an empty path stays empty)."""
    rel = ws.relpath(path) if path else None
    return rel if rel is not None else path
