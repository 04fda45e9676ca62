"""The refresh requests the server sends, reached by a real change on disk, for each combination of
what the client declared: `workspace/textDocumentContent/refresh` (LSP 3.18: declaring
`workspace.textDocumentContent` is declaring its handler) and `workspace/codeLens/refresh`
(`workspace.codeLens.refreshSupport`). The server has no inlay hints, semantic tokens or pulled
diagnostics, so it sends no other refresh (checked too: any other `*/refresh` fails the test).

A raw JSON-RPC client (tests/conformance/bare_client.py) fetches a `harn-state:` document and asks
for the lenses of a source file, then a fact is appended to the project's facts `events.jsonl` the
way Harn appends it. A client that declared a refresh gets it, naming the document; one that did
not never gets it, and still learns of the change from what it did subscribe to (`harn/status`,
`harn/treeChanged`) and gets the new text, lenses and hover when it asks.
"""

from __future__ import annotations

import pytest

from tests.conformance.bare_client import BareClient
from tests.helpers.fact_lines import fact_line
from tests.lsp.conftest import HARN_DOUBLE, copy_sample

DOC = "harn-state:/memory/project/facts.md"
OPTIONS = {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True}
CLAIM = "Tax is rounded once per invoice, after discounts"


def _caps(content: bool, lens: bool) -> dict:
    workspace: dict = {"workspaceFolders": True}
    if content:
        workspace["textDocumentContent"] = {"dynamicRegistration": False}
    if lens:
        workspace["codeLens"] = {"refreshSupport": True}
    return {"workspace": workspace, "textDocument": {"codeLens": {}, "hover": {"contentFormat": ["plaintext"]}}}


def _refreshes(c: BareClient) -> list[dict]:
    return [r for r in c.server_requests if r["method"].endswith("/refresh")]


@pytest.mark.parametrize(("content", "lens"), [(True, True), (True, False), (False, True), (False, False)],
                         ids=["both", "content-only", "lens-only", "neither"])
def test_a_change_on_disk_refreshes_only_what_the_client_declared(tmp_path, content, lens):
    project = copy_sample(tmp_path)
    c = BareClient.stdio()
    try:
        c.initialize(project, _caps(content, lens), OPTIONS)
        c.wait_notification("harn/status")
        before = c.request("workspace/textDocumentContent", {"uri": DOC})["result"]["text"]
        tax = project / "src/billing/tax.py"
        uri = tax.as_uri()
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                           "text": tax.read_text()}})
        lenses_before = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
        assert CLAIM not in before and not any(x["range"]["start"]["line"] == 0 for x in lenses_before)
        statuses = len([n for n in c.notifications if n["method"] == "harn/status"])
        c.notifications = [n for n in c.notifications if n["method"] != "harn/treeChanged"]
        c.server_requests.clear()  # (a lens refresh when the project loaded: not this change's)

        with open(project / ".harn/memory/project/facts/events.jsonl", "a", encoding="utf-8") as fh:
            fh.write(fact_line(CLAIM, "src/billing/tax.py:1-3")[1] + "\n")

        # what every client hears: the tree's memory view changed, and a new status with one fact more
        c.wait_notification("harn/treeChanged", lambda m: m["params"]["view"] == "memory")
        assert len([n for n in c.notifications if n["method"] == "harn/status"]) > statuses
        if content:
            c.wait_server_request("workspace/textDocumentContent/refresh")
        if lens:
            c.wait_server_request("workspace/codeLens/refresh")
        # a round trip: a refresh spawned with the tree's notification is on the wire before this answer
        c.request("workspace/symbol", {"query": "zzz-nothing"})
        sent = [(r["method"], r.get("params")) for r in _refreshes(c)]
        expected = ([("workspace/textDocumentContent/refresh", {"uri": DOC})] if content else []) + (
            [("workspace/codeLens/refresh", None)] if lens else [])
        assert sorted(sent, key=str) == sorted(expected, key=str)

        # and whatever it declared, asking again gets the change
        after = c.request("workspace/textDocumentContent", {"uri": DOC})["result"]["text"]
        assert CLAIM in after
        lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
        assert any(x["range"]["start"]["line"] == 0 for x in lenses)
        hover = c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 1, "character": 0}})["result"]
        assert hover is not None and CLAIM in hover["contents"]["value"]
        c.request("shutdown")
        c.notify("exit")
        assert c.exit_status() == 0
    finally:
        c.close()

