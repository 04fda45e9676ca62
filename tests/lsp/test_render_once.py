"""Render once (issue 31 item 6): a change to an open `harn-state:` document renders it once, to tell
whether its text changed, and the client's fetch after the refresh gets those very bytes.

The real server runs in this process (its own event loop, its real framing, a real project on disk
watched by watchdog), so the test can read its render counter (`ls.renders.count`, incremented in
the one function that makes documents) between the file change, the refresh and the fetch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import orjson

from harn_ls.lsp import transport
from harn_ls.lsp.documents import text_hash
from harn_ls.lsp.server import create_server
from tests.lsp.conftest import CLIENT_COMMANDS
from tests.lsp.test_live import new_fact_line

DOC = "harn-state:/memory/project/facts.md"


class InProcessClient:
    """JSON-RPC to a server started with create_server(), over its real reader and FramedWriter."""

    def __init__(self) -> None:
        self.ls = create_server()
        self.reader = asyncio.StreamReader()
        self.writer = transport.FramedWriter(self._sent)
        self.ls.protocol.set_writer(self.writer, include_headers=False)
        self.inbox: list[dict] = []
        self.arrived = asyncio.Event()
        self.next_id = 0
        self.task = asyncio.ensure_future(transport.serve_stream(self.ls.protocol, self.reader, self.writer))

    def _sent(self, frame: bytes) -> None:
        self.inbox.append(json.loads(frame.split(b"\r\n\r\n", 1)[1]))
        self.arrived.set()

    def send(self, message: dict) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", **message})
        self.reader.feed_data(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def wait_for(self, predicate, timeout: float = 20.0) -> dict:
        async def scan() -> dict:
            while True:
                for msg in self.inbox:
                    if predicate(msg):
                        self.inbox.remove(msg)
                        return msg
                self.arrived.clear()
                await self.arrived.wait()
        return await asyncio.wait_for(scan(), timeout)

    async def request(self, method: str, params: dict | None) -> dict:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        reply = await self.wait_for(lambda m: m.get("id") == rid and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    async def start(self, project: Path) -> None:
        caps = {"workspace": {"textDocumentContent": {"dynamicRegistration": True}, "workspaceFolders": True}}
        await self.request("initialize", {"processId": None, "rootUri": project.as_uri(), "capabilities": caps,
                                          "workspaceFolders": [{"uri": project.as_uri(), "name": "sample"}],
                                          "clientInfo": {"name": "Visual Studio Code"},
                                          "initializationOptions": {"clientCommands": CLIENT_COMMANDS, "pictures": True}})
        self.send({"method": "initialized", "params": {}})
        await self.wait_for(lambda m: m.get("method") == "harn/status")

    async def stop(self) -> None:
        await self.request("shutdown", None)
        self.send({"method": "exit"})
        await asyncio.wait_for(self.task, 20)


async def test_a_change_renders_an_open_document_once_and_serves_the_bytes_compared(project: Path):
    client = InProcessClient()
    try:
        await client.start(project)
        # the client shows the document (the server answers workspace/configuration with defaults)
        before = (await client.request("workspace/textDocumentContent", {"uri": DOC}))["text"]
        renders = client.ls.renders

        made = renders.count
        with open(project / ".harn/memory/project/facts/events.jsonl", "a") as fh:
            fh.write(new_fact_line("Invoices round half to even", "src/billing/tax.py:1-3") + "\n")
        refresh = await client.wait_for(lambda m: m.get("method") == "workspace/textDocumentContent/refresh"
                                        and m["params"]["uri"] == DOC)
        compared = renders.fresh[DOC].text  # what the change was compared with
        assert renders.count - made == 1, "the change made the document once to compare it"
        client.send({"id": refresh["id"], "result": None})

        served = (await client.request("workspace/textDocumentContent", {"uri": DOC}))["text"]
        assert renders.count - made == 1, "the fetch after the refresh made it again"
        assert served == compared and "Invoices round half to even" in served and served != before
        assert client.ls.served[DOC][1] == text_hash(served)  # the next change compares with these bytes
        # served once: a fetch without a change in between makes the page again (it may show live state
        # no file event announces, such as a checkpoint's lock)
        assert DOC not in renders.fresh
        assert (await client.request("workspace/textDocumentContent", {"uri": DOC}))["text"] == served
        assert renders.count - made == 2
        made += 1

        # a second change before any fetch: what was kept is not served, the document is made again
        with open(project / ".harn/memory/project/facts/events.jsonl", "a") as fh:
            fh.write(new_fact_line("Refunds keep their original rate", "src/billing/tax.py:4-5") + "\n")
        refresh = await client.wait_for(lambda m: m.get("method") == "workspace/textDocumentContent/refresh")
        client.send({"id": refresh["id"], "result": None})
        await client.wait_for(lambda m: m.get("method") == "harn/treeChanged")
        assert DOC in renders.fresh
        client.inbox.clear()
        made = renders.count
        with open(project / ".harn/memory/project/facts/events.jsonl", "a") as fh:
            fh.write(new_fact_line("Credit notes are rounded per line", "src/billing/tax.py:6-7") + "\n")
        # (the document was not fetched since the last refresh: no compare runs; treeChanged is sent
        # after the documents are dealt with)
        await client.wait_for(lambda m: m.get("method") == "harn/treeChanged")
        assert renders.count == made
        assert DOC not in renders.fresh, "a document made before a change that alters it is dropped"
        again = (await client.request("workspace/textDocumentContent", {"uri": DOC}))["text"]
        assert renders.count - made == 1
        assert "Credit notes are rounded per line" in again and "Refunds keep their original rate" in again
    finally:
        await client.stop()
