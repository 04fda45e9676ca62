"""A client between the bare one and VS Code, shaped like Neovim's built-in client without our plugin
(tests/conformance/test_client_capabilities.py has the two ends): workspace folders, configuration,
utf-8 then utf-16, Markdown hovers, hierarchical symbols, code action literals and code-lens refresh,
but no `textDocumentContent`, no work-done progress, no `showDocument`, and dynamic registration
false everywhere. Each main feature answers it with what it can use:

* positions in utf-8 (its first offer); `workspace/configuration` asked for the workspace and the
  folder; no progress, no showDocument, no registration request, no content refresh ever sent;
* state problems published as diagnostics on the files they are in;
* Markdown hovers; lenses titled, with no command it cannot run (it can show no `harn-state:`
  document and named no client commands), and a code-lens refresh after a change on disk;
* server commands run (rescan's counts, recall's URI), and the `harn-state:` documents the server
  offers (the capability names the scheme) are served to a `workspace/textDocumentContent` request;
* workspace symbols only at locations it can open (files), never at `harn-state:` URIs it cannot read.
"""

from __future__ import annotations

import pytest

from tests.conformance.bare_client import BareClient
from tests.helpers.fact_lines import fact_line
from tests.lsp.conftest import HARN_DOUBLE, copy_sample

NEOVIM_LIKE: dict = {
    "general": {"positionEncodings": ["utf-8", "utf-16"]},
    "window": {"workDoneProgress": False, "showMessage": {}},
    "workspace": {"workspaceFolders": True, "configuration": True, "applyEdit": True,
                  "codeLens": {"refreshSupport": True},
                  "didChangeConfiguration": {"dynamicRegistration": False},
                  "didChangeWatchedFiles": {"dynamicRegistration": False},
                  "symbol": {"dynamicRegistration": False}},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": True},
        "hover": {"dynamicRegistration": False, "contentFormat": ["markdown", "plaintext"]},
        "codeLens": {"dynamicRegistration": False},
        "codeAction": {"dynamicRegistration": False, "codeActionLiteralSupport": {
            "codeActionKind": {"valueSet": ["", "quickfix", "refactor", "source"]}}},
        "documentSymbol": {"dynamicRegistration": False, "hierarchicalDocumentSymbolSupport": True},
        "publishDiagnostics": {"relatedInformation": True},
    },
}
OPTIONS = {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True}
INVOICE = "src/billing/invoice.py"
PROPOSAL = "tools-7742da9fd499"


@pytest.fixture
def nvim(tmp_path):
    project = copy_sample(tmp_path)
    c = BareClient.stdio()
    c.project = project
    c.init = c.initialize(project, NEOVIM_LIKE, OPTIONS)
    c.wait_notification("harn/status")
    yield c
    try:
        c.request("shutdown")
        c.notify("exit")
        assert c.exit_status() == 0
    finally:
        c.close()


def _open(c: BareClient, rel: str, language: str = "python") -> str:
    path = c.project / rel
    c.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": language, "version": 1,
                                                       "text": path.read_text()}})
    return path.as_uri()


def _executable(c: BareClient) -> set[str]:
    return set(c.init["result"]["capabilities"]["executeCommandProvider"]["commands"])


def test_the_session_takes_only_what_it_declared(nvim):
    c = nvim
    caps = c.init["result"]["capabilities"]
    assert caps["positionEncoding"] == "utf-8"
    assert caps["workspace"]["textDocumentContent"]["schemes"] == ["harn-state"]
    asked = [r for r in c.server_requests if r["method"] == "workspace/configuration"]
    assert asked and asked[0]["params"]["items"] == [
        {"section": "harnState"}, {"scopeUri": c.project.as_uri(), "section": "harnState"}]
    c.request("workspace/symbol", {"query": "zzz"})  # (drain)
    never = {"window/workDoneProgress/create", "window/showDocument", "client/registerCapability",
             "workspace/textDocumentContent/refresh"}
    assert not [r["method"] for r in c.server_requests if r["method"] in never]
    assert not [n for n in c.notifications if n["method"] == "$/progress"]


def test_state_problems_are_published_on_their_files(nvim):
    c = nvim
    tampered = (c.project / ".harn/skills/tampered/SKILL.md").as_uri()
    published = c.wait_notification("textDocument/publishDiagnostics", lambda m: m["params"]["uri"] == tampered)
    (diag,) = published["params"]["diagnostics"]
    assert diag["code"] == "HL-SKILL-009" and diag["severity"] == 1 and diag["source"] == "harn-ls"


