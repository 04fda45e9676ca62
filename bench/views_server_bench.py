"""Hover and code lens through the real server, warm and right after append batches (issue 14,
"views" row), on bench/out/large (100k events) or the project given.

    python bench/views_server_bench.py [PROJECT] [--hovers N] [--batches N]

The server rows of bench/run.py (`bench_server`, documents skipped) on a scratch copy, with the
state cache in a temporary folder; prints the hover / code lens rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as R  # noqa: E402

from harn_ls.model.workspace import Workspace  # noqa: E402

ROWS = ("hover_ms", "code_lens_ms", "code_lens_resolve_ms", "code_lens_count", "hover_after_append_ms",
        "code_lens_after_append_ms", "server_ready_s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?", default=str(R.OUT / "large"))
    ap.add_argument("--hovers", type=int, default=200)
    ap.add_argument("--batches", type=int, default=40)
    args = ap.parse_args(argv)
    src = Path(args.project)
    ns = json.loads((src / "bench-manifest.json").read_text())["busiest_namespace"]
    ns_rel = f".harn/memory/{ns}/events.jsonl"
    rel, ranges = R.busiest_source(Workspace.load(str(src)))
    proj = R.scratch_copy(src, [ns_rel])
    cache = tempfile.mkdtemp(prefix="harn-views-cache-")
    env = dict(os.environ, HARN_LS_CACHE_DIR=cache)
    try:
        res = R.bench_server(proj, proj / ns_rel, ns, rel, ranges, "", "", args.hovers, args.batches, env=env, docs=False)
    finally:
        shutil.rmtree(proj.parent, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps({"project": str(src), "file": rel, "ranges": len(ranges)} | {k: res[k] for k in ROWS if k in res},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
