"""One cold and one warm server start of a project, as `bench/run.py` times them: server start ->
first harn/status -> recallReady, and the server's peak RSS. For before/after pairs: the server is
the checkout that holds the given bench folder (its run.py starts `python -m harn_ls` there).

    python bench/start_sample.py BENCH_DIR PROJECT

Prints one JSON line: {"cold": {...}, "warm": {...}} with status_s, recall_ready_s, peak_rss_kb."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.abspath(sys.argv[1]))
import run  # noqa: E402  (the given checkout's bench/run.py)


def main() -> None:
    cache = Path(tempfile.mkdtemp(prefix="harn-start-sample-"))
    env = dict(os.environ, HARN_LS_CACHE_DIR=str(cache))
    env.pop("HARN_LS_CACHE", None)
    try:
        project = Path(sys.argv[2])
        cold = run.server_startup(project, env)  # empty cache: load, build the index, save
        warm = run.server_startup(project, env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps({"cold": cold, "warm": warm}))


if __name__ == "__main__":
    main()
