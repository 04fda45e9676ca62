"""Our own record of in-flight requests: cancellation reaches the running handler, early cancels
are remembered, notifications are not recorded, shutdown signals all but itself."""

from __future__ import annotations

import asyncio

from harn_ls.lsp.requests import RequestRegistry


def run(coro):
    return asyncio.run(coro)


def test_cancel_reaches_the_running_handler():
    async def main():
        reg = RequestRegistry()
        with reg.track(7, "workspace/executeCommand") as entry:
            assert reg.get(7) is entry and not entry.cancelled
            seen = []
            entry.signal.add_done_callback(lambda f: seen.append(f.cancelled()))
            assert reg.cancel(7) is True
            await asyncio.sleep(0)
            assert entry.cancelled and seen == [True]
        assert reg.get(7) is None and entry.finished.is_set()
    run(main())


def test_notifications_and_nested_handlers_are_not_recorded():
    async def main():
        reg = RequestRegistry()
        with reg.track(None, "textDocument/didChange") as entry:
            assert entry is None and reg.running() == []
        with reg.track("a", "outer") as outer:
            with reg.track("a", "inner") as inner:
                assert inner is None and reg.get("a") is outer
            assert reg.get("a") is outer  # the nested exit does not drop the outer record
    run(main())


def test_cancel_before_the_handler_starts_is_remembered():
    async def main():
        reg = RequestRegistry(remember=2)
        assert reg.cancel("early") is False
        with reg.track("early", "m") as entry:
            assert entry.cancelled
        with reg.track("early", "m") as again:  # remembered once only
            assert not again.cancelled
        for i in range(3):
            reg.cancel(i)
        with reg.track(0, "m") as oldest:  # beyond the memory: forgotten
            assert not oldest.cancelled
        with reg.track(2, "m") as newest:
            assert newest.cancelled
    run(main())


def test_cancel_all_keeps_the_shutdown_request_and_waits():
    async def main():
        reg = RequestRegistry()
        stopped = []

        async def handler(msg_id):
            with reg.track(msg_id, "m") as entry:
                try:
                    await entry.signal
                except asyncio.CancelledError:
                    stopped.append(msg_id)

        tasks = [asyncio.ensure_future(handler(i)) for i in (1, 2)]
        await asyncio.sleep(0)
        with reg.track("shutdown", "shutdown") as me:
            entries = reg.cancel_all(keep="shutdown")
            assert sorted(e.msg_id for e in entries) == [1, 2] and not me.cancelled
            assert await reg.wait_finished(entries, 2) is True
        assert sorted(stopped) == [1, 2]
        await asyncio.gather(*tasks)
    run(main())


def test_wait_finished_times_out():
    async def main():
        reg = RequestRegistry()
        with reg.track(1, "slow") as entry:
            assert await reg.wait_finished([entry], 0.05) is False
    run(main())
