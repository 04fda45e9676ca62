"""Watcher inspection for tests: harn-ls reports only `StateWatcher.watching`
and its problems; which roots are watched right now is a test question."""

from __future__ import annotations

from harn_ls.watch.observer import StateWatcher


def roots_watched(w: StateWatcher) -> list[str]:
    """The roots with a live watch, sorted (read under the watcher's lock)."""
    with w._lock:
        return sorted(w._root_watches)
