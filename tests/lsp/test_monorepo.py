"""A monorepo opened at its root: the Harn projects below it are found and each serves its own files
(issue 29, item 5). The repository root has no harn.toml; `services/agent` (the sample project) and
`tools/other` (the legacy one) have; decoys sit in node_modules, a virtualenv and behind a symlink."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import quote

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import REPO, SAMPLE, _as_dict

LEGACY = REPO / "fixtures" / "legacy-project"


def build_monorepo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLE, repo / "services" / "agent", symlinks=True)
    shutil.copytree(LEGACY, repo / "tools" / "other", symlinks=True)
    (repo / "README.md").write_text("monorepo\n")
    # decoys that look like projects: a package's copy deep in node_modules, a virtualenv, a sibling behind a link
    shutil.copytree(LEGACY, repo / "node_modules" / "@scope" / "agent-kit" / "examples" / "demo", symlinks=True)
    shutil.copytree(LEGACY, repo / "py" / "env" / "lib" / "demo", symlinks=True)
    (repo / "py" / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    shutil.copytree(LEGACY, tmp_path / "repo-evil", symlinks=True)
    os.symlink(tmp_path / "repo-evil", repo / "linked")
    return repo


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    repo = build_monorepo(tmp_path)
    statuses: list[dict] = []
    published: dict[str, list] = {}

    @lsp_client.feature("harn/status")
    def _status(params):
        statuses.append(_as_dict(params))

    lsp_client.protocol.fm.features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)

    @lsp_client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diags(params: types.PublishDiagnosticsParams):
        published[params.uri] = list(params.diagnostics)

    caps = pytest_lsp.client_capabilities("neovim")
    caps.workspace.text_document_content = types.TextDocumentContentClientCapabilities(dynamic_registration=False)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")]))
    lsp_client.statuses, lsp_client.published, lsp_client.repo = statuses, published, repo
    yield
    await lsp_client.shutdown_session()


async def _wait(predicate, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out waiting for the server")


async def test_each_project_below_the_folder_serves_its_own_files(client):
    repo = client.repo
    agent, other = repo / "services" / "agent", repo / "tools" / "other"
    await _wait(lambda: {s["root"] for s in client.statuses} >= {str(agent), str(other)})
    roots = {s["root"] for s in client.statuses}
    assert roots == {str(agent), str(other)}, roots  # no decoy, and not the repository root
    by_root = {s["root"]: s for s in client.statuses}
    assert by_root[str(agent)]["counts"]["facts"] == 7 and by_root[str(agent)]["hasState"] is True
    assert by_root[str(other)]["counts"]["facts"] == 0

    # hover on a source file of services/agent: its facts, its links naming its project
    uri = (agent / "src/billing/invoice.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=(agent / "src/billing/invoice.py").read_text())))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=27, character=0)))
    assert hover is not None and "rounded to cents" in hover.contents.value
    root_q = "root=" + quote(str(agent), safe="")
    assert "harn-state:/facts/" in hover.contents.value and root_q in hover.contents.value

    # lenses: the command opens the fact of this project
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    resolved = await client.code_lens_resolve_async(next(ln for ln in lenses if ln.range.start.line == 27))
    target = resolved.command.arguments[0]
    assert target.startswith("harn-state:/facts/fact_") and target.endswith("?" + root_q)

    # diagnostics on the state files of services/agent; none from the decoys or the repository root
    await _wait(lambda: any(u.startswith(agent.as_uri() + "/") and d for u, d in client.published.items()))
    assert all(u.startswith((agent.as_uri() + "/", other.as_uri() + "/")) for u in client.published), \
        sorted(client.published)

    # index.md per project, each naming its own project in its links
    docs = {}
    for root in (agent, other):
        q = quote(str(root), safe="")
        doc = await client.workspace_text_document_content_async(
            types.TextDocumentContentParams(uri=f"harn-state:/index.md?root={q}"))
        docs[root] = doc.text
    assert docs[agent].startswith("# Harn state — agent")
    assert "[ingest](harn-state:/checkpoints/ingest.md?" + root_q + ")" in docs[agent]
    assert docs[other].startswith("# Harn state — other") and "ingest" not in docs[other]
    # following a link reaches the same project's state
    checkpoint = await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/checkpoints/ingest.md?" + root_q))
    assert checkpoint.text.startswith("# ") and "ingest" in checkpoint.text
    # the tree of a project: its items name it
    page = await client.protocol.send_request_async("harn/tree", {"view": "checkpoints", "root": str(agent)})
    assert page.items and all(root_q in item.uri for item in page.items)


async def test_the_projects_setting_picks_the_roots_live(client):
    repo = client.repo
    agent, other = repo / "services" / "agent", repo / "tools" / "other"
    await _wait(lambda: {s["root"] for s in client.statuses} >= {str(agent), str(other)})
    await _wait(lambda: any(u.startswith(agent.as_uri() + "/") and d for u, d in client.published.items()))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"harnState": {"projectRoots": ["tools/other"]}}))
    # services/agent is no longer served: its problems are withdrawn, its files have no hover
    await _wait(lambda: all(d == [] for u, d in client.published.items() if u.startswith(agent.as_uri() + "/")))
    uri = (agent / "src/billing/invoice.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=(agent / "src/billing/invoice.py").read_text())))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=27, character=0)))
    assert hover is None
    # one project left: index.md is tools/other's, its links unchanged (no root needed)
    doc = await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri="harn-state:/index.md"))
    assert doc.text.startswith("# Harn state — other") and "root=" not in doc.text


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"]))
async def untrusted(lsp_client: LanguageClient, tmp_path: Path):
    """The repository's own settings name the roots, in an untrusted workspace: one inside the folder,
    one leading to a sibling (`repo-evil`, behind `../` and behind a symlink)."""
    repo = build_monorepo(tmp_path)
    statuses: list[dict] = []

    @lsp_client.feature("harn/status")
    def _status(params):
        statuses.append(_as_dict(params))

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"),
        initialization_options={"workspaceTrusted": False, "settings": {"harnState": {
            "projectRoots": ["tools/other", "../repo-evil", "linked"]}}},
        workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="repo")]))
    lsp_client.statuses, lsp_client.repo = statuses, repo
    yield
    await lsp_client.shutdown_session()


async def test_an_untrusted_workspace_cannot_name_roots_outside_it(untrusted):
    repo = untrusted.repo
    other = repo / "tools" / "other"
    await _wait(lambda: any(s["root"] == str(other) for s in untrusted.statuses))
    await asyncio.sleep(0.5)  # anything else would have been loaded by now as well
    assert {s["root"] for s in untrusted.statuses} == {str(other)}
    warnings = [m.message for m in untrusted.messages if m.type == types.MessageType.Warning]
    refused = [w for w in warnings if "not trusted" in w]
    assert len(refused) == 2 and any("`../repo-evil`" in w for w in refused) and any("`linked`" in w for w in refused)
