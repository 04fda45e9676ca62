"""bench/change_path.py: the path of one file change to the editor, measured on this checkout's server.

docs/internals.md quotes its module count; these tests keep the measurement from rotting silently
(a renamed notification, a server that no longer refreshes the document, a wrapper that records
nothing)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.samples import SAMPLES

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "change_path.py"
SPEC = SAMPLES.parent / "harn-formats.md"


def _script():
    """bench/change_path.py as a module, loaded from its path (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("change_path", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(60)
def test_one_fact_appended_reaches_the_editor_through_the_model_and_the_server():
    run = subprocess.run([sys.executable, str(SCRIPT), "--json"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    modules = result["modules"]
    assert result["count"] == len(modules) > 0
    assert modules == sorted(modules)
    # the server that ran is this checkout's
    assert Path(result["harn_ls"]).resolve() == REPO / "harn_ls" / "__init__.py"
    # the client heard about the change and asked again, as an editor does
    assert result["refreshed"] == [result["document"]]
    assert result["document"].startswith("harn-state:/memory/project/facts")
    assert result["tree_views"] == ["memory"]
    # the path: watcher -> model -> the memory format -> the server's fan-out -> the document and the tree
    for module in ("harn_ls.watch.observer", "harn_ls.model.workspace", "harn_ls.formats.memory",
                   "harn_ls.lsp.server", "harn_ls.lsp.documents", "harn_ls.lsp.tree", "harn_ls.render.documents"):
        assert module in modules, module
    assert "Workspace.apply_changes" in result["functions"]["harn_ls.model.workspace"]
    assert all(m.startswith("harn_ls.") or m == "harn_ls" for m in modules)
    # before the change the server was idle: the model was not touched, so what is counted is the change's
    assert "harn_ls.model.workspace" not in result["idle_modules"]
    assert "harn_ls.lsp.documents" not in result["idle_modules"]


def test_a_repo_without_harn_ls_is_refused(tmp_path):
    sibling = tmp_path / "harn-ls-evil"
    sibling.mkdir()
    run = subprocess.run([sys.executable, str(SCRIPT), "--repo", str(sibling)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert "holds no harn_ls package" in run.stderr


@pytest.mark.skipif(not SPEC.is_file(), reason="harn-formats.md is not beside the checkout")
def test_the_fact_line_is_byte_identical_to_harn_formats_example():
    example = next(line for line in SPEC.read_text(encoding="utf-8").splitlines()
                   if line.startswith('{"type":"store","id":"fact_dba19bab13cea567792bee7e039809a7"'))
    line = _script().fact_line("claim", "Alice prefers Rust examples", "README.md:1-3", "2026-05-02T09:20:11.204Z",
                                   "2026-05-02T09:20:11.205633412+00:00", confidence=0.82,
                                   provenance={"agent": "codex", "run_id": "run-1"})
    assert line == example + "\n"
