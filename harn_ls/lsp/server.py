"""`harn-ls serve`: the server class, its lifecycle and the change fan-out.

Features live one per module (hover, code_lens, documents, diagnostics,
tree, symbols, code_actions, commands); each exposes `register(server)`.
"""

# ruff: noqa: E402 -- start_trace marks the time before and after the imports below (lsp/start_trace.py)
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from harn_ls.lsp import start_trace

start_trace.mark("server modules: importing")

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCResponseMessage, LanguageServerProtocol, default_converter
from pygls.protocol.language_server import lsp_method
from pygls.uris import from_fs_path

from harn_ls import __version__
from harn_ls import contract as P
from harn_ls.lsp import (
    code_actions,
    code_lens,
    commands,
    diagnostics,
    document_symbols,
    documents,
    heap,
    hover,
    messages,
    probe,
    symbols,
    transport,
    tree,
)
from harn_ls.lsp.capabilities import ClientProfile, pictures_option
from harn_ls.lsp.diagnostic_registry import DiagnosticsRegistry
from harn_ls.lsp.file_uris import file_path
from harn_ls.lsp.folders import ProjectFolders
from harn_ls.lsp.probe import ProbeState
from harn_ls.lsp.project import SETTLE_MAX_WAIT_S, SETTLE_QUIET_S, Project, paused_gc
from harn_ls.lsp.project_links import argument_for, link_root
from harn_ls.lsp.requests import RequestRegistry
from harn_ls.lsp.settings import Settings, folder_settings, from_initialization_options, parse_settings
from harn_ls.model.accept_plan import skill_root_warning
from harn_ls.model.change_kinds import CORE_KINDS, ChangeSet, K
from harn_ls.model.project_discovery import FolderProjects
from harn_ls.render import RenderSettings, make_uri
from harn_ls.util.safe_read import is_under

start_trace.mark("server modules: imported")
log = logging.getLogger("harn_ls")
SLOW_HANDLER_SECONDS = 0.1
SHUTDOWN_GRACE_SECONDS = 5.0
# A request that arrives before the workspace's projects have loaded waits this long for them
# (instead of an empty answer the client would keep: it does not know to ask again).
PROJECT_WAIT_SECONDS = 10.0
# The session whose client a log record is sent to (TCP serves several; a record from a thread of
# no session goes to stderr only), and, over stdio, the one session every record goes to.
SESSION: contextvars.ContextVar[HarnLanguageServer | None] = contextvars.ContextVar("harn_ls_session", default=None)


def response_converter():
    """pygls's converter, except that a plain response is not walked by cattrs.

    pygls hands every outgoing message to `json.dumps(..., default=unstructure)`. For a
    `JsonRPCResponseMessage` the default hook walks the whole result through cattrs first:
    ~11 ms for the 542 plain-dict code lenses of a busy file, more than the request's budget.
    The result is already JSON-ready (dicts and lists) or holds lsprotocol objects, which
    `json.dumps` still hands to the converter one by one, so a shallow envelope is the same bytes.
    """
    converter = default_converter()
    converter.register_unstructure_hook(
        JsonRPCResponseMessage, lambda m: {"id": m.id, "jsonrpc": m.jsonrpc, "result": m.result})
    return converter


