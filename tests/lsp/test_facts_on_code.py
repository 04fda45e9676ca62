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
