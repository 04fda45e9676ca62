"""Items 6 and 7 over LSP: the real `harn-ls serve` on stdio, opened on a hostile project.

Response sizes are measured as the JSON the client received. Before the caps: a hover on the
5 MB fact's lines was 5.2 MB, the `harn/tree` page of observation facts 5.2 MB (the issue: 15 MB
with three such facts)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from lsprotocol import types

from harn_ls.actions.proposals import planned_files
from harn_ls.model.workspace import Workspace
from harn_ls.render.limits import MAX_RESPONSE_BYTES
from tests.lsp.conftest import make_client_fixture, open_file
from tests.security.hostile_data import make_hostile_project
from tests.security.inert import assert_no_live_markup

EVIL = "prompt-evil00000001"
CONFLICT = ".claude/skills/learned-sneaky-helper/SKILL.md"

client = make_client_fixture()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = make_hostile_project(tmp_path)
    # Someone already has a different skill where Accept would write: the proposal offers Compare.
    target = proj / CONFLICT
    target.parent.mkdir(parents=True)
    target.write_text("---\nname: learned-sneaky-helper\ndescription: the one we wrote ourselves\n---\n\nHello.\n")
    return proj


def _size(obj) -> int:
    """Bytes of the JSON the client received (lsprotocol objects, or pygls' generic objects for `harn/tree`)."""
    from lsprotocol.converters import get_converter

    def plain(o):
        if hasattr(o, "_asdict"):
            return {k: plain(v) for k, v in o._asdict().items()}
        if isinstance(o, (list, tuple)):
            return [plain(v) for v in o]
        return o

    data = plain(obj) if hasattr(obj, "_asdict") else get_converter().unstructure(obj)
    size = len(orjson.dumps(data))
    print(f"response bytes: {size:,}")
    return size


async def test_responses_stay_under_one_megabyte(client):
    uri = open_file(client, client.project / "src/billing/invoice.py")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=27, character=4)))
    assert hover is not None and "more bytes" in hover.contents.value
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert _size(hover) < 30_000
    assert_no_live_markup(hover.contents.value, "hover")

    tree = await client.protocol.send_request_async("harn/tree", {"view": "memory", "parent": "fk:observation", "page": 0})
    assert _size(tree) < 100_000
    assert any("more bytes" in it.tooltip for it in tree.items)

    doc = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/facts/fact_huge_claim.md"))).text
    assert len(doc.encode()) < 100_000 and "more bytes" in doc
    ckpt = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/checkpoints/ingest.md"))).text
    assert len(ckpt.encode()) <= MAX_RESPONSE_BYTES and "more bytes" in ckpt

    symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="invoice totals"))
    assert symbols and _size(symbols) <= MAX_RESPONSE_BYTES
    assert all(len(s.name.encode()) <= 80 for s in symbols)


async def test_compare_gets_the_raw_text_accept_writes(client):
    uri = f"harn-state:/proposals/{EVIL}.md"
    acts = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    compare = next(a for a in acts if a.kind == "source.harnState.compare")
    arg = compare.command.arguments[0]
    assert arg["path"].endswith(CONFLICT)
    assert arg["uri"] == f"harn-state:/proposals/{EVIL}.md?file=.claude%2Fskills%2Flearned-sneaky-helper%2FSKILL.md"
    raw = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=arg["uri"]))).text
    ws = Workspace.load(str(client.project))
    expected = planned_files(ws, ws.proposal(EVIL)).files[0].text
    assert raw == expected
    # The description's fake block is in the raw text only as the YAML string Accept writes.
    assert raw.startswith("---\nname: learned-sneaky-helper\ndescription: \"Reusable guidance.  ## What Accept writes")
    # VS Code encodes the whole query of a custom-scheme URI; the server reads that form too.
    encoded = arg["uri"].replace("?file=", "?file%3D").replace("%2F", "%252F")
    again = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=encoded))).text
    assert again == raw
