"""Hover and code lenses for facts on source files, and checkpoint lenses on .harn sources."""

from __future__ import annotations

from lsprotocol import types

from tests.lsp.conftest import make_client_fixture, open_file

client = make_client_fixture()


def pos(line: int, ch: int = 0) -> types.Position:
    return types.Position(line=line, character=ch)


async def test_hover_on_fact_range(client):
    uri = open_file(client, client.project / "src/billing/invoice.py")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos(27, 4)))
    assert hover is not None
    text = hover.contents.value
    assert "rounded to cents" in text
    assert "confidence **0.9**" in text
    assert "harn-state:/facts/fact_" in text
    assert hover.range.start.line == 27 and hover.range.end.line == 28
    # outside every fact range: nothing
    none = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos(0, 0)))
    assert none is None


async def test_stale_fact_is_marked(client):
    uri = open_file(client, client.project / "src/billing/invoice.py")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos(15, 2)))
    assert hover is not None
    assert "may be stale" in hover.contents.value


async def test_lenses_bare_then_resolved(client):
    uri = open_file(client, client.project / "src/billing/invoice.py")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lenses and all(lens.command is None for lens in lenses)
    by_line = {lens.range.start.line: lens for lens in lenses}
    assert {15, 27} <= set(by_line)
    assert 72 not in by_line  # that fact was invalidated by a forget event
    resolved = await client.code_lens_resolve_async(by_line[27])
    assert resolved.command.title == "1 fact · observation 0.9"
    assert resolved.command.command == "harnState.open"
    assert resolved.command.arguments[0].startswith("harn-state:/facts/fact_")
    stale = await client.code_lens_resolve_async(by_line[15])
    assert stale.command.title.endswith("may be stale")


async def test_lens_data_names_no_uri_and_foreign_data_is_not_trusted(client):
    """Fact lens data is [file number, start, end], not the URI; a lens this server did not hand
    out (an unknown number, a wrong shape, the old URI form) resolves to no facts."""
    invoice = open_file(client, client.project / "src/billing/invoice.py")
    webhooks = open_file(client, client.project / "src/billing/tax.py")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=invoice)))
    other = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=webhooks)))
    lens = next(lens for lens in lenses if lens.range.start.line == 27)
    number, start, end = lens.data
    assert (start, end) == (28, 29) and "invoice" not in str(lens.data)
    assert all(o.data[0] != number for o in other)  # one number per file
    again = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=invoice)))
    assert {tuple(x.data) for x in again} == {tuple(x.data) for x in lenses}  # stable between requests
    for data in ([number + 10_000_000, start, end], [number], [str(number), start, end], [number, "28", end],
                 {"t": "facts", "uri": invoice, "start": start, "end": end}):
        forged = types.CodeLens(range=lens.range, data=data)
        resolved = await client.code_lens_resolve_async(forged)
        title = resolved.command.title if resolved.command is not None else None
        assert title in (None, "facts changed · reopen"), (data, title)
    assert (await client.code_lens_resolve_async(lens)).command.title == "1 fact · observation 0.9"


async def test_moved_code_reanchors(client):
    path = client.project / "src/billing/invoice.py"
    text = path.read_text()
    path.write_text("# moved down\n# by two lines\n" + text)
    uri = open_file(client, path)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    lines = {lens.range.start.line for lens in lenses}
    assert 29 in lines and 27 not in lines
    lens = next(lens for lens in lenses if lens.range.start.line == 29)
    resolved = await client.code_lens_resolve_async(lens)
    assert "re-anchored" in resolved.command.title


async def test_checkpoint_lenses(client):
    uri = open_file(client, client.project / "pipelines/ingest.harn", "harn")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    titles = []
    for lens in lenses:
        titles.append((await client.code_lens_resolve_async(lens)).command.title)
    assert "cached" in titles
    assert any(t.startswith("cached · keyed sha256:28234a10") for t in titles)
    assert all(lens_target == "harn-state:/checkpoints/ingest.md" for lens_target in
               [(await client.code_lens_resolve_async(lens)).command.arguments[0] for lens in lenses])


async def test_uncached_pipeline(client):
    uri = open_file(client, client.project / "pipelines/release.harn", "harn")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lenses
    for lens in lenses:
        assert (await client.code_lens_resolve_async(lens)).command.title == "not cached"


def test_lens_file_numbers_are_never_reused():
    from harn_ls.lsp.code_lens import LensFiles

    files = LensFiles(max_files=2)
    a, b = files.number("file:///a.py"), files.number("file:///b.py")
    assert a != b and files.number("file:///a.py") == a  # a is now the most recently used
    c = files.number("file:///c.py")  # evicts b, the least recently used
    assert files.uri(b) is None and files.uri(a) == "file:///a.py" and files.uri(c) == "file:///c.py"
    assert files.number("file:///b.py") not in (a, b, c)  # b comes back under a new number
    assert files.uri(str(a)) is None and files.uri(True) is None and files.uri(float(a)) is None


