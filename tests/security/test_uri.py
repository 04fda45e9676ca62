"""Issue 12 item 11: `harn-state:` URI patterns match the whole string.

Before: `_SAFE_NAME` used `^...$`, and `$` also matches before a trailing newline, so
`harn-state:/facts/<id>%0A.md` named the fact `<id>\\n` and `harn-state:/index.md\\n` was accepted.
"""

from __future__ import annotations

import re

import pytest
from lsprotocol import types

from harn_ls.render import UriError, parse_uri
from tests.lsp.conftest import make_client_fixture

client = make_client_fixture()


@pytest.mark.parametrize("uri", [
    "harn-state:/facts/abc%0A.md",      # encoded newline at the end of the name
    "harn-state:/facts/abc.md\n",       # raw trailing newline after the route
    "harn-state:/index.md\n",
    "harn-state:/recall.md\n",
    "harn-state:/memory/project/facts%0A.md",
    "harn-state:/runs/r1.md\r\n",
    "harn-state:/facts/a%0Ab.md",
])
def test_trailing_or_embedded_newline_refused(uri):
    with pytest.raises(UriError):
        parse_uri(uri)


def test_plain_names_still_parse():
    assert parse_uri("harn-state:/facts/abc.md").name == "abc"
    assert parse_uri("harn-state:/memory/project/facts.md").name == "project/facts"
    assert parse_uri("harn-state:/index.md").kind == "index"


async def test_lsp_document_with_trailing_newline_is_not_found(client):
    index = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/index.md"))).text
    fact_uri = re.search(r"\((harn-state:/facts/[^)\s?]+\.md)", index).group(1)
    good = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=fact_uri))).text
    assert not good.startswith("# Not found")
    for bad in (fact_uri + "\n", fact_uri[:-3] + "%0A.md"):
        text = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=bad))).text
        assert text.startswith("# Not found"), (bad, text[:200])
