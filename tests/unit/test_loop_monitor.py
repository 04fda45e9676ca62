"""The server warns when anything holds the event loop for more than 100 ms."""

from __future__ import annotations

import asyncio
import logging
import time

from harn_ls.lsp.server import LoopMonitor


class _Server:
    current_handler = "-"


def test_stall_is_logged_with_handler_name(caplog):
    async def main():
        server = _Server()
        monitor = LoopMonitor(asyncio.get_running_loop(), server, period=0.02)
        await asyncio.sleep(0.2)
        assert monitor.stalls == []  # an idle loop answers at once
        server.current_handler = "textDocument/hover"
        time.sleep(0.35)  # a handler doing blocking work on the loop
        await asyncio.sleep(0.2)
        monitor.stop()
        return monitor.stalls

    with caplog.at_level(logging.WARNING, logger="harn_ls"):
        stalls = asyncio.run(main())
    assert len(stalls) == 1
    name, held = stalls[0]
    assert name == "textDocument/hover" and 0.1 < held < 1.0
    assert "event loop held for" in caplog.text and "textDocument/hover" in caplog.text
