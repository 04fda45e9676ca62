"""Issue 27 item 7: transcript and message text is never auto-linked.

Before: in the rendered transcript (and the run comparison), `https://evil.example/approve` and
`//evil.example/share` from a message were left as they were, and the preview's linkifier (GFM,
markdown-it linkify) made anchors of them. Now `://`, a leading `//` and a domain's `.` are
backslash-escaped the way the Markdown escaper breaks other structure: the text reads the same, and
no linkifier sees a URL. The only links left are the ones harn-ls builds (`harn-state:`, `file:`).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from harn_ls.model.workspace import Workspace
from harn_ls.render import render_uri
from harn_ls.render.markdown import unescape_markdown
from harn_ls.render.svg import md_text
from tests.lsp.conftest import SAMPLE, make_client_fixture

URLS = ["https://evil.example/approve", "//evil.example/share", "www.evil.example", "mailto:x@evil.example"]
TEXT = "Please approve at " + URLS[0] + " or " + URLS[1] + "\n" + URLS[1] + " and " + URLS[2] + " " + URLS[3]

# What a linkifier would take for a link: a scheme with `://`, a protocol-relative `//host`, or a
# bare `www.host` / `host.tld` — none of which may appear unescaped.
_LIVE = re.compile(r"(?<!\\)://|(?<![\\/:])//(?=\w)|(?<!\\)\.(?=example)")


def add_transcript_run(proj: Path) -> None:
    events = [
        {"kind": "message", "role": "user", "visibility": "public",
         "blocks": [{"type": "text", "text": TEXT, "visibility": "public"}]},
        {"kind": "message", "role": "assistant", "visibility": "public",
         "blocks": [{"type": "text", "text": "Sure: " + TEXT, "visibility": "public"},
                    {"type": "tool_call", "id": "toolu_1", "name": "fetch", "arguments": {"url": URLS[0]},
                     "visibility": "public"}]},
    ]
    transcript = {"_type": "transcript", "version": 2, "id": "tr_link", "events": events, "messages": [], "assets": []}
    runs = proj / ".harn-runs"
    runs.mkdir(exist_ok=True)
    for rid in ("run_link_a", "run_link_b"):
        (runs / f"{rid}.json").write_text(json.dumps({
            "_type": "run_record", "id": rid, "status": "completed", "task": TEXT, "stages": [],
            "transcript": transcript}))


def prose(md: str) -> str:
    """The Markdown a previewer parses as inline text: not our one-line HTML, not our own links."""
    lines = [ln for ln in md.split("\n") if not ln.startswith("<")]
    return re.sub(r"\]\((harn-state|file):[^)]*\)", "]()", "\n".join(lines))


def test_md_text_breaks_every_autolink():
    for url in URLS:
        out = md_text(url)
        assert not _LIVE.search(out), out
        assert unescape_markdown(out) == url  # reads the same


def test_transcript_and_compare_documents_have_no_live_url(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    add_transcript_run(proj)
    ws = Workspace.load(str(proj), env={}, home=str(tmp_path / "home"))
    for uri in ("harn-state:/transcripts/tr_link.md", "harn-state:/runs/run_link_a.md?normalized=1"):
        md = render_uri(ws, uri)
        assert "evil" in md, uri
        live = _LIVE.findall(prose(md))
        assert not live, (uri, [m for m in re.finditer(_LIVE, prose(md))][:3], prose(md)[:2000])


# ------------------------------------------------------------------------------------------ over LSP (stdio)
@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    add_transcript_run(proj)
    return proj


client = make_client_fixture()


async def test_transcript_over_lsp_has_no_live_url(client):
    md = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/transcripts/tr_link.md"))).text
    assert "evil" in md and "approve" in md
    assert not _LIVE.search(prose(md))
