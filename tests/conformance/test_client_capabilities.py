"""Answers shaped by what the client declared: one bare client (no optional capability) and one
with all of them, both speaking raw JSON-RPC (tests/conformance/bare_client.py), over stdio (a
server process per test) and over TCP (one server for the module: every test is a new session
on it, with its own copy of the project).

* hover: Markdown only to a client that lists it in hover.contentFormat, else the CLI's text;
* code actions: CodeAction literals only with codeActionLiteralSupport, else Command[];
* every command a lens or action carries is in the server's executeCommandProvider list (or one
  the client named in initializationOptions.clientCommands); `harnState.server.open` shows the
  document through window/showDocument;
* a failed command is a JSON-RPC error carrying the message;
* requests right after `initialized` wait for the project instead of answering empty;
* workspace/codeLens/refresh only to a client that declared refreshSupport;
* workspace symbols at harn-state: documents only to a client that reads them.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.conformance.bare_client import BARE_CAPS, FULL_CAPS, BareClient
from tests.conformance.tcp_server import TcpServer
from tests.lsp.conftest import HARN_DOUBLE, copy_sample

PROPOSAL = "tools-7742da9fd499"
INVOICE = "src/billing/invoice.py"
OPTIONS = {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True}


@pytest.fixture(scope="module")
def tcp_server(tmp_path_factory):
    server = TcpServer(tmp_path_factory.mktemp("tcp"))
    yield server
    server.stop()


@pytest.fixture(params=["stdio-bare", "stdio-full", "tcp-bare", "tcp-full"])
def session(request, tmp_path):
    transport, kind = request.param.split("-")
    project = copy_sample(tmp_path)
    options = dict(OPTIONS)
    if transport == "tcp":
        server = request.getfixturevalue("tcp_server")
        c, options["token"] = BareClient.tcp(server.port), server.token
    else:
        c = BareClient.stdio()
    c.init = c.initialize(project, BARE_CAPS if kind == "bare" else FULL_CAPS, options)
    c.kind, c.project = kind, project
    yield c
    try:
        c.request("shutdown")
        c.notify("exit")
        if transport == "stdio":
            assert c.exit_status() == 0
        else:
            while (msg := c.read()) is not None:  # until the session ends and the connection closes
                assert not (msg.get("method") == "window/logMessage" and msg["params"]["type"] == 1), msg
            assert request.getfixturevalue("tcp_server").alive()  # and the server serves the next test
    finally:
        c.close()


def _open(c: BareClient, rel: str, language: str = "python") -> str:
    path = c.project / rel
    c.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": language, "version": 1,
                                                       "text": path.read_text()}})
    return path.as_uri()


def _executable(c: BareClient) -> set[str]:
    return set(c.init["result"]["capabilities"]["executeCommandProvider"]["commands"])


def test_hover_asked_right_after_initialized_waits_for_the_project_and_fits_the_format(session):
    c = session
    uri = _open(c, INVOICE)  # no wait for harn/status: the project is still loading
    hover = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 27, "character": 4}})
    contents = hover["result"]["contents"]
    if c.kind == "full":
        assert contents["kind"] == "markdown" and "**" in contents["value"]
    else:
        assert contents["kind"] == "plaintext"
        text = contents["value"]
        assert "**" not in text and "\\." not in text and "](" not in text
        assert "observation" in text


def test_workspace_symbols_right_after_initialized_are_not_empty(session):
    found = session.request("workspace/symbol", {"query": ""})["result"]
    assert found, "answered before the project loaded"


def test_workspace_symbols_at_harn_state_documents_only_where_they_can_be_read(session):
    """A memory record's symbol is at its namespace's harn-state: document: sent to a client that reads
    them (workspace.textDocumentContent), left out for one that would open an empty buffer."""
    found = session.request("workspace/symbol", {"query": "dunning"})["result"]
    state = [s for s in found if s["location"]["uri"].startswith("harn-state:")]
    if session.kind == "full":
        assert "harn-state:/memory/workspace/acme.md" in [s["location"]["uri"] for s in state]
    else:
        assert state == [] and all(s["location"]["uri"].startswith("file:") for s in found)


def test_code_actions_are_literals_only_where_declared(session):
    c = session
    uri = f"harn-state:/proposals/{PROPOSAL}.md"
    res = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}})
    items = res["result"]
    assert items
    if c.kind == "full":
        assert all("kind" in a and isinstance(a["command"], dict) for a in items)
    else:
        assert all(isinstance(a["command"], str) and "kind" not in a for a in items)  # Command[]
    commands = [a["command"]["command"] if c.kind == "full" else a["command"] for a in items]
    assert set(commands) <= _executable(c), commands


def test_every_lens_command_is_executable_and_open_goes_through_show_document(session):
    c = session
    uri = _open(c, INVOICE)
    lenses = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    assert lenses
    resolved = [c.request("codeLens/resolve", lens)["result"] for lens in lenses[:5]]
    for lens in resolved:
        cmd = lens["command"]["command"]
        assert cmd == "" or cmd in _executable(c), cmd  # "" = a title only
    opens = [lens["command"] for lens in resolved if lens["command"]["command"]]
    if c.kind == "bare":
        assert not opens  # it can show no document: titles only
        return
    assert opens and opens[0]["command"] == "harnState.server.open"
    res = c.request("workspace/executeCommand", {"command": opens[0]["command"], "arguments": opens[0]["arguments"]})
    assert "error" not in res, res
    shown = [r for r in c.server_requests if r["method"] == "window/showDocument"]
    assert shown and shown[-1]["params"]["uri"] == opens[0]["arguments"][0]


def test_a_failed_command_is_a_response_error_with_its_message(session):
    res = session.request("workspace/executeCommand", {"command": "harnState.acceptProposal",
                                                       "arguments": [{"id": "no-such-proposal"}]})
    assert "result" not in res
    err = res["error"]
    assert err["code"] == -32803 and "no-such-proposal" in err["message"]
    assert err["data"]["ok"] is False and err["data"]["message"] == err["message"]
    bad = session.request("workspace/executeCommand", {"command": "harnState.acceptProposal", "arguments": [{}]})
    assert bad["error"]["code"] == -32602 and "id" in bad["error"]["message"]


def test_refresh_requests_only_where_declared(session):
    c = session
    c.wait_notification("harn/status")
    (c.project / ".harn").mkdir(exist_ok=True)
    c.request("workspace/executeCommand", {"command": "harnState.rescan", "arguments": [{}]})
    time.sleep(1.0)
    c.request("workspace/symbol", {"query": "zzz"})  # drain what came meanwhile
    refreshes = [r["method"] for r in c.server_requests if r["method"].endswith("/refresh")]
    if c.kind == "bare":
        assert refreshes == []
        assert not any(r["method"] in ("workspace/configuration", "window/workDoneProgress/create")
                       for r in c.server_requests)
    else:
        assert "workspace/codeLens/refresh" in refreshes


def test_document_symbols_of_the_documents_harn_ls_owns(session):
    """The outline of a harn-state: document and of a Markdown state file; null for a source file.
    A tree to a client that declared hierarchical symbols, flat SymbolInformation to any other."""
    c = session
    assert c.init["result"]["capabilities"]["documentSymbolProvider"]
    index = c.request("textDocument/documentSymbol", {"textDocument": {"uri": "harn-state:/index.md"}})["result"]
    assert index
    if c.kind == "full":
        assert all("selectionRange" in s and "children" in s for s in index)
        assert any(s["children"] for s in index)  # sections under the title
    else:
        assert all(s["location"]["uri"] == "harn-state:/index.md" for s in index)
        assert any(s.get("containerName") for s in index)
    skill = _open(c, ".harn/skills/deploy/SKILL.md", "markdown")
    found = c.request("textDocument/documentSymbol", {"textDocument": {"uri": skill}})
    assert "result" in found, found
    found = found["result"]
    text = (c.project / ".harn/skills/deploy/SKILL.md").read_text()
    headings = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    names = [s["name"] for s in found] if c.kind == "bare" else [s["name"] for s in found] + [
        k["name"] for s in found for k in s["children"]]
    assert headings and sorted(names) == sorted(headings)
    source = _open(c, INVOICE)
    assert c.request("textDocument/documentSymbol", {"textDocument": {"uri": source}})["result"] is None


def test_document_symbols_read_nothing_outside_the_project_and_never_wait_on_a_fifo(session):
    """A client's URI names the file: `..` segments, a link in the skills folder and a FIFO named `.md`
    are not the project's Markdown (a sibling `project-evil` holds the secret); the server answers the
    next request at once."""
    c = session
    evil = c.project.parent / "project-evil"
    evil.mkdir()
    (evil / "secret.md").write_text("# TOP SECRET heading\n")
    skills = c.project / ".harn" / "skills"
    dotted = f"{skills.as_uri()}/../../../project-evil/secret.md"
    (skills / "leak.md").symlink_to(evil / "secret.md")
    os.mkfifo(skills / "pipe.md")
    for uri in (dotted, (skills / "leak.md").as_uri(), (skills / "pipe.md").as_uri()):
        answer = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert answer.get("result") is None, (uri, answer)
    assert c.request("textDocument/documentSymbol", {"textDocument": {"uri": "harn-state:/index.md"}})["result"]


def test_code_lenses_of_a_fifo_named_harn_never_wait_on_it(session):
    """A `.harn` FIFO the client has not opened: its checkpoint lenses are read through safe_read (refused,
    no lens), and the server answers the next request at once (a plain open() waited for a writer)."""
    c = session
    fifo = c.project / "pipelines" / "stuck.harn"
    os.mkfifo(fifo)
    answer = c.request("textDocument/codeLens", {"textDocument": {"uri": fifo.as_uri()}})
    assert answer.get("result") in ([], None), answer
    ingest = next((c.project / "pipelines").glob("*.harn"))
    assert c.request("textDocument/codeLens", {"textDocument": {"uri": ingest.as_uri()}})["result"]
