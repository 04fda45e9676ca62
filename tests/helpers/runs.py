"""Run-directory listing for tests. harn-ls lists run records itself, with its confinement
checks, in Workspace._scan_runs (and classifies changed paths there), never through these."""

from __future__ import annotations

import os

from harn_ls.formats.runs import PLAYGROUND_DIR, PLAYGROUND_RUN_NAME


def is_run_record_path(path: str) -> bool:
    """True for `<run_id>.json` directly in a run dir and for playground `run.json`; never `*.json.tmp`."""
    name = os.path.basename(path)
    if not name.endswith(".json") or name.endswith(".json.tmp"):
        return False
    parent = os.path.dirname(path)
    if name == PLAYGROUND_RUN_NAME and os.path.basename(os.path.dirname(parent)) == PLAYGROUND_DIR:
        return True
    # Sidecars (`<id>-llm/raw-provider/*.json`) and playground job files are not run records;
    # only the nearest few directories are checked so a project dir named `x-llm` still works.
    near = parent.replace(os.sep, "/").split("/")[-3:]
    return not any(part.endswith("-llm") or part == PLAYGROUND_DIR for part in near)


def list_run_records(run_root: str) -> list[str]:
    """Run record files under a run dir (top level + playground jobs), sorted by name."""
    out: list[str] = []
    try:
        entries = sorted(os.scandir(run_root), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        if entry.is_file() and entry.name.endswith(".json") and not entry.name.endswith(".json.tmp"):
            out.append(entry.path)
    try:
        jobs = sorted(os.scandir(os.path.join(run_root, PLAYGROUND_DIR)), key=lambda e: e.name)
    except OSError:
        jobs = []
    for job in jobs:
        candidate = os.path.join(job.path, PLAYGROUND_RUN_NAME)
        if job.is_dir() and os.path.isfile(candidate):
            out.append(candidate)
    return out
