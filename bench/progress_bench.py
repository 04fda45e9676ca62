"""Issue 36's row: what watching a load's progress costs the load itself.

A cold `Workspace.load` of the 100k project, alternately with a `WorkProgress` watched at four
snapshots a second (as the server's progress task does) and without one, in one process; the load
thread's own CPU time each time (`time.thread_time`: the watcher's thread and the rest of a busy
machine are not in it). The figure is the median of the pairwise ratios (budget: 1.02)."""

from __future__ import annotations

import gc
import statistics
import threading
import time
from pathlib import Path


def bench_progress_overhead(root: Path, pairs: int) -> dict:
    from harn_ls.model.workspace import Workspace
    from harn_ls.util.progress import WorkProgress

    times: dict[str, list[float]] = {"without": [], "with": []}
    for i in range(pairs):
        for mode in (("without", "with") if i % 2 == 0 else ("with", "without")):
            progress, stop = None, threading.Event()
            if mode == "with":
                progress = WorkProgress("bench")

                def watch(progress=progress, stop=stop) -> None:
                    while not stop.wait(0.25):
                        progress.snapshot()

                threading.Thread(target=watch, daemon=True).start()
            gc.collect()
            start = time.thread_time()
            ws = Workspace.load(str(root), cache=False, progress=progress)
            times[mode].append(time.thread_time() - start)
            stop.set()
            del ws
    ratios = [a / b for a, b in zip(times["with"], times["without"], strict=True)]
    return {"pairs": pairs, "with_s": statistics.median(times["with"]), "without_s": statistics.median(times["without"]),
            "ratio": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}}
