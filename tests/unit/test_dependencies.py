"""pyproject.toml declares every third-party module harn_ls imports at run time (at any depth:
an import inside a function runs too), so a clean install never fails on first use."""

from __future__ import annotations

import os
import re
import sys
import tomllib

from tests.arch.imports import edges

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
# module name -> distribution name, where they differ
DISTRIBUTION = {"yaml": "pyyaml", "attr": "attrs"}  # attrs ships both `attr` and `attrs`


def declared() -> set[str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        deps = tomllib.load(fh)["project"]["dependencies"]
    return {re.split(r"[<>=!~;\s\[]", d, maxsplit=1)[0].lower() for d in deps}


def imported_third_party() -> set[str]:
    tops = {e.target.split(".")[0] for e in edges() if e.target}
    return {t for t in tops if t and t != "harn_ls" and t not in sys.stdlib_module_names}


def test_every_runtime_import_is_declared():
    missing = {m for m in imported_third_party() if DISTRIBUTION.get(m, m).lower() not in declared()}
    assert missing == set()


def test_the_scan_sees_the_known_dependencies():
    found = imported_third_party()
    assert {"pygls", "lsprotocol", "orjson", "watchdog", "numpy", "yaml", "cryptography", "attrs", "cattrs"} <= found
