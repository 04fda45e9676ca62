"""Suite-wide: the state cache of every test (and of every subprocess a test starts) goes to a
temporary folder, never into ~/.cache. Tests that exercise the cache point HARN_LS_CACHE_DIR at
their own tmp_path. Every server a test starts checks that the model is only read on its
project's worker thread (HARN_LS_THREAD_CHECK, see harn_ls/lsp/project.py)."""

import atexit
import os
import shutil
import tempfile

_CACHE_DIR = tempfile.mkdtemp(prefix="harn-ls-test-cache-")
os.environ["HARN_LS_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("HARN_LS_CACHE", None)
os.environ["HARN_LS_THREAD_CHECK"] = "1"
atexit.register(shutil.rmtree, _CACHE_DIR, True)