class HarnProtocol(LanguageServerProtocol):
    """pygls's protocol with LSP 3.17's lifecycle kept exactly (pygls answered a request before
    `initialize` with null, never answered one after `shutdown`, and exited 0 on an `exit` without
    `shutdown`): before initialize a request is answered -32002 (ServerNotInitialized) and a
    notification dropped; after shutdown a request is answered -32600 (InvalidRequest); `exit`
    ends the session with status 0 after shutdown, else 1 (the transport, lsp/transport.py, reads
    `ended` and `exit_code`)."""

    NEW, RUNNING, SHUT_DOWN = "new", "running", "shut down"

    def __init__(self, server: LanguageServer, converter: Any) -> None:
        super().__init__(server, converter)
        self.converter = converter  # the one pygls converts messages with (conversions.warm_steps warms it)
        self.requests = RequestRegistry()  # our handlers' in-flight requests (see lsp/requests.py)
        self.phase = self.NEW
        self.shutdown_id: Any = None  # the shutdown request's id: an `exit` right behind it still gets its answer
        self.exit_code: int | None = None  # set by `exit`
        self.ended = asyncio.Event()  # exit received: the transport stops reading and closes

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """A JSON-RPC error response written by us (the writer frames it, as it frames pygls's)."""
        if self.writer is not None:
            self.writer.write(transport.error_body(msg_id, code, message))

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None) if method is not None else None
        if method == types.EXIT:
            self.exit_code = 0 if self.phase == self.SHUT_DOWN else 1
            self.ended.set()
            return
        if method is not None:
            if self.phase == self.NEW and method != types.INITIALIZE:
                if msg_id is not None:
                    self.send_error(msg_id, transport.SERVER_NOT_INITIALIZED,
                                    f"{method}: the server is not initialized (send initialize first)")
                return
            if self.phase == self.SHUT_DOWN:
                if msg_id is not None:
                    self.send_error(msg_id, transport.INVALID_REQUEST,
                                    f"{method}: the server is shut down; only exit is accepted now")
                return
            if method == types.INITIALIZE:
                if self.phase != self.NEW:
                    self.send_error(msg_id, transport.INVALID_REQUEST, "initialize was already received")
                    return
                self.phase = self.RUNNING
            elif method == types.SHUTDOWN:
                self.phase = self.SHUT_DOWN
                self.shutdown_id = msg_id
        # pygls answers `$/cancelRequest` itself; tell our running handler too (a probe stops its process).
        if method == types.CANCEL_REQUEST:
            msg_id = getattr(getattr(message, "params", None), "id", None)
            if msg_id is not None:
                self.requests.cancel(msg_id)
        super().handle_message(message)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        # pygls builds no textDocumentContent capability; advertise our scheme here.
        ws_caps = result.capabilities.workspace or types.WorkspaceOptions()
        ws_caps.text_document_content = types.TextDocumentContentOptions(schemes=[P.SCHEME])
        result.capabilities.workspace = ws_caps
        return result


