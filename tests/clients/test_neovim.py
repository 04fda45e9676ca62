"""Headless Neovim (Debian 0.7.2) drives the real server: an independent LSP client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "fixtures" / "sample-project"

# In CI (`make test` installs Debian's neovim) a missing nvim is a failure, not a skip.
pytestmark = pytest.mark.skipif(shutil.which("nvim") is None and not os.environ.get("CI"),
                                reason="neovim is not installed (make test installs it)")


def test_neovim_hover_lenses_and_virtual_document(tmp_path):
    project = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, project)
    out = tmp_path / "result.json"
    env = {**os.environ, "PROBE_OUT": str(out), "PROJECT": str(project), "PY": sys.executable}
    proc = subprocess.run(["timeout", "90", "nvim", "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_probe.lua'}"],
                          env=env, capture_output=True, text=True, timeout=120)
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (proc.returncode, result, proc.stderr[-2000:])
    assert result["nvim"].startswith("0.")
    assert result["content_schemes"] == ["harn-state"]
    assert "rounded to cents" in result["hover"]
    assert 27 in result["lens_lines"] and 15 in result["lens_lines"]
    assert "1 fact · observation 0.9" in result["lens_titles"]
    assert result["index_head"].startswith("# Harn state")
