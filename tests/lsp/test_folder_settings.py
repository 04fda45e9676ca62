"""Settings per workspace folder (issue 31, item 7), over real LSP: the server asks
`workspace/configuration` once per folder (scopeUri = the folder's URI) besides the unscoped item;
each project follows its own folder's answer; an application-scoped setting (`hitl.reviewer`) is
taken from the unscoped answer only; a restricted one is never taken from a folder's answer in an
untrusted workspace; `workspace/didChangeConfiguration` asks every folder again; a client that
cannot answer keeps initializationOptions, and a bare one the defaults."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.helpers.configuration_requests import record_configuration_requests
from tests.lsp.conftest import CLIENT_COMMANDS, HARN_DOUBLE, SAMPLE, Recorder, _as_dict, execute_command, open_file
from tests.lsp.test_hitl import escalate

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "harn_ls", "serve"])
LOW_FACT = "fact_cd5cbe83cf038f756167ec14bc59b59c"  # observation 0.6 at src/billing/invoice.py:16
PROPOSAL = "prompt-2629ccc60808"
SKILL = "learned-reconcile-stripe-payouts-ledger/SKILL.md"

# folder a's own answer: a threshold, a skill root (restricted), and a reviewer (application-scoped)
A_SETTINGS = {"facts": {"minConfidence": 0.7}, "skillRoot": ".burin/skills", "hitl": {"reviewer": "mallory"}}
WORKSPACE_SETTINGS = {"harnPath": str(HARN_DOUBLE), "hitl": {"reviewer": "alice"}}


def two_folders(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(SAMPLE, a, symlinks=True)
    shutil.copytree(SAMPLE, b, symlinks=True)
    return a, b


async def start(client: LanguageClient, folders: list[Path], *, trusted: bool = True,
                caps: types.ClientCapabilities | None = None, init_options: dict | None = None,
                roots: list[Path] | None = None) -> Recorder:
    """Initialize on `folders`, record each workspace/configuration item the server asks for, and wait
    for every folder's first harn/status."""
    rec = Recorder(client)
    asked = record_configuration_requests(client)

    @client.feature("harn/status")
    def _status(params):
        rec.status.append(_as_dict(params))

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(params):
        rec.lens_refresh += 1

    @client.feature(types.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH)
    def _content_refresh(params):
        rec.content_refresh.append(params.uri)

    if caps is None:
        caps = pytest_lsp.client_capabilities("visual-studio-code")
        caps.workspace.text_document_content = types.TextDocumentContentClientCapabilities(dynamic_registration=True)
    options = init_options if init_options is not None else {
        "clientCommands": CLIENT_COMMANDS, "settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": trusted}
    await client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=folders[0].as_uri(), initialization_options=options,
        workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders]))
    await rec.wait_for(lambda: {s["root"] for s in rec.status} >= {str(f) for f in roots or folders}, 60)
    client.rec, client.asked = rec, asked
    return rec


async def hover(client: LanguageClient, path: Path, line: int):
    uri = open_file(client, path)
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=2)))


async def lens_lines(client: LanguageClient, path: Path) -> set[int]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=open_file(client, path))))
    return {lens.range.start.line for lens in lenses or []}


async def content(client: LanguageClient, uri: str) -> str:
    return (await client.workspace_text_document_content_async(types.TextDocumentContentParams(uri=uri))).text


def configured(client: LanguageClient, a: Path, a_settings: dict) -> None:
    client.set_configuration(WORKSPACE_SETTINGS, section="harnState")
    client.set_configuration(a_settings, section="harnState", scope_uri=a.as_uri())


@pytest_lsp.fixture(config=SERVER)
async def folders(lsp_client: LanguageClient, tmp_path: Path):
    a, b = two_folders(tmp_path)
    configured(lsp_client, a, A_SETTINGS)  # b has no answer of its own: it follows the workspace's
    await start(lsp_client, [a, b])
    lsp_client.a, lsp_client.b = a, b
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def untrusted(lsp_client: LanguageClient, tmp_path: Path):
    a, b = two_folders(tmp_path)
    configured(lsp_client, a, A_SETTINGS)
    await start(lsp_client, [a, b], trusted=False)
    lsp_client.a, lsp_client.b = a, b
    yield
    await lsp_client.shutdown_session()


async def test_the_server_asks_for_each_folder_with_its_scope_uri(folders):
    a, b = folders.a, folders.b
    assert folders.asked[:3] == [(None, "harnState"), (a.as_uri(), "harnState"), (b.as_uri(), "harnState")]


