"""Workspace.relpath takes the rest of the path under a normalized root instead of calling
os.path.relpath (1,000 runs listed by inspect): the answer must stay os.path.relpath's."""

from __future__ import annotations

import os

import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.util.safe_read import is_under

PATHS = ["/a/b", "/a/b/c", "/a/b/c/../d", "/a/bc", "/x", "/a/b/./e/", "/a/b/c/../../b/f", "/a//b//g", "/a/b/.."]


@pytest.mark.parametrize("root", ["/", "/a/b", "/a/b/", "/a/./b", "/a/b/../b"])
def test_relpath_equals_os_path_relpath(root):
    ws = Workspace.__new__(Workspace)  # relpath needs nothing but the root
    ws.root = root
    for p in PATHS:
        full = os.path.abspath(p)
        want = os.path.relpath(full, root).replace(os.sep, "/") if is_under(full, root) else None
        assert ws.relpath(p) == want, (root, p)
