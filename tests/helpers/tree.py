"""Whole-directory snapshots, to prove an action wrote nothing (or exactly what it should)."""

from __future__ import annotations

import os
from pathlib import Path


def snapshot(root: Path) -> dict:
    """Every entry under root: files by content, links by target, dirs by presence (None)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = None
            else:
                out[rel] = p.read_bytes()
    return out
