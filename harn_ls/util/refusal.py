"""Why an action will not run (pure): the refusal every planner and writer raises, and the
check that a target stays inside the project once symlinks are resolved. Reads only."""

from __future__ import annotations

import os

from harn_ls.util.message_text import quote


class ActionFailed(Exception):
    """An action was refused or failed; nothing (or nothing partial) was written."""


def ensure_inside(project_root: str, path: str) -> str:
    """Refuse a target that would leave the project once symlinks are resolved."""
    real_root = os.path.realpath(project_root)
    # Resolve the deepest existing ancestor: a symlinked folder pointing outside is caught
    # even when the file itself does not exist yet.
    probe = os.path.abspath(path)
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    real_probe = os.path.realpath(probe)
    rest = os.path.relpath(os.path.abspath(path), probe)
    real = os.path.normpath(os.path.join(real_probe, rest)) if rest != "." else real_probe
    if real != real_root and not real.startswith(real_root + os.sep):
        raise ActionFailed(f"refused: {quote(path)} resolves outside the project ({quote(real)})")
    return real
