"""A transcript document keeps only the sizes of the blocks it does not show (peak RSS on a 10 MB
transcript) and renders its page's blocks again from the context they started with: every page,
with every window size, equals rendering every block and cutting the windows from the list."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harn_ls.model.workspace import Workspace
from harn_ls.render import RenderSettings, render_uri
from harn_ls.render.conversation import context_for, event_windows, message_events, render_event

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "sample-project"


def _all_blocks_windows(ws, tid: str, settings: RenderSettings) -> tuple[list[list[str]], int]:
    """Every block of the transcript, cut into windows from the newest end (the way the document
    was made before it kept only sizes): (windows, newest first, each in event order; hidden)."""
    entry = ws.transcripts[tid]
    tr = entry.transcript
    items = tr.events if tr.events else message_events(tr)
    ctx = context_for(ws, entry, tr, settings.show_private)
    rendered, hidden_private = [], 0
    for i, ev in enumerate(items):
        block, hidden = render_event(i, ev, ctx)
        hidden_private += hidden
        rendered.append(block)
    windows, current, size = [], [], 0
    for block in reversed(rendered):
        b = len(block.encode("utf-8"))
        if current and size + b > settings.transcript_window_bytes:
            windows.append(current)
            current, size = [], 0
        current.append(block)
        size += b
    if current or not windows:
        windows.append(current)
    return [list(reversed(w)) for w in windows], hidden_private


@pytest.mark.parametrize("window_bytes", [1, 300, 900, 5_000, 200_000])
@pytest.mark.parametrize("show_private", [False, True])
def test_every_page_shows_the_blocks_of_its_window(window_bytes, show_private):
    ws = Workspace.load(str(SAMPLE))
    settings = dataclasses.replace(RenderSettings(), transcript_window_bytes=window_bytes, show_private=show_private)
    checked = 0
    for tid in sorted(ws.transcripts):
        windows, hidden = _all_blocks_windows(ws, tid, settings)
        for page in range(len(windows) + 1):  # (one past the last: shows the last)
            text = render_uri(ws, f"harn-state:/transcripts/{tid}.md?page={page}", settings)
            blocks = windows[min(page, len(windows) - 1)]
            body = text.split("(newest window first)", 1)[1]
            assert "\n".join(blocks) in body, (tid, page)  # the window's blocks, whole, in order, nothing between
            assert f"window {min(page, len(windows) - 1) + 1} of {len(windows)}" in text
            assert (f"{hidden} private reasoning event(s) hidden." in text) == bool(hidden)
            checked += 1
    assert checked >= 5


def test_windows_are_cut_from_the_newest_end():
    assert event_windows([], 10) == [(0, 0)]
    assert event_windows([4, 4, 4], 10) == [(1, 3), (0, 1)]
    assert event_windows([30, 1, 1], 10) == [(1, 3), (0, 1)]  # a block bigger than a window is a window of its own
    assert event_windows([5, 5, 5, 5], 10) == [(2, 4), (0, 2)]
    assert event_windows([1] * 5, 100) == [(0, 5)]
