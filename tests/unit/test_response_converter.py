"""The shallow response envelope sends the same JSON as pygls's own converter, for every result
shape the handlers return (plain dicts, lsprotocol objects, mixes, enums, None)."""

from __future__ import annotations

import json

from lsprotocol import types as T
from pygls.protocol import JsonRPCResponseMessage, default_converter

from harn_ls.lsp.server import response_converter
from tests.helpers.pygls_json import pygls_default


def _dumps(converter, message) -> str:
    return json.dumps(message, default=pygls_default(converter))


def test_same_json_as_pygls_for_every_result_shape():
    lens = T.CodeLens(range=T.Range(start=T.Position(line=2, character=1), end=T.Position(line=2, character=3)),
                      command=T.Command(title="3 facts", command="harnState.open", arguments=["harn-state:/x.md"]),
                      data={"t": "facts", "start": 3})
    hover = T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value="**x**"))
    results = [
        None, [], {"items": [], "nextPage": None},
        [{"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 0}}} for i in range(5)],
        [lens, {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}],
        hover, [T.SymbolInformation(name="n", kind=T.SymbolKind.Class, location=T.Location(
            uri="harn-state:/facts/f.md", range=T.Range(start=T.Position(line=0, character=0),
                                                         end=T.Position(line=0, character=0))))],
        T.TextDocumentContentResult(text="# doc\n"),
    ]
    ours, theirs = response_converter(), default_converter()
    for result in results:
        message = JsonRPCResponseMessage(id=7, result=result, jsonrpc="2.0")
        assert json.loads(_dumps(ours, message)) == json.loads(_dumps(theirs, message)), result
