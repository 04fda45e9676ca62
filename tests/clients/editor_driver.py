"""Running an editor's driver script (tests/clients/*_driver.*) against the real server on a copy of
the sample project: the project, the environment every driver reads, and its JSON result."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
HARN_DOUBLE = REPO / "tests" / "harn_test_double.py"


def driver_env(base: Path, plugin: Path) -> tuple[Path, Path, dict[str, str]]:
    """(project, result file, environment) for a driver run in `base`: the sample project copied there,
    a home folder of its own, the server command and the `harn` test double."""
    project = base / "sample-project"
    shutil.copytree(SAMPLE, project, symlinks=True)
    (base / "home").mkdir()
    out = base / "result.json"
    env = {**os.environ, "PROBE_OUT": str(out), "PROJECT": str(project), "PLUGIN_DIR": str(plugin),
           "HARN_LS_CMD": "\t".join([sys.executable, "-m", "harn_ls", "serve"]), "HARN_DOUBLE": str(HARN_DOUBLE),
           "HOME": str(base / "home")}
    return project, out, env


def run_driver(argv: list[str], cwd: Path, env: dict[str, str], out: Path, what: str) -> dict:
    """Run the driver (bounded: `timeout` inside, the subprocess timeout outside); its result, or a
    failure naming the step it stopped in, its error, the buffer it was in and the editor's stderr."""
    try:
        proc = subprocess.run(["timeout", "150", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=180)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish: {exc}")
    r = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (f"{what}: driver failed in step {(r.get('steps') or ['?'])[-1]!r}: {r.get('error')}\n"
                                  f"buffer {r.get('current_buffer')}:\n{r.get('current_text')}\n"
                                  f"messages: {r.get('messages')}\nstderr: {proc.stderr[-3000:]}")
    return r
