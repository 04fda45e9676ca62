"""Warming pygls's converter after start (lsp/conversions.py): the messages a first hover, lens or
didOpen brings are then converted with hooks already made (no new hook is generated for them), and
the conversions give the same objects and JSON as on a server that was never warmed."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types as T

from harn_ls.lsp import conversions
from harn_ls.lsp.server import create_server

URI = "file:///tmp/project/src/app.py"
_RANGE = {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 9}}
CLIENT_MESSAGES = [
    {"jsonrpc": "2.0", "method": "textDocument/didOpen",
     "params": {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}}},
    {"jsonrpc": "2.0", "method": "textDocument/didChange",
     "params": {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": "x = 2\n"}]}},
    {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": URI}}},
    {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
     "params": {"textDocument": {"uri": URI}, "position": {"line": 3, "character": 4}}},
    {"jsonrpc": "2.0", "id": 2, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": URI}}},
    {"jsonrpc": "2.0", "id": 3, "method": "codeLens/resolve", "params": {"range": _RANGE, "data": {"t": "facts"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "textDocument/codeAction",
     "params": {"textDocument": {"uri": URI}, "range": _RANGE, "context": {"diagnostics": []}}},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 4}},
]


def _server_objects() -> list:
    rng = T.Range(start=T.Position(line=3, character=0), end=T.Position(line=3, character=9))
    return [
        T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value="**fact**"), range=rng),
        T.CodeLens(range=rng, command=T.Command(title="2 facts", command="harnState.open", arguments=["x"]),
                   data={"t": "facts", "start": 3}),
        T.PublishDiagnosticsNotification(params=T.PublishDiagnosticsParams(uri=URI, diagnostics=[
            T.Diagnostic(range=rng, message="stale", severity=T.DiagnosticSeverity.Warning, source="harn")])),
    ]


def _warmed_server():
    server = create_server()
    for step in conversions.warm_steps(server.protocol):
        step()
    return server


def test_first_messages_after_warming_make_no_new_hook():
    protocol = _warmed_server().protocol
    structure = protocol._converter._structure_func.dispatch
    unstructure = protocol._converter._unstructure_func.dispatch
    misses = structure.cache_info().misses
    for message in CLIENT_MESSAGES:
        protocol.structure_message(message)
    assert structure.cache_info().misses == misses
    misses = unstructure.cache_info().misses
    for obj in _server_objects():
        protocol._serialize_message(obj)
    assert unstructure.cache_info().misses == misses


def test_an_unwarmed_server_makes_hooks_on_first_use():
    """The check above can fail: without the warm-up the same messages generate hooks."""
    protocol = create_server().protocol
    structure = protocol._converter._structure_func.dispatch
    misses = structure.cache_info().misses
    for message in CLIENT_MESSAGES:
        protocol.structure_message(message)
    assert structure.cache_info().misses > misses


def test_warming_changes_no_conversion():
    warm, cold = _warmed_server().protocol, create_server().protocol
    for message in CLIENT_MESSAGES:
        assert warm.structure_message(message) == cold.structure_message(message), message["method"]
    for obj in _server_objects():
        ours = json.dumps(obj, default=warm._serialize_message)  # as pygls writes a message
        theirs = json.dumps(obj, default=cold._serialize_message)
        assert json.loads(ours) == json.loads(theirs), type(obj).__name__


def test_every_handled_method_is_warmed():
    server = create_server()
    methods = conversions.client_methods(server.protocol)
    handled = [m for m in server.protocol.fm.features if m != T.INITIALIZE]  # converted before any warm-up
    assert handled
    for method in handled + [T.TEXT_DOCUMENT_DID_OPEN, T.TEXT_DOCUMENT_DID_CLOSE, T.CANCEL_REQUEST, T.SHUTDOWN]:
        assert method in methods
    assert T.INITIALIZE not in methods


def test_no_notebook_sync_is_advertised():
    """The warm-up leaves the notebook messages out because no client sends them unasked."""
    server = create_server()
    assert server._notebook_document_sync is None  # what pygls puts in the initialize result
    assert not any(m.startswith("notebookDocument/") for m in server.protocol.fm.features)


def test_attrs_classes_in_walks_unions_and_lists():
    found = list(conversions.attrs_classes_in(T.METHOD_TO_TYPES[T.TEXT_DOCUMENT_CODE_LENS][1].__attrs_attrs__.result.type))
    assert found == [T.CodeLens]
    assert set(conversions.attrs_classes_in(list[T.Hover | T.Location] | None)) == {T.Hover, T.Location}


def test_server_warms_once():
    server = create_server()

    async def twice() -> int:
        await server.warm_conversions()
        misses = server.protocol._converter._structure_func.dispatch.cache_info().misses
        await server.warm_conversions()  # a second folder's settle: nothing left to make
        return server.protocol._converter._structure_func.dispatch.cache_info().misses - misses

    assert asyncio.run(twice()) == 0
    assert server.conversions_warmed
