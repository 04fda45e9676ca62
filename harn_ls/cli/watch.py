"""`harn-ls watch [PATH] [--json]`: follow a project live, one line per change batch."""

from __future__ import annotations

import json
import queue
import signal
import sys
import time

from harn_ls.model.change_kinds import K
from harn_ls.model.checkpoint_versions import keep_history
from harn_ls.model.workspace import Workspace
from harn_ls.watch.observer import StateWatcher


def run_watch(target: str, as_json: bool) -> int:
    """Follow the project in directory `target` (the caller checked that it is one)."""
    ws = Workspace.load(target)
    keep_history(ws)  # checkpoint history, exactly as the server keeps it (model/checkpoint_versions.keep_history)
    batches: queue.Queue[tuple[set[str], bool]] = queue.Queue()
    watcher = StateWatcher(ws.paths, lambda paths, rescan: batches.put((set(paths), rescan)))
    watcher.start()
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("now", True))
    emit(ws, None, as_json)
    try:
        while not stop["now"]:
            try:
                paths, rescan = batches.get(timeout=0.2)
            except queue.Empty:
                continue
            started = time.perf_counter()
            changes = ws.rescan() if rescan and not paths else ws.apply_changes(paths)
            try:
                keep_history(ws, changes)
            except Exception as exc:  # history is a convenience: never let it stop the watch
                sys.stderr.write(f"harn-ls watch: keeping checkpoint history failed: {exc}\n")
            if changes:
                emit(ws, changes, as_json, took=time.perf_counter() - started)
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
    return 0


def emit(ws, changes, as_json: bool, took: float = 0.0) -> None:
    counts = ws.counts()
    problems = len(ws.problems())
    if as_json:
        line = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "root": ws.root, "counts": counts,
                "problems": problems}
        if changes is not None:
            line["changed"] = changes.to_json()
            line["applyMs"] = round(took * 1000, 2)
        else:
            line["event"] = "watching"
        sys.stdout.write(json.dumps(line) + "\n")
    else:
        stamp = time.strftime("%H:%M:%S")
        summary = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        if changes is None:
            sys.stdout.write(f"{stamp} watching {ws.root}: {summary}; {problems} problem(s)\n")
        else:
            what = ", ".join(sorted(changes.kinds - {K.ROOTS})) or K.ROOTS
            extra = f" [{', '.join(sorted(changes.namespaces))}]" if changes.namespaces else ""
            sys.stdout.write(f"{stamp} changed {what}{extra} in {took * 1000:.1f} ms → {summary}; {problems} problem(s)\n")
    sys.stdout.flush()
