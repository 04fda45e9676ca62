"""Cold recall index build, in process: `Workspace.load` (untimed), then `build_recall` timed.

    python bench/index_build_bench.py PROJECT [--digest]

Prints one JSON line: the build's wall and CPU seconds, and with `--digest` a sha256 over every
namespace's index arrays after `compact()` (terms in id order, df, offsets, postings, lengths), so
two versions of the build can be compared for identical indexes, not only equal scores."""

from __future__ import annotations

import hashlib
import json
import sys
import time

import numpy as np

from harn_ls.model.workspace import Workspace


def digest(ws: Workspace) -> str:
    h = hashlib.sha256()
    for ns, idx in sorted(ws.recall.indexes.items()):
        idx.compact()
        h.update(ns.encode())
        h.update("\0".join(idx._terms).encode())
        for arr in (idx._all_df(), idx._off, idx._pslot.astype(np.int64), idx._pcode.astype(np.int64),
                    idx._dl[: idx._nslots]):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(repr([r.seq if r is not None else None for r in idx._srec]).encode())
        h.update(repr(idx.total_tokens).encode())
    return h.hexdigest()


def main() -> None:
    ws = Workspace.load(sys.argv[1])
    assert ws.memory  # (loaded)
    w, c = time.perf_counter(), time.process_time()
    ws.build_recall()
    out = {"build_s": time.perf_counter() - w, "build_cpu_s": time.process_time() - c}
    if "--digest" in sys.argv:
        out["digest"] = digest(ws)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