def test_hover_lenses_and_actions_carry_nothing_it_cannot_use(nvim):
    c = nvim
    uri = _open(c, INVOICE)
    hover = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 27, "character": 4}})
    assert hover["result"]["contents"]["kind"] == "markdown" and "rounded to cents" in hover["result"]["contents"]["value"]

    lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    by_line = {lens["range"]["start"]["line"]: lens for lens in lenses}
    resolved = c.request("codeLens/resolve", by_line[27])["result"]
    # a title the user reads; no command it could not run (harnState.open is no command of this client)
    assert resolved["command"] == {"title": "1 fact · observation 0.9", "command": ""}
    harn = _open(c, "pipelines/ingest.harn", "harn")
    for lens in c.request("textDocument/codeLens", {"textDocument": {"uri": harn}})["result"]:
        cmd = c.request("codeLens/resolve", lens)["result"]["command"]
        assert cmd["title"] and cmd["command"] in ("", *_executable(c)), cmd

    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": f"harn-state:/proposals/{PROPOSAL}.md"},
                                                    "range": {"start": {"line": 0, "character": 0},
                                                              "end": {"line": 0, "character": 0}},
                                                    "context": {"diagnostics": []}})["result"]
    assert actions and all(a["command"]["command"] in _executable(c) for a in actions)
    assert {a["command"]["command"] for a in actions} == {"harnState.acceptProposal", "harnState.rejectProposal"}


def test_read_commands_and_the_documents_the_server_offers(nvim):
    c = nvim
    rescan = c.request("workspace/executeCommand", {"command": "harnState.rescan", "arguments": [{}]})["result"]
    (counts,) = rescan["counts"].values()
    status = [n for n in c.notifications if n["method"] == "harn/status"][-1]["params"]
    assert counts["facts"] == status["counts"]["facts"] > 0
    recall = c.request("workspace/executeCommand", {"command": "harnState.recall",
                                                    "arguments": [{"query": "late fees"}]})["result"]
    assert recall["uri"].startswith("harn-state:/recall.md?")
    text = c.request("workspace/textDocumentContent", {"uri": recall["uri"]})["result"]["text"]
    assert "# Recall: late fees" in text and "fact_cd5cbe83cf038f756167ec14bc59b59c" in text
    # the document is the plain-text reader's: no picture lines for a client that did not ask for them
    memory = c.request("workspace/textDocumentContent", {"uri": "harn-state:/memory/agent/notes.md"})["result"]["text"]
    assert "# Memory — agent/notes" in memory and '<div class="harn-picture">' not in memory
    symbols = c.request("textDocument/documentSymbol", {"textDocument": {"uri": "harn-state:/index.md"}})["result"]
    assert symbols and all("children" in s for s in symbols)


def test_workspace_symbols_point_only_at_what_it_can_open(nvim):
    c = nvim
    for query in ("", "late fees", "deploy"):
        found = c.request("workspace/symbol", {"query": query})["result"]
        assert found, f"no symbol at all for {query!r}"
        uris = [s["location"]["uri"] for s in found]
        assert all(u.startswith("file:") for u in uris), [u for u in uris if not u.startswith("file:")][:5]
    (fee,) = [s for s in c.request("workspace/symbol", {"query": "late fees"})["result"] if "Late fees" in s["name"]]
    assert fee["location"] == {"uri": (c.project / INVOICE).as_uri(), "range": {
        "start": {"line": 15, "character": 0}, "end": {"line": 15, "character": 0}}}


def test_a_change_on_disk_refreshes_its_lenses(nvim):
    c = nvim
    uri = _open(c, "src/billing/tax.py")
    c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    c.server_requests.clear()
    with open(c.project / ".harn/memory/project/facts/events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(fact_line("Tax rounds half-even", "src/billing/tax.py:1-2")[1] + "\n")
    c.wait_notification("harn/treeChanged", lambda m: m["params"]["view"] == "memory")
    c.wait_server_request("workspace/codeLens/refresh")
    c.request("workspace/symbol", {"query": "zzz"})  # (a content refresh would be on the wire before this answer)
    assert not [r for r in c.server_requests if r["method"] == "workspace/textDocumentContent/refresh"]
    lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    assert any(lens["range"]["start"]["line"] == 0 for lens in lenses)
