"""Suite-wide: the state cache of every test (and of every subprocess a test starts) goes to a
temporary folder, never into ~/.cache. Tests that exercise the cache point HARN_LS_CACHE_DIR at
their own tmp_path."""

import atexit
import os
import shutil
import tempfile

_CACHE_DIR = tempfile.mkdtemp(prefix="harn-ls-test-cache-")
os.environ["HARN_LS_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("HARN_LS_CACHE", None)
atexit.register(shutil.rmtree, _CACHE_DIR, True)
