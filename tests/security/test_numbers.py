"""Issue 27 item 11: out-of-range numbers in URIs and arguments are refused with one line.

Before: `harn-ls show 'harn-state:/events/hitl.approvals.md?page=99999999999999999999'` ended in an
OverflowError traceback ("Python int too large to convert to SQLite INTEGER"); `--timeout 1e400`
was taken as an endless probe. Now each is one sentence naming the value and the range: CLI exit
2, a "Not found"-style document over LSP, an InvalidParams error for `harn/tree`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from harn_ls.render.uri import UriError, parse_uri
from tests.lsp.conftest import REPO, SAMPLE, make_client_fixture

HUGE = "99999999999999999999"


def test_uri_numbers_are_bounded():
    for uri in (f"harn-state:/events/hitl.approvals.md?page={HUGE}", "harn-state:/facts/x.md?page=-1",
                "harn-state:/facts/x.md?page=1e3"):
        with pytest.raises(UriError, match=r"refused: \?page=.*expected a whole number from 0 to 1000000000"):
            parse_uri(uri).page()
    assert parse_uri("harn-state:/facts/x.md?page=3").page() == 3
    assert parse_uri("harn-state:/facts/x.md").page() == 0
    with pytest.raises(UriError, match=r"\?k="):
        parse_uri(f"harn-state:/recall.md?q=x&k={HUGE}").number("k", 5, 1, 1000)


def _run(proj: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harn_ls", *args], capture_output=True, text=True, timeout=60,
                          cwd=str(proj), env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.mark.parametrize("args, said", [
    (("show", ".", f"harn-state:/events/hitl.approvals.md?page={HUGE}"), f"?page='{HUGE}'"),
    (("show", ".", f"harn-state:/checkpoints/ingest.md?version={HUGE}"), f"?version='{HUGE}'"),
    (("show", ".", f"harn-state:/recall.md?q=invoice&k={HUGE}"), f"?k='{HUGE}'"),
    (("recall", ".", "invoice", "-k", HUGE), f"argument -k: '{HUGE}' is out of range"),
    (("proposals", ".", "list", "--days", HUGE), f"argument --days: '{HUGE}' is out of range"),
    (("probe", "typecheck", "src/billing/invoice.py", "--timeout", "1e400"), "argument --timeout: '1e400' is out of range"),
])
def test_cli_refuses_in_one_line(tmp_path, args, said):
    proj = tmp_path / "proj"
    shutil.copytree(SAMPLE, proj, symlinks=True)
    done = _run(proj, *args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Error:" not in done.stderr.replace("error:", "")
    complaint = [ln for ln in done.stderr.splitlines() if not ln.startswith(("usage:", " "))]
    assert len(complaint) == 1 and said in complaint[0], done.stderr


# ------------------------------------------------------------------------------------------ over LSP (stdio)
client = make_client_fixture()


async def test_lsp_refuses_in_one_line(client):
    doc = (await client.workspace_text_document_content_async(types.TextDocumentContentParams(
        uri=f"harn-state:/events/hitl.approvals.md?page={HUGE}"))).text
    assert f"?page='{HUGE}'" in doc and "OverflowError" not in doc and "could not render" not in doc
    with pytest.raises(JsonRpcException, match="out of range"):
        await client.protocol.send_request_async("harn/tree", {"view": "runs", "page": int(HUGE)})
    # the server is still serving
    index = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/index.md"))).text
    assert "harn-state:/checkpoints/ingest.md" in index