async def test_each_project_follows_its_own_folders_settings(folders):
    a, b = folders.a, folders.b
    invoice = Path("src/billing/invoice.py")
    # a: facts under 0.7 are hidden from hovers, lenses and documents; b (the workspace's: 0) shows them
    assert await hover(folders, a / invoice, 15) is None
    shown = await hover(folders, b / invoice, 15)
    assert shown is not None and "confidence **0.6**" in shown.contents.value
    assert 15 not in await lens_lines(folders, a / invoice) and 27 in await lens_lines(folders, a / invoice)
    assert {15, 27} <= await lens_lines(folders, b / invoice)
    assert f"harn-state:/facts/{LOW_FACT}.md" not in await content(folders, f"harn-state:/index.md?root={a}")
    assert f"harn-state:/facts/{LOW_FACT}.md" in await content(folders, f"harn-state:/index.md?root={b}")
    # skillRoot: the proposal document shows, and Accept writes, each folder's own
    assert f"### `.burin/skills/{SKILL}`" in await content(folders, f"harn-state:/proposals/{PROPOSAL}.md?root={a}")
    assert f"### `.claude/skills/{SKILL}`" in await content(folders, f"harn-state:/proposals/{PROPOSAL}.md?root={b}")
    for folder in (a, b):
        result = await execute_command(folders, types.ExecuteCommandParams(
            command="harnState.acceptProposal", arguments=[{"id": PROPOSAL, "root": str(folder)}]))
        assert result["ok"] is True, result
    assert (a / ".burin/skills" / SKILL).is_file() and not (a / ".claude/skills" / SKILL).exists()
    assert (b / ".claude/skills" / SKILL).is_file() and not (b / ".burin/skills" / SKILL).exists()


async def test_a_folder_cannot_set_an_application_scoped_setting(folders):
    """hitl.reviewer is the user's name: folder a's answer says "mallory", the unscoped one "alice";
    `harn orchestrator resume` for a request in folder a is signed by alice."""
    rid = escalate(folders.a)
    await folders.rec.wait_for(lambda: any(s["root"] == str(folders.a) and s["counts"]["hitlPending"] == 2
                                           for s in folders.rec.status), 10)
    result = await execute_command(folders, types.ExecuteCommandParams(
        command="harnState.resumeEscalation", arguments=[{"requestId": rid, "reason": "ack"}]))
    assert result["ok"] is True, result
    assert result["argv"][:5] == ["orchestrator", "resume", rid, "--reviewer", "alice"]
    assert result["argv"][8] == str(folders.a / ".harn")  # the request was folder a's


async def test_did_change_configuration_asks_every_folder_again(folders):
    a, b = folders.a, folders.b
    invoice = Path("src/billing/invoice.py")
    assert await hover(folders, b / invoice, 15) is not None
    folders.set_configuration({"facts": {"minConfidence": 0.7}}, section="harnState", scope_uri=b.as_uri())
    folders.set_configuration({"facts": {"minConfidence": 0}}, section="harnState", scope_uri=a.as_uri())
    asked_before = len(folders.asked)
    before = folders.rec.lens_refresh
    folders.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await folders.rec.wait_for(lambda: folders.rec.lens_refresh > before, 10)
    assert folders.asked[asked_before:] == [(None, "harnState"), (a.as_uri(), "harnState"), (b.as_uri(), "harnState")]
    assert await hover(folders, b / invoice, 15) is None
    assert await hover(folders, a / invoice, 15) is not None
    # a's new answer names no skillRoot: it follows the workspace's again
    assert f"### `.claude/skills/{SKILL}`" in await content(folders, f"harn-state:/proposals/{PROPOSAL}.md?root={a}")


async def test_a_folder_added_later_is_asked_for_its_own_settings(folders, tmp_path):
    c = tmp_path / "c"
    shutil.copytree(SAMPLE, c, symlinks=True)
    folders.set_configuration({"facts": {"minConfidence": 0.7}}, section="harnState", scope_uri=c.as_uri())
    asked_before = len(folders.asked)
    folders.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri=c.as_uri(), name="c")], removed=[])))
    await folders.rec.wait_for(lambda: any(s["root"] == str(c) for s in folders.rec.status), 60)
    assert (c.as_uri(), "harnState") in folders.asked[asked_before:]
    assert await hover(folders, c / "src/billing/invoice.py", 15) is None
    assert await hover(folders, folders.b / "src/billing/invoice.py", 15) is not None


