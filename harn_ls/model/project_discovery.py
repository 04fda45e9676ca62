"""Which Harn projects a workspace folder holds (issue 29, item 5).

Editors open the repository root as the workspace folder; in a monorepo the Harn project is
below it (`services/agent/harn.toml`). The server serves every project it finds there, each
with its own model. The CLI keeps Harn's own rule (the nearest `harn.toml` at or above the
path, `paths.find_project_root`); this module is only for the server's workspace folders.

A project below the folder is a directory with a `harn.toml`, or with a `.harn/` folder when no
`harn.toml` encloses it (Harn run there keeps its state in that `.harn/`). The folder itself is a
project when a `harn.toml` is at or above it, or it has a `.harn/`. When nothing is found the
folder is served as it is (no state yet: `harn/status` says `hasState false`).

The search is bounded, since the folder is any repository: it never follows a symbolic link,
skips dependency, build and VCS folders, virtualenvs and hidden folders, goes at most
`max_depth` levels down, reads at most `max_dirs` directories and stops at `max_projects`.
Explicit roots (setting `harnState.projectRoots`) replace the search for the folders they are
in; in an untrusted workspace they must stay inside the folder.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from harn_ls.formats.paths import find_project_root
from harn_ls.util.message_text import quote, quote_json
from harn_ls.util.safe_read import is_under

MANIFEST = "harn.toml"
STATE_DIR = ".harn"
# Folders that hold dependencies, build output, caches or VCS data: never a Harn project of
# this repository, and often the biggest trees in it.
SKIPPED_DIRS = frozenset({"node_modules", "target", "venv", "__pycache__", "dist", "build", "bower_components",
                          "site-packages", "vendor"})
VIRTUALENV_MARKER = "pyvenv.cfg"  # any virtualenv, whatever its name
MAX_DEPTH = 6
MAX_DIRS = 4000
MAX_PROJECTS = 32


@dataclass
class FolderProjects:
    """The project roots one workspace folder serves, and what the search could not do."""

    folder: str
    roots: list[str] = field(default_factory=list)
    # one line each: a cap that stopped the search, an explicit root refused or missing
    notes: list[str] = field(default_factory=list)


def discover(folder: str, max_depth: int = MAX_DEPTH, max_dirs: int = MAX_DIRS,
             max_projects: int = MAX_PROJECTS) -> FolderProjects:
    """The projects at, above (the enclosing `harn.toml`) and below `folder`, breadth first."""
    folder = os.path.abspath(folder)
    out = FolderProjects(folder)
    own = find_project_root(folder)
    own_has_manifest = os.path.isfile(os.path.join(own, MANIFEST))
    if own_has_manifest or os.path.isdir(os.path.join(folder, STATE_DIR)):
        out.roots.append(own)
    # (directory, depth, whether a harn.toml at or above it makes it part of a project already)
    queue: deque[tuple[str, int, bool]] = deque([(folder, 0, own_has_manifest)])
    visited = 0
    while queue:
        directory, depth, enclosed = queue.popleft()
        if visited >= max_dirs:
            out.notes.append(f"stopped looking for Harn projects below {folder} after {max_dirs} folders; "
                             "name them in the setting harnState.projectRoots")
            break
        visited += 1
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        names = {e.name for e in entries}
        if depth > 0 and VIRTUALENV_MARKER in names:
            continue  # a virtualenv: its packages' folders are not this repository's projects
        has_manifest = depth > 0 and MANIFEST in names and os.path.isfile(os.path.join(directory, MANIFEST))
        if depth > 0 and (has_manifest or (not enclosed and _is_real_dir(entries, STATE_DIR))):
            if len(out.roots) >= max_projects:
                out.notes.append(f"found more than {max_projects} Harn projects below {folder}; serving the first "
                                 f"{max_projects} (name the ones you want in harnState.projectRoots)")
                break
            out.roots.append(directory)
        if depth >= max_depth:
            continue
        for e in entries:
            if e.name.startswith(".") or e.name in SKIPPED_DIRS:
                continue
            try:
                if not e.is_dir(follow_symlinks=False):  # a symlinked folder is never followed
                    continue
            except OSError:
                continue
            queue.append((e.path, depth + 1, enclosed or has_manifest))
    if not out.roots:
        out.roots.append(folder)  # nothing found: the folder as it is (no state yet)
    return out


def _is_real_dir(entries: list[os.DirEntry[str]], name: str) -> bool:
    for e in entries:
        if e.name == name:
            try:
                return e.is_dir(follow_symlinks=False)
            except OSError:
                return False
    return False


def explicit(folder: str, entries: list[str], trusted: bool) -> FolderProjects:
    """The setting's roots that belong to `folder`: relative entries resolved against it, absolute ones
    inside it. In an untrusted workspace an entry that leaves the folder (`..`, a symbolic link out)
    is refused: the setting may come from the repository itself."""
    folder = os.path.abspath(folder)
    real_folder = os.path.realpath(folder)
    out = FolderProjects(folder)
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip() or any(ord(c) < 0x20 for c in entry):
            out.notes.append(f"harnState.projectRoots: ignored {quote_json(entry)} (not a folder name)")
            continue
        entry = os.path.expanduser(entry) if trusted else entry
        if os.path.isabs(entry) and not is_under(os.path.normpath(entry), folder):
            continue  # another folder's, or (trusted) placed by assign_outside
        path = os.path.normpath(os.path.join(folder, entry))
        real = os.path.realpath(path)
        if not trusted and not is_under(real, real_folder):
            out.notes.append(f"harnState.projectRoots: refused {quote(entry)}: it leads outside {quote(folder)} "
                             "and the workspace is not trusted")
            continue
        if not os.path.isdir(real):
            out.notes.append(f"harnState.projectRoots: {quote(entry)} is not a folder in {quote(folder)}")
            continue
        root = find_project_root(path)  # a folder inside a project names that project
        if not trusted and not is_under(os.path.realpath(root), real_folder):
            root = path  # the harn.toml found above the folder is not the workspace's to name: serve the folder asked for
        if root not in out.roots:
            out.roots.append(root)
    return out


def outside_roots(folders: list[str], entries: list[str], trusted: bool) -> list[str]:
    """Absolute entries of the setting inside none of the folders: served (with the first folder)
    only in a trusted workspace."""
    if not trusted:
        return []
    out = []
    for entry in entries:
        if isinstance(entry, str) and entry.strip() and not any(ord(c) < 0x20 for c in entry):
            path = os.path.normpath(os.path.expanduser(entry))
            if os.path.isabs(path) and os.path.isdir(path) and not any(is_under(path, os.path.abspath(f)) for f in folders):
                out.append(path)
    return out


def folder_projects(folder: str, roots_setting: list[str], trusted: bool, all_folders: list[str]) -> FolderProjects:
    """The projects `folder` serves: the setting's roots when it names any there, else the search."""
    if roots_setting:
        chosen = explicit(folder, roots_setting, trusted)
        if all_folders and os.path.abspath(all_folders[0]) == os.path.abspath(folder):
            chosen.roots.extend(r for r in outside_roots(all_folders, roots_setting, trusted) if r not in chosen.roots)
        if chosen.roots:
            return chosen
        found = discover(folder)
        found.notes[:0] = chosen.notes
        return found
    return discover(folder)
