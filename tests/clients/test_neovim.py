"""Headless Neovim (Debian's 0.7.2 and a current release) drives the real server: an independent LSP client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.neovims import NEOVIMS, neovim_command, with_runtime

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "fixtures" / "sample-project"



@pytest.mark.parametrize("nvim", NEOVIMS)
def test_neovim_hover_lenses_and_virtual_document(tmp_path, nvim):
    project = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, project)
    out = tmp_path / "result.json"
    argv, extra = neovim_command(nvim, "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_probe.lua'}")
    env = with_runtime({**os.environ, "PROBE_OUT": str(out), "PROJECT": str(project), "PY": sys.executable}, extra)
    proc = subprocess.run(["timeout", "90", *argv], env=env, capture_output=True, text=True, timeout=120)
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (proc.returncode, result, proc.stderr[-2000:])
    assert result["nvim"].startswith("0.")
    assert result["content_schemes"] == ["harn-state"]
    assert "rounded to cents" in result["hover"]
    assert 27 in result["lens_lines"] and 15 in result["lens_lines"]
    assert "1 fact · observation 0.9" in result["lens_titles"]
    assert result["index_head"].startswith("# Harn state")
    assert result["deprecated"] == [] and "deprecated" not in result["all_messages"], result
