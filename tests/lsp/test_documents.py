"""workspace/textDocumentContent for every harn-state: URI kind."""

from __future__ import annotations

from lsprotocol import types

from tests.lsp.conftest import make_client_fixture

client = make_client_fixture()


async def content(client, uri: str) -> str:
    result = await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))
    return result.text


async def test_capability_advertised(client):
    caps = client.init_result.capabilities
    assert list(caps.workspace.text_document_content.schemes) == ["harn-state"]


async def test_index_lists_everything(client):
    text = await content(client, "harn-state:/index.md")
    assert text.startswith("# Harn state")
    for heading in ("## Problems", "## Pending skill proposals", "## Checkpoints", "## Memory", "## Facts", "## Skills",
                    "## Runs"):
        assert heading in text
    assert "harn-state:/checkpoints/ingest.md" in text
    assert "harn-state:/memory/project/facts.md" in text


async def test_each_document_kind_renders(client):
    index = await content(client, "harn-state:/index.md")
    import re

    uris = sorted(set(re.findall(r"\((harn-state:/[^)\s]+)\)", index)))
    kinds = {u.split("/")[1].split(".")[0] for u in uris}
    assert {"checkpoints", "memory", "facts", "proposals", "skills", "runs", "sessions"} <= kinds
    for uri in uris:
        text = await content(client, uri)
        assert not text.startswith("# Not found"), (uri, text[:200])
        assert len(text.encode()) <= 1_000_000


async def test_transcript_and_recall(client):
    runs = await content(client, "harn-state:/index.md")
    import re

    run_uri = re.search(r"\((harn-state:/runs/[^)]+)\)", runs).group(1)
    run_text = await content(client, run_uri)
    tr_uri = re.search(r"\((harn-state:/transcripts/[^)]+)\)", run_text).group(1)
    tr_text = await content(client, tr_uri)
    assert "# Transcript" in tr_text and "## Events" in tr_text
    recall = await content(client, "harn-state:/recall.md?q=invoice")
    assert "invoice" in recall.lower()


async def test_bad_uris_are_refused(client):
    for uri in ("harn-state:/memory/../../etc/passwd.md", "harn-state:/facts/%2e%2e.md", "harn-state:/nope/x.md",
                "harn-state:/facts/fact_does_not_exist.md"):
        text = await content(client, uri)
        assert text.startswith("# Not found"), uri