async def test_untrusted_a_folder_sets_no_restricted_setting(untrusted):
    """In an untrusted workspace folder a's skillRoot (it names a path) is not taken; its threshold is."""
    a = untrusted.a
    assert f"### `.claude/skills/{SKILL}`" in await content(untrusted, f"harn-state:/proposals/{PROPOSAL}.md?root={a}")
    assert await hover(untrusted, a / "src/billing/invoice.py", 15) is None
    assert await hover(untrusted, untrusted.b / "src/billing/invoice.py", 15) is not None


@pytest_lsp.fixture(config=SERVER)
async def bare(lsp_client: LanguageClient, tmp_path: Path):
    a, b = two_folders(tmp_path)
    configured(lsp_client, a, A_SETTINGS)  # held by the client, never asked for: it declared no configuration support
    await start(lsp_client, [a, b], caps=types.ClientCapabilities(), init_options={})
    lsp_client.a, lsp_client.b = a, b
    yield
    await lsp_client.shutdown_session()


async def test_a_bare_client_gets_the_defaults_and_is_never_asked(bare):
    assert bare.asked == []
    for folder in (bare.a, bare.b):
        assert await hover(bare, folder / "src/billing/invoice.py", 15) is not None  # minConfidence 0
        assert f"### `.claude/skills/{SKILL}`" in await content(bare, f"harn-state:/proposals/{PROPOSAL}.md?root={folder}")


@pytest_lsp.fixture(config=SERVER)
async def no_pull(lsp_client: LanguageClient, tmp_path: Path):
    a, b = two_folders(tmp_path)
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    caps.workspace.configuration = False
    await start(lsp_client, [a, b], caps=caps, init_options={
        "settings": {"harnState": {"facts": {"minConfidence": 0.7}}}, "workspaceTrusted": True})
    lsp_client.a, lsp_client.b = a, b
    yield
    await lsp_client.shutdown_session()


async def test_without_configuration_support_initialization_options_apply_to_every_folder(no_pull):
    assert no_pull.asked == []
    for folder in (no_pull.a, no_pull.b):
        assert await hover(no_pull, folder / "src/billing/invoice.py", 15) is None
        assert await hover(no_pull, folder / "src/billing/invoice.py", 27) is not None


def nested_folders(tmp_path: Path) -> tuple[Path, Path]:
    """`outer/` holds no harn.toml of its own; its search finds the project of the nested folder `outer/inner/`."""
    outer = tmp_path / "outer"
    outer.mkdir()
    shutil.copytree(SAMPLE, outer / "inner", symlinks=True)
    return outer, outer / "inner"


@pytest_lsp.fixture(config=SERVER)
async def nested(lsp_client: LanguageClient, tmp_path: Path):
    outer, inner = nested_folders(tmp_path)
    configured(lsp_client, inner, {"facts": {"minConfidence": 0.7}})
    await start(lsp_client, [outer, inner], roots=[inner])
    lsp_client.outer, lsp_client.inner = outer, inner
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def outer_only(lsp_client: LanguageClient, tmp_path: Path):
    outer, inner = nested_folders(tmp_path)
    configured(lsp_client, inner, {"facts": {"minConfidence": 0.7}})
    await start(lsp_client, [outer], roots=[inner])
    lsp_client.outer, lsp_client.inner = outer, inner
    yield
    await lsp_client.shutdown_session()


async def test_a_nested_folders_project_follows_the_nested_folders_settings(nested):
    """As VS Code takes a resource's setting from its innermost folder: the outer folder's search finds the
    project too, but the inner folder's answer (minConfidence 0.7) is the one its hovers follow."""
    assert (nested.inner.as_uri(), "harnState") in nested.asked
    assert await hover(nested, nested.inner / "src/billing/invoice.py", 15) is None


async def test_a_nested_folder_added_later_takes_over_its_projects_settings(outer_only):
    invoice = outer_only.inner / "src/billing/invoice.py"
    shown = await hover(outer_only, invoice, 15)  # outer's (the workspace's) threshold: the 0.6 fact shows
    assert shown is not None and "0.6" in shown.contents.value
    outer_only.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(uri=outer_only.inner.as_uri(), name="inner")], removed=[])))
    await outer_only.rec.wait_for(lambda: (outer_only.inner.as_uri(), "harnState") in outer_only.asked, 20)
    for _ in range(600):  # the folder is taken over once its settings answer is in (a minute at most)
        if await hover(outer_only, invoice, 15) is None:
            break
        await asyncio.sleep(0.1)
    assert await hover(outer_only, invoice, 15) is None
