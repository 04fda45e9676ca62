"""Our own record of the client requests our handlers are serving, for cancellation.

pygls answers a `$/cancelRequest` itself but does not tell a running handler
(an executeCommand handler keeps running after the client got its "cancelled"
answer). The server's protocol reports every `$/cancelRequest` here (see
`HarnProtocol.handle_message`), the handler wrapper (`server.timed`) records
each request while its handler runs, and a long handler (the typecheck probe)
watches its entry's `signal` future: cancelled when the client cancels the
request, or when the server shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

MsgId = int | str


@dataclass
class InFlight:
    """A request whose handler is running, with what cancels it."""

    msg_id: MsgId
    method: str
    signal: asyncio.Future = field(repr=False)  # cancelled when the request is cancelled
    finished: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def cancelled(self) -> bool:
        return self.signal.cancelled()


class RequestRegistry:
    """In-flight requests by id; lives on the event loop (not thread-safe, need not be)."""

    def __init__(self, remember: int = 64) -> None:
        self._running: dict[MsgId, InFlight] = {}
        # Cancels for ids no handler of ours runs (yet): pygls may cancel a request between its
        # arrival and the start of our handler; remembered (a few) so the handler sees it.
        self._early: OrderedDict[MsgId, None] = OrderedDict()
        self._remember = remember
        self.last_activity = 0.0  # time.monotonic() a request last started or finished

    def quiet_for(self) -> float:
        """Seconds since the last request started or finished; 0 while one is running."""
        return 0.0 if self._running else time.monotonic() - self.last_activity

    @contextlib.contextmanager
    def track(self, msg_id: MsgId | None, method: str) -> Iterator[InFlight | None]:
        """Record the request while the `with` body runs; None for notifications (no id) and for
        a handler nested in one already recorded under the same id."""
        if msg_id is None or msg_id in self._running:
            yield None
            return
        entry = InFlight(msg_id, method, asyncio.get_running_loop().create_future())
        if msg_id in self._early:
            del self._early[msg_id]
            entry.signal.cancel()
        self._running[msg_id] = entry
        self.last_activity = time.monotonic()
        try:
            yield entry
        finally:
            self._running.pop(msg_id, None)
            self.last_activity = time.monotonic()
            entry.finished.set()

    def get(self, msg_id: MsgId | None) -> InFlight | None:
        return self._running.get(msg_id) if msg_id is not None else None

    def running(self) -> list[InFlight]:
        return list(self._running.values())

    def cancel(self, msg_id: MsgId) -> bool:
        """`$/cancelRequest`: True when a handler of ours was running it."""
        entry = self._running.get(msg_id)
        if entry is None:
            self._early[msg_id] = None
            while len(self._early) > self._remember:
                self._early.popitem(last=False)
            return False
        entry.signal.cancel()
        return True

    def cancel_all(self, keep: MsgId | None = None) -> list[InFlight]:
        """Shutdown: signal every running request but `keep` (the shutdown request itself)."""
        entries = [e for e in self._running.values() if e.msg_id != keep]
        for e in entries:
            e.signal.cancel()
        return entries

    @staticmethod
    async def wait_finished(entries: list[InFlight], timeout: float) -> bool:
        """True when every entry's handler returned within `timeout` seconds."""
        if not entries:
            return True
        waits = [asyncio.ensure_future(e.finished.wait()) for e in entries]
        done, pending = await asyncio.wait(waits, timeout=timeout)
        for w in pending:
            w.cancel()
        return not pending