class LoopMonitor:
    """Warn when anything holds the event loop for more than 100 ms.

    A helper thread pings the loop; a late answer means a handler held it.
    The name of the last handler that started is logged with the delay.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, server: HarnLanguageServer, period: float = 0.05) -> None:
        self.loop = loop
        self.server = server
        self.period = period
        self.stalls: list[tuple[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harn-loop-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            answered = threading.Event()
            sent = time.perf_counter()
            try:
                self.loop.call_soon_threadsafe(answered.set)
            except RuntimeError:
                return
            if answered.wait(SLOW_HANDLER_SECONDS):
                continue
            answered.wait(30)
            held = time.perf_counter() - sent
            name = self.server.current_handler
            self.stalls.append((name, held))
            log.warning("event loop held for %.0f ms (last handler: %s)", held * 1000, name)

    def stop(self) -> None:
        self._stop.set()


def timed(name: str, server: HarnLanguageServer, fn: Callable) -> Callable:
    """Record which handler runs, for the loop monitor's warning, and (async handlers of a
    request) the request in `server.requests`, so cancellation and shutdown reach it."""
    if asyncio.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            server.current_handler = name
            with server.requests.track(server.protocol.msg_id, name):
                return await fn(*args, **kwargs)
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        server.current_handler = name
        return fn(*args, **kwargs)
    return wrapper


class HarnLanguageServer(ProjectFolders, LanguageServer):
    """All server state is declared here, typed; feature modules add none of their own."""

    protocol: HarnProtocol

    def __init__(self) -> None:
        super().__init__("harn-ls", __version__, protocol_cls=HarnProtocol, converter_factory=response_converter)
        # -- from the client
        # harnState.*: the workspace's (initializationOptions, didChangeConfiguration, the unscoped
        # workspace/configuration answer; the only source of application- and machine-scoped settings)
        # and each workspace folder's own (the answer for its scopeUri); lsp/settings.py, lsp/folders.py
        self.settings: Settings = Settings()
        self.folder_settings: dict[str, Settings] = {}  # workspace folder -> its settings (absent: the workspace's)
        self.folder_uris: dict[str, str] = {}  # workspace folder -> its URI as the client sent it (the scopeUri)
        self.trusted: bool = True
        self.client: ClientProfile = ClientProfile()  # what the client declared it takes (lsp/capabilities.py)
        self.pending_folders: list[str] = []  # from initialize, loaded on initialized
        # -- fixed by the command line, never by a client: the harn binary (None = harnState.harnPath)
        # and whether probes may run at all (serve --tcp without --allow-probes: no).
        self.harn_override: str | None = None
        self.probes_allowed: bool = True
        # -- projects and what we told the client about them
        self.projects: dict[str, Project] = {}  # project root -> project (several per workspace folder in a monorepo)
        self.folder_roots: dict[str, list[str]] = {}  # workspace folder -> the roots of the projects it serves
        # workspace folder -> its project search (and the loads it started) begun at initialize, taken over by add_folder
        self.preloading: dict[str, asyncio.Task[tuple[FolderProjects, list[str]]]] = {}
        self.loads: dict[str, tuple[Project, asyncio.Future[Any]]] = {}  # project root -> (project, its load) not served yet
        self.progress_allowed = False  # work-done progress only after the client's `initialized` (LSP lifecycle)
        self.served: dict[str, tuple[str, str]] = {}  # harn-state URI -> (project root, text sha1)
        self.renders = documents.Renders()  # harn-state documents made, and those made after a change (served as made)
        self.diagnostics: DiagnosticsRegistry[types.Diagnostic] = DiagnosticsRegistry(
            functools.partial(diagnostics.send, self), diagnostics.normalize_uri)
        self.probe_states: dict[str, ProbeState] = {}  # document URI -> range and text a probe checked
        self._skill_root_warned: set[tuple[str, str]] = set()  # (folder, skillRoot) already warned about
        # -- running work
        self.background: set[asyncio.Task] = set()
        self.current_handler: str = "-"
        self.conversions_warmed: bool = False  # the converter's hooks made ahead of first use (once per server)
        self.monitor: LoopMonitor | None = None
        self._project_wait_over: bool = False  # a wait for the projects timed out once: no request waits again
        self.adding_folders: int = 0  # add_folder calls running
        self._loading_moved = asyncio.Event()  # pulsed when what `projects_loaded` looks at changed (loading_moved)

    @property
    def position_encoding(self) -> str:
        """The encoding of every position sent or read in this session (utf-8, utf-16, utf-32)."""
        return self.client.position_encoding

    def projects_loaded(self) -> bool:
        return not self.pending_folders and not self.preloading and not self.loads and not self.adding_folders and all(
            p.ws is not None or p.closed for p in list(self.projects.values()))

    def loading_moved(self) -> None:
        """A folder or project load ended, or one was dropped: the requests waiting for the projects look again."""
        self._loading_moved.set()
        self._loading_moved.clear()  # (the waiters already woken stay woken; later ones wait for the next change)

    async def wait_for_projects(self, timeout: float = PROJECT_WAIT_SECONDS) -> None:
        """Until the workspace folders given so far have loaded (at most `timeout` seconds): a hover or
        lens asked right after `initialized` is answered from the project, not empty. Woken by `loading_moved`."""
        if self.projects_loaded() or self._project_wait_over:
            return
        deadline = time.monotonic() + timeout
        while not self.projects_loaded():
            left = deadline - time.monotonic()
            if left <= 0:
                self._project_wait_over = True
                log.warning("a request waited %.0f s for the projects to load; answering without them", timeout)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._loading_moved.wait(), left)

    async def loaded_project_for(self, path: str | None) -> Project | None:
        """The project holding the file at `path` (`file_path` of a client's URI, None for none), once
        the projects have loaded."""
        await self.wait_for_projects()
        return self.project_for_path(path) if path else None

    @property
    def requests(self) -> RequestRegistry:
        """The requests our handlers are serving (kept by the protocol, which sees `$/cancelRequest`)."""
        return self.protocol.requests

    def handler(self, method: str, options: Any = None) -> Callable:
        """`@server.feature` plus the handler name the loop monitor reports."""
        def decorator(fn: Callable) -> Callable:
            return self.feature(method, options)(timed(method, self, fn))
        return decorator

    def command(self, command_name: str) -> Callable:
        """`@server.command` with the same bookkeeping as `handler` (loop monitor, cancellation)."""
        register = super().command(command_name)

        def decorator(fn: Callable) -> Callable:
            return register(timed(command_name, self, fn))
        return decorator

    # ------------------------------------------------------------- helpers
    def spawn(self, coro, name: str) -> asyncio.Task:
        """Run a background task whose failure is logged instead of lost."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.background.add(task)

        def _done(t: asyncio.Task) -> None:
            self.background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task %s failed", name, exc_info=t.exception())
        task.add_done_callback(_done)
        return task

    def harn_env(self, settings: Settings | None = None) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
        """The environment Harn's locations are resolved from: harn-ls's own, then `harnState.harnEnv`
        (of `settings`: a project's folder's, else the workspace's) over it. (env, where each settings
        variable came from, names the user did not choose: the settings' in an untrusted workspace,
        confined to the project)."""
        extra = dict((settings or self.settings).harnEnv)
        env = {**os.environ, **extra}
        return env, {k: "harnState.harnEnv" for k in extra}, (() if self.trusted else tuple(extra))

    def harn_program(self, proj: Project | None = None) -> str:
        """The `harn` binary every subprocess (probes, escalation resume) runs: the command line's
        choice when there is one (always over TCP), else the harnPath setting (of the project's folder)."""
        return self.harn_override or self.settings_for(proj).harnPath

    def render_settings(self, proj: Project | None = None) -> RenderSettings:
        """What the project's documents show, by its folder's settings."""
        settings = self.settings_for(proj)
        return RenderSettings(show_private=settings.transcripts.showPrivate,
                              min_confidence=settings.facts.minConfidence,
                              skill_root=settings.skillRoot or None)

    def project_for_path(self, path: str) -> Project | None:
        """The innermost project holding `path`."""
        return max((p for p in self.projects.values() if is_under(path, p.root)), key=lambda p: len(p.root), default=None)

    async def project_holding(self, kind: str, name: str, root: str | None = None) -> Project | None:
        """In a multi-root workspace, the folder whose state has this proposal / fact /
        pipeline / document; `root` (a folder path) wins when the client gives one. The
        membership tests run on each project's worker thread, never on the event loop."""
        await self.wait_for_projects()
        if root:
            for proj in self.projects.values():
                if root in (proj.folder_path, proj.root):
                    return proj
        if len(self.projects) > 1 and name:
            for proj in list(self.projects.values()):
                if proj.ws is not None and await proj.run(lambda p=proj: holds(p.ws, kind, name)):
                    return proj
        return self.default_project()

    def default_project(self) -> Project | None:
        return next(iter(self.projects.values()), None)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """`window/showMessage`, made inert on the way out (lsp/messages.py); put values in with `quote`."""
        messages.show(self, message, kind)

    # -------------------------------------------------------- change fan-out
    async def on_changes(self, proj: Project, changes: ChangeSet) -> None:
        n_problems = await diagnostics.publish(self, proj)
        # Status first: what follows makes the client ask (documents, lenses, the tree), and a request
        # that arrives while the status is still being counted on the project thread waits for it.
        await self.send_status(proj, n_problems)
        await documents.refresh_changed(self, proj, changes)
        if self.client.code_lens_refresh:
            self.spawn(self._refresh_lenses(), "codeLens/refresh")
        for view in tree.views_for(changes):
            self.protocol.notify(P.TREE_CHANGED, P.to_wire(P.TreeChangedParams(view=view)))
        if K.HITL in changes.kinds:
            await self._announce_hitl(proj)
        if K.MEMORY not in changes.kinds:
            return

        # The recall index queued this batch's records (RecallEngine.apply); fold them in once the
        # client has been quiet for a moment (at most SETTLE_MAX_WAIT_S later), so that neither the
        # notifications above nor the requests they cause wait for the tokenizing.
        async def fold_recall_queue() -> None:
            waited = 0.0
            while waited < SETTLE_MAX_WAIT_S:
                await asyncio.sleep(SETTLE_QUIET_S)
                waited += SETTLE_QUIET_S
                if self.requests.quiet_for() >= SETTLE_QUIET_S:
                    break
            if not proj.closed:
                # the index is over records, not facts: a fold queued by the start's first fan-out
                # must not decode the facts the load deferred in the middle of the recall warm-up
                await proj.run_before_facts(paused_gc(lambda: proj.loaded.fold_recall_queue()))

        self.spawn(fold_recall_queue(), "recall index update")

    async def _announce_hitl(self, proj: Project) -> None:
        """`harn/hitlArrived` for requests waiting for a human that were not there before (issue 16)."""
        new = await proj.run_before_facts(lambda: proj.loaded.event_logs.take_new_requests())
        if new:
            messages.hitl_arrived(self, proj.root, [
                (r, argument_for(make_uri("hitl", r.request_id), link_root(self, proj))) for r in new])

    async def _refresh_lenses(self) -> None:
        try:
            await self.workspace_code_lens_refresh_async(None)
        except Exception as exc:  # clients may refuse; nothing to recover
            log.debug("codeLens/refresh: %s", exc)

    async def send_status(self, proj: Project, n_problems: int | None = None) -> None:
        skill_root = self.settings_for(proj).skillRoot

        def _status() -> dict:
            ws = proj.loaded
            problems = n_problems if n_problems is not None else len(ws.problems())
            warning = skill_root_warning(ws, skill_root)
            return P.to_wire(P.StatusParams(
                root=ws.root, counts=ws.counts(), problems=problems, watching=proj.watching, recall_ready=ws.recall_ready,
                warnings=[warning] if warning else [],
                has_state=os.path.isdir(ws.paths.state_root) or os.path.isdir(ws.paths.run_root)))
        self.protocol.notify(P.STATUS, await proj.run_before_facts(_status))  # counts facts, decodes none

    async def pull_configuration(self, folders: Iterable[str]) -> None:
        """`workspace/configuration` for section harnState: one unscoped item (the workspace's settings,
        and the only source of application- and machine-scoped ones) and one per workspace folder with
        its URI as scopeUri (LSP 3.17), so folders of a multi-root workspace may differ. A client that
        cannot answer keeps what initializationOptions and didChangeConfiguration gave."""
        if not self.client.configuration:
            return
        folders = list(dict.fromkeys(folders))
        items = [types.ConfigurationItem(section="harnState")] + [
            types.ConfigurationItem(scope_uri=self.folder_uris.get(f) or from_fs_path(f), section="harnState")
            for f in folders]
        try:
            result = await self.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as exc:
            log.debug("workspace/configuration failed: %s", exc)
            return
        if not isinstance(result, (list, tuple)):  # (pygls hands a JSON array over as a tuple)
            return
        errors: list[str] = []
        if result and isinstance(result[0], dict):
            self.settings, errors = parse_settings(result[0], self.settings)
        for folder, raw in zip(folders, result[1:], strict=False):  # (a short answer: the rest keep theirs)
            if isinstance(raw, dict):  # (a folder the client has nothing for follows the workspace's)
                self.folder_settings[folder], folder_errors = folder_settings(raw, self.settings, self.trusted)
                errors += folder_errors
            else:
                self.folder_settings.pop(folder, None)
        for e in dict.fromkeys(errors):  # a client repeats the workspace's bad value for every folder: once
            log.warning(e)


# document kind -> the Workspace mapping keyed by its names
_HELD_IN = {"facts": "facts_by_id", "checkpoints": "checkpoints", "memory": "memory", "runs": "runs",
            "transcripts": "transcripts"}


def holds(ws, kind: str, name: str) -> bool:
    """Whether this workspace has the proposal / fact / pipeline / ... `name` (dict lookups)."""
    if kind in _HELD_IN:
        return name in getattr(ws, _HELD_IN[kind])
    if kind == "proposals":
        return ws.pattern is not None and any(p.id == name for p in ws.pattern.pending)
    if kind == "skills":
        return ws.skills is not None and any(s.id == name for s in ws.skills.skills + ws.skills.shadowed)
    if kind == "sessions":
        return ws.sessions is not None and any(s.id == name for s in ws.sessions.sessions)
    if kind == "hitl":
        return ws.event_logs.request(name) is not None
    return False


class _ToClient(logging.Handler):
    """harn_ls's log records to the client of the session they come from (`window/logMessage`);
    over stdio every record goes to the one client, over TCP a record from no session stays on
    stderr (a client must not read another's)."""

    def __init__(self) -> None:
        super().__init__()
        self.only: HarnLanguageServer | None = None  # stdio: the one session
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        server = SESSION.get() or self.only
        # nothing to a client before its initialize (over TCP: before it showed the token)
        if server is None or server.protocol.writer is None or server.protocol.phase == HarnProtocol.NEW:
            return
        with contextlib.suppress(Exception):
            kind = types.MessageType.Error if record.levelno >= logging.ERROR else (
                types.MessageType.Warning if record.levelno >= logging.WARNING else types.MessageType.Log)
            messages.log_line(server, self.format(record), kind)


TO_CLIENT = _ToClient()
log.addHandler(TO_CLIENT)
log.setLevel(logging.INFO)


def create_server() -> HarnLanguageServer:
    server = HarnLanguageServer()
    start_trace.mark("server created")

    @server.feature(types.INITIALIZE)
    def initialize(ls: HarnLanguageServer, params: types.InitializeParams) -> None:
        start_trace.mark("initialize received")
        ls.client = ClientProfile.of(params.capabilities, params.initialization_options)
        settings, trusted, errors = from_initialization_options(params.initialization_options)
        pictures_warning = pictures_option(params.initialization_options)[1]
        if pictures_warning:  # (ls.client took the value; a bad one is told like a bad setting)
            errors.append(pictures_warning)
        ls.settings = settings
        ls.trusted = trusted if trusted is not None else settings.trustedByDefault
        for e in errors:
            log.warning(e)
        uris = [f.uri for f in (params.workspace_folders or [])] or ([params.root_uri] if params.root_uri else [])
        folders = [(path, uri) for uri in uris if (path := file_path(uri))]
        if not folders and params.root_path:
            folders = [(params.root_path, from_fs_path(params.root_path) or "")]
        ls.folder_uris = {os.path.abspath(path): uri for path, uri in folders}
        ls.pending_folders = [path for path, _ in folders]
        for folder in ls.pending_folders:
            ls.preload(folder)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: HarnLanguageServer, params: types.InitializedParams) -> None:
        start_trace.mark("initialized received")
        if ls.monitor is None:
            ls.monitor = LoopMonitor(asyncio.get_running_loop(), ls)
        ls.show_preloads()
        await ls.pull_configuration(ls.folder_uris)
        folders, ls.pending_folders = ls.pending_folders, []
        ls.loading_moved()
        for folder in folders:
            await ls.add_folder(folder)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(ls: HarnLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for f in params.event.removed:
            if (path := file_path(f.uri)) is not None:
                ls.remove_folder(path)
                ls.folder_uris.pop(os.path.abspath(path), None)
        added = [(os.path.abspath(path), f.uri) for f in params.event.added if (path := file_path(f.uri)) is not None]
        ls.folder_uris.update(added)
        await ls.pull_configuration(path for path, _ in added)  # the new folders' own settings, before their search
        for path, _ in added:
            await ls.add_folder(path)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def config_changed(ls: HarnLanguageServer, params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        roots_before = {f: list(ls.settings_of_folder(f).projectRoots) for f in ls.folder_roots}
        # Settings pushed with the notification are the workspace's (they name no folder); a client that
        # answers workspace/configuration is asked again for the workspace and every folder (VS Code
        # sends `settings: null` and expects exactly that).
        if isinstance(raw, dict) and isinstance(raw.get("harnState"), dict):
            ls.settings, errors = parse_settings(raw["harnState"], ls.settings)
            for e in errors:
                log.warning(e)
        await ls.pull_configuration(ls.folder_roots)
        changed = [f for f, before in roots_before.items() if ls.settings_of_folder(f).projectRoots != before]
        if changed:
            await ls.reconsider_folders(changed)
        await ls.reload_for_env()  # Harn's locations moved (harnState.harnEnv)
        for proj in [p for p in ls.projects.values() if p.ws is not None]:
            await ls.warn_skill_root(proj)
            await ls.send_status(proj)
        if ls.client.code_lens_refresh:
            ls.spawn(ls._refresh_lenses(), "codeLens/refresh")
        # Settings change what documents show (minConfidence, showPrivate): re-fetch the open ones that differ.
        every = ChangeSet(kinds=set(CORE_KINDS))
        for proj in list(ls.projects.values()):
            if proj.ws is not None:
                await documents.refresh_changed(ls, proj, every)

    @server.handler(types.SHUTDOWN)
    async def shutdown(ls: HarnLanguageServer, params: Any) -> None:
        # pygls then cancels the requests still in flight; ours are asked to stop first and given a
        # moment to answer (a probe kills its process), so none is cancelled under pygls' feet.
        stopping = ls.requests.cancel_all(keep=ls.protocol.msg_id)
        if not await ls.requests.wait_finished(stopping, SHUTDOWN_GRACE_SECONDS):
            log.warning("shutdown: %d request(s) still running", sum(not e.finished.is_set() for e in stopping))
        for _ in range(2):  # let pygls send their answers (done callbacks run on the next loop turns)
            await asyncio.sleep(0)
        stop_projects(ls)

    for module in (documents, hover, code_lens, diagnostics, tree, symbols, document_symbols, code_actions, commands,
                   probe):
        module.register(server)
    return server


def stop_projects(ls: HarnLanguageServer) -> None:
    """The upkeep (recall warm-up, settle, index folds) stops before its projects close under it: a
    step scheduled on a closed project thread is no failure to report. (shutdown and end of session)"""
    for task in list(ls.background):
        task.cancel()
    for proj in list(ls.projects.values()) + [pre[0] for pre in ls.loads.values()]:
        proj.close()


async def end_session(ls: HarnLanguageServer) -> None:
    """The client left (exit, or its stream ended): stop what this session runs, and nothing else."""
    # A client may send `exit` right behind `shutdown` without waiting (JSON-RPC lets it pipeline):
    # the shutdown request is answered first, as it would have been had the client waited.
    shutting = None
    if ls.protocol.shutdown_id is not None:
        for _ in range(5):  # (its handler's task may not have started yet: exit came in the same read)
            await asyncio.sleep(0)
        shutting = ls.requests.get(ls.protocol.shutdown_id)
    if shutting is not None:
        await ls.requests.wait_finished([shutting], SHUTDOWN_GRACE_SECONDS + 1.0)
        for _ in range(2):  # (pygls sends the answer from a done callback on the next loop turns)
            await asyncio.sleep(0)
    stopping = ls.requests.cancel_all()
    await ls.requests.wait_finished(stopping, 2.0)
    stop_projects(ls)
    for task in list(ls.preloading.values()) + [pre[1] for pre in ls.loads.values()]:
        task.cancel()
    if ls.monitor is not None:
        ls.monitor.stop()
    ls.shutdown()  # pygls: its thread pool, if a handler ever used one


def exit_status(ls: HarnLanguageServer) -> int:
    """LSP: 0 after shutdown, else 1 (an exit without shutdown, or a client that left without exit)."""
    if ls.protocol.exit_code is not None:
        return ls.protocol.exit_code
    return 0 if ls.protocol.phase == HarnProtocol.SHUT_DOWN else 1


async def serve_stdio(ls: HarnLanguageServer) -> int:
    """One session on standard input and output; returns the exit status."""
    SESSION.set(ls)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 16)
    transport.feed_stdin(sys.stdin.fileno(), loop, reader)
    out = sys.stdout.buffer

    def send(frame: bytes) -> None:
        out.write(frame)
        out.flush()

    writer = transport.FramedWriter(send)
    ls.protocol.set_writer(writer, include_headers=False)
    try:
        why = await transport.serve_stream(ls.protocol, reader, writer)
    except BrokenPipeError:
        why = "client gone"
    log.debug("session ended: %s", why)
    await end_session(ls)  # (before the writer closes: a shutdown answered late still goes out)
    writer.close()
    return exit_status(ls)


def run_server(harn: str | None = None) -> int:
    """One session over stdio; returns the exit status (TCP: lsp/tcp.py)."""
    heap.tune()  # a long-lived process: what a big transient phase frees goes back to the system
    server = create_server()
    TO_CLIENT.only = server
    server.harn_override = harn
    return asyncio.run(serve_stdio(server))