async def test_lenses_follow_a_new_fact_on_the_file(client):
    """Lenses are encoded once per version of the file's spans: a new fact on the file, a saved
    edit of the file, each shows in the next request."""
    from tests.lsp.test_live import new_fact_line

    path = client.project / "src/billing/invoice.py"
    uri = open_file(client, path)

    async def lens_data():
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return sorted((lens.range.start.line, tuple(lens.data)) for lens in lenses)

    first = await lens_data()
    assert await lens_data() == first
    assert 4 not in {line for line, _ in first}
    events = client.project / ".harn/memory/project/facts/events.jsonl"
    client.rec.tree_changed.clear()
    with open(events, "a") as fh:
        fh.write(new_fact_line("Invoices start with a header", "src/billing/invoice.py:5-6") + "\n")
    await client.rec.wait_for(lambda: any(t["view"] == "memory" for t in client.rec.tree_changed), 10)
    second = await lens_data()
    assert {line for line, _ in second} == {line for line, _ in first} | {4}
    lens = next(lens for lens in await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri))) if lens.range.start.line == 4)
    assert (await client.code_lens_resolve_async(lens)).command.title == "1 fact · claim 0.7"
    path.write_text("# one line more\n" + path.read_text())  # saved: its facts are re-anchored
    moved = {line for line, _ in await lens_data()}
    assert 28 in moved and 27 not in moved  # the fact with a snippet follows its code


def test_ready_lenses_are_rebuilt_for_a_new_version_of_the_spans():
    import orjson

    from harn_ls.lsp.code_lens import ReadyLenses

    ready = ReadyLenses(max_files=1)
    groups = {(3, 4): [], (9, 9): []}
    lenses, encoded = ready.get("file:///a.py", groups, 7, [(3, 4), (9, 9)])
    assert lenses == [{"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}}, "data": [7, 3, 4]},
                      {"range": {"start": {"line": 8, "character": 0}, "end": {"line": 8, "character": 0}}, "data": [7, 9, 9]}]
    assert orjson.loads(encoded) == lenses
    assert ready.get("file:///a.py", groups, 7, [(3, 4), (9, 9)])[1] is encoded  # same version: as sent
    newer = dict(groups)  # the span cache's new groups after a change: equal or not, another object
    assert ready.get("file:///a.py", newer, 7, [(3, 4), (9, 9)])[1] is not encoded
    _, renumbered = ready.get("file:///a.py", newer, 8, [(3, 4), (9, 9)])
    assert orjson.loads(renumbered)[0]["data"] == [8, 3, 4]
    ready.get("file:///b.py", {}, 9, [(1, 1)])  # evicts a.py
    assert ready.get("file:///a.py", newer, 8, [(3, 4), (9, 9)])[1] is not renumbered


async def test_a_uri_of_another_scheme_that_urlparse_refuses_gets_no_answer_not_an_error(client):
    """A document the client names by another scheme (here a netloc `urlparse` refuses: an unclosed
    IPv6 bracket, a full-width '#') belongs to no project: hover is None, lenses and actions are []
    — the URI is not parsed as a file path first (that raised ValueError, answered as an error). A `file:`
    URI with such an authority names no path: the same answers (it raised from `loaded_project_for_uri`)."""
    for uri in ("untitled://[x/a.py", "git://a\uff03b/src/billing/invoice.py", "file://[x/src/billing/invoice.py",
                "file://a\uff03b/src/billing/invoice.py"):
        doc = types.TextDocumentIdentifier(uri=uri)
        assert await client.text_document_hover_async(types.HoverParams(text_document=doc, position=pos(0))) is None
        assert list(await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))) == []
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=doc, range=types.Range(start=pos(0), end=pos(0)),
            context=types.CodeActionContext(diagnostics=[])))
        assert list(actions or ()) == [], actions


async def test_a_file_uri_with_a_nul_or_a_capital_scheme(client):
    """`%00` in a `file:` URI's path decodes to a NUL, on which every os call raises ValueError (answered
    as an internal error by documentSymbol before): it names no file. A scheme in capitals is the same
    scheme (RFC 3986 §3.1): `FILE:` names the file `file:` does (it belonged to no project before)."""
    uri = open_file(client, client.project / "src/billing/invoice.py")
    at_fact = types.HoverParams(text_document=types.TextDocumentIdentifier(uri="FILE" + uri[4:]), position=pos(27, 4))
    hover = await client.text_document_hover_async(at_fact)
    assert hover is not None and "rounded to cents" in hover.contents.value
    nul = types.TextDocumentIdentifier(uri=uri.replace("invoice.py", "invoice%00.py"))
    assert await client.text_document_hover_async(types.HoverParams(text_document=nul, position=pos(27, 4))) is None
    assert list(await client.text_document_code_lens_async(types.CodeLensParams(text_document=nul))) == []
    skill = (client.project / ".harn" / "skills" / "nul.md").as_uri()
    missing = (client.project / ".harn" / "skills" / "missing.md").as_uri()
    for doc_uri in (skill.replace("nul.md", "n%00ul.md"), missing):
        got = await client.text_document_document_symbol_async(types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=doc_uri)))
        assert not got, (doc_uri, got)
