"""Suite-wide: the state cache of every test (and of every subprocess a test starts) goes to a
temporary folder, never into ~/.cache. Tests that exercise the cache point HARN_LS_CACHE_DIR at
their own tmp_path. Every server a test starts checks that the model is only read on its
project's worker thread (HARN_LS_THREAD_CHECK, see harn_ls/lsp/project.py)."""

import atexit
import os
import shutil
import tempfile

from hypothesis import settings as _hypothesis_settings

_CACHE_DIR = tempfile.mkdtemp(prefix="harn-ls-test-cache-")
os.environ["HARN_LS_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("HARN_LS_CACHE", None)
os.environ["HARN_LS_THREAD_CHECK"] = "1"
atexit.register(shutil.rmtree, _CACHE_DIR, True)

# Property tests outside tests/fuzz draw their examples the same way on every run of `make test`, as
# the fuzz tests' bounded run does (tests/fuzz/common.py): a red CI then means a change broke
# something, not that a new seed found an old weakness. `make fuzz` (or HARN_LS_EXPLORE=1) explores
# with fresh seeds; what it finds is kept as an @example.

_hypothesis_settings.register_profile("bounded", derandomize=True, database=None)
_hypothesis_settings.register_profile("explore", derandomize=False, database=None)
_hypothesis_settings.load_profile(
    "explore" if os.environ.get("HARN_LS_EXPLORE") or int(os.environ.get("HARN_LS_FUZZ_EXAMPLES", "0")) > 1000
    else "bounded")
