"""pytest-lsp fixtures: the real `harn-ls serve` over stdio on a temporary copy of the sample project."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
HARN_DOUBLE = REPO / "tests" / "harn_test_double.py"
# what our VS Code extension declares it runs itself (lenses and actions name them)
CLIENT_COMMANDS = ["harnState.open", "harnState.compareWithExisting"] + [
    f"harnState.ui.{verb}Hitl" for verb in ("approve", "deny", "answer", "accept", "decline", "finish")]


def copy_sample(dest: Path) -> Path:
    target = dest / "sample-project"
    shutil.copytree(SAMPLE, target, symlinks=True)
    return target


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


# The longest any wait for the server goes on before the test fails (see Recorder.wait_for).
WAIT_FLOOR_S = 60.0


class Recorder:
    """Collects server->client traffic the tests wait for."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.tree_changed: list[dict] = []
        self.status: list[dict] = []
        self.content_refresh: list[str] = []
        self.lens_refresh = 0
        self.hitl_arrived: list[dict] = []
        self.order: list[str] = []  # every message above, by method, in the order the client got them

    @property
    def shown(self) -> list[str]:
        return [m.message for m in self.client.messages]

    @property
    def show_document(self) -> list[str]:
        return [d.uri for d in self.client.shown_documents]

    async def wait_for(self, predicate, timeout: float = 10.0) -> None:
        """Until `predicate()` holds. `timeout` is how long the test expects it may take; the wait goes on
        up to WAIT_FLOOR_S all the same: returning as soon as it holds costs nothing, while a busy 2-core
        CI box that answers a little late would otherwise fail a run. (No test measures a latency here:
        those that promise one time it themselves.)"""
        deadline = asyncio.get_running_loop().time() + max(timeout, WAIT_FLOOR_S)
        while not predicate():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("timed out waiting for the server")
            await asyncio.sleep(0.02)


def _as_dict(obj):
    if hasattr(obj, "_asdict"):
        return {k: _as_dict(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [_as_dict(v) for v in obj]
    return obj


def _fix_code_action_union(client: LanguageClient) -> None:
    """lsprotocol structures any result item that has a `command` key as a Command, so a
    CodeAction carrying a command loses its kind and data. Decide as VS Code does: a
    Command has a string `command`."""
    converter = client.protocol._converter

    def hook(obj, _):
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(types.Command | types.CodeAction, hook)


def make_client_fixture(init_options: dict | None = None):
    @pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND))
    async def lsp(lsp_client: LanguageClient, project: Path):
        await start_session(lsp_client, project, init_options)
        yield
        await lsp_client.shutdown_session()

    return lsp


SERVER_COMMAND = [sys.executable, "-m", "harn_ls", "serve"]


async def start_session(lsp_client: LanguageClient, project: Path, init_options: dict | None = None) -> Recorder:
    """Hook the Recorder to `lsp_client`, initialize a session on `project` as VS Code would, and
    wait for the first harn/status; the client gets `rec` and `project` attributes."""
    rec = Recorder(lsp_client)
    _fix_code_action_union(lsp_client)

    @lsp_client.feature("harn/treeChanged")
    def _tree_changed(params):
        rec.tree_changed.append(_as_dict(params))
        rec.order.append("harn/treeChanged")

    @lsp_client.feature("harn/status")
    def _status(params):
        rec.status.append(_as_dict(params))
        rec.order.append("harn/status")

    @lsp_client.feature("harn/hitlArrived")
    def _hitl_arrived(params):
        rec.hitl_arrived.append(_as_dict(params))

    @lsp_client.feature(types.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH)
    def _refresh(params):
        rec.content_refresh.append(params.uri)
        rec.order.append(types.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH)
        return None

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(params):
        rec.lens_refresh += 1
        rec.order.append(types.WORKSPACE_CODE_LENS_REFRESH)
        return None

    caps = pytest_lsp.client_capabilities("visual-studio-code")
    # vscode-languageclient 11 declares this (LSP 3.18); pytest-lsp's older VS Code snapshot does not.
    caps.workspace.text_document_content = types.TextDocumentContentClientCapabilities(dynamic_registration=True)
    lsp_client.init_result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps,
        root_uri=project.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="sample")],
        initialization_options={"clientCommands": CLIENT_COMMANDS, **(init_options or {
            "settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True})},
    ))
    await rec.wait_for(lambda: rec.status, 20)
    lsp_client.rec = rec
    lsp_client.project = project
    return rec


def open_file(client: LanguageClient, path: Path, language: str = "python") -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=path.read_text())))
    return uri


async def execute_command(client: LanguageClient, params: types.ExecuteCommandParams):
    """workspace/executeCommand as our VS Code extension reads it: a refusal or failure is a
    JSON-RPC error (-32803 RequestFailed, -32602 InvalidParams, -32800 RequestCancelled) whose
    `data` is the contract payload ({ok: false, message, ...}); that payload is returned."""
    from pygls.exceptions import JsonRpcException

    try:
        return await client.workspace_execute_command_async(params)
    except JsonRpcException as exc:
        if exc.code in (-32803, -32602, -32800) and isinstance(exc.data, dict) and exc.data.get("ok") is False:
            assert exc.message == exc.data["message"], (exc.message, exc.data)
            return exc.data
        raise
