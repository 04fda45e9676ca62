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
