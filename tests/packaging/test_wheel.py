"""The package as a user gets it: `python -m build` -> sdist + wheel -> a fresh venv -> harn-ls.

The venv has no source tree on its path (it runs from a temporary directory, isolated), so
what runs is what the wheel installed, with the dependencies its metadata declares.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
# (building the wheel and installing it into a fresh venv: its own steps allow up to 300 + 120 + 600 s)
pytestmark = pytest.mark.timeout(1200)


def _source_version() -> str:
    text = (REPO / "harn_ls" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("pkg")
    dist = tmp / "dist"
    try:
        import hatchling  # noqa: F401  (the build backend: with it here the build needs no download)
        isolation = ["--no-isolation"]
    except ImportError:
        isolation = []
    subprocess.run([sys.executable, "-m", "build", *isolation, "--outdir", str(dist), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # the project's pip installs into the new venv; dependencies come from the index (pip's cache)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    str(wheel)], check=True, capture_output=True, timeout=600, cwd=str(tmp), env=_clean_env())
    return venv, wheel, sdist


def test_wheel_and_sdist_contents(installed):
    _venv, wheel, sdist = installed
    version = _source_version()
    assert wheel.name == f"harn_ls-{version}-py3-none-any.whl"
    assert sdist.name == f"harn_ls-{version}.tar.gz"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(f"harn_ls-{version}.dist-info/METADATA").decode()
    assert "harn_ls/cli/main.py" in names and "harn_ls/__main__.py" in names
    assert not [n for n in names if n.startswith(("tests/", "fixtures/", "vscode-extension/"))]
    requires = {re.split(r"[<>=;\s\[]", line.split(":", 1)[1].strip())[0].lower()
                for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line}
    # every third-party module harn_ls imports at run time is declared
    assert {"pygls", "lsprotocol", "orjson", "watchdog", "numpy", "pyyaml", "cryptography", "attrs",
            "cattrs"} <= requires
    # rank-bm25 is the reference the recall tests compare against: the test extra's, not a user's
    assert "rank-bm25" not in requires
    assert any(line.startswith("Requires-Dist: rank-bm25") and "extra == 'test'" in line.replace('"', "'")
               for line in meta.splitlines())
    with tarfile.open(sdist) as t:
        members = t.getnames()
    assert f"harn_ls-{version}/pyproject.toml" in members
    assert f"harn_ls-{version}/harn_ls/lsp/server.py" in members


def test_installed_cli_version_and_inspect(installed, tmp_path):
    venv, _wheel, _sdist = installed
    env = _clean_env()
    where = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import harn_ls; print(harn_ls.__file__)"],
                           capture_output=True, text=True, check=True, cwd=str(tmp_path), env=env)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    harn_ls = venv / "bin" / "harn-ls"
    version = subprocess.run([str(harn_ls), "--version"], capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert version.returncode == 0 and version.stdout.strip() == f"harn-ls {_source_version()}"

    project = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, project, symlinks=True)
    got = subprocess.run([str(harn_ls), "inspect", str(project), "--json"], capture_output=True, text=True,
                         cwd=str(tmp_path), env=env, timeout=120)
    assert got.returncode == 0, got.stderr
    # the same answer as the source tree gives
    want = subprocess.run([sys.executable, "-m", "harn_ls", "inspect", str(project), "--json"], capture_output=True,
                          text=True, cwd=str(REPO), timeout=120)
    assert json.loads(got.stdout) == json.loads(want.stdout)
    assert json.loads(got.stdout)  # not an empty report


def _frame(msg: dict) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_messages(data: bytes) -> list[dict]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def test_installed_serve_round_trip(installed, tmp_path):
    venv, _wheel, _sdist = installed
    project = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, project, symlinks=True)
    stdin = b"".join([
        _frame({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": project.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": project.as_uri(), "name": "sample"}]}}),
        _frame({"id": 2, "method": "shutdown", "params": None}),
        _frame({"method": "exit", "params": None}),
    ])
    proc = subprocess.run([str(venv / "bin" / "harn-ls"), "serve"], input=stdin, capture_output=True,
                          cwd=str(tmp_path), env=_clean_env(), timeout=120)
    messages = _read_messages(proc.stdout)
    init = next(m for m in messages if m.get("id") == 1)
    assert init["result"]["serverInfo"] == {"name": "harn-ls", "version": _source_version()}
    assert init["result"]["capabilities"]["hoverProvider"]
    assert next(m for m in messages if m.get("id") == 2)["result"] is None
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
