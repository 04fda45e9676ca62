"""The server's workspace folders and the Harn projects they serve: finding them below each folder
(model/project_discovery.py), loading each on its own project thread with its progress shown (lsp/progress.py),
serving it (problems, status, views, the recall warm-up), and dropping what no folder serves any more.

Each folder has its own settings (`harnState.*` asked with the folder's scopeUri, lsp/settings.py):
its project search uses its `projectRoots`, each project it serves is loaded with its `harnEnv` and
remembers the folder (`Project.workspace_folder`), so every feature reads that folder's settings.

A mixin of `HarnLanguageServer` (lsp/server.py), whose `__init__` declares the state these methods
keep: `projects`, `folder_roots`, `preloading`, `loads`, `progress_allowed`, `served`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from harn_ls.lsp import conversions, diagnostics, start_trace
from harn_ls.lsp.progress import with_progress
from harn_ls.lsp.project import SETTLE_MAX_WAIT_S, SETTLE_QUIET_S, Project
from harn_ls.lsp.settings import Settings
from harn_ls.model.accept_plan import skill_root_warning
from harn_ls.model.change_kinds import RESCAN_KINDS, ChangeSet
from harn_ls.model.project_discovery import FolderProjects, folder_projects
from harn_ls.util.message_text import defuse
from harn_ls.util.safe_read import is_under

if TYPE_CHECKING:
    from harn_ls.lsp.diagnostic_registry import DiagnosticsRegistry
    from harn_ls.lsp.documents import Renders
    from harn_ls.lsp.requests import RequestRegistry

log = logging.getLogger("harn_ls")


class ProjectFolders:
    """Workspace folders -> Harn projects (mixed into HarnLanguageServer)."""

    if TYPE_CHECKING:  # what HarnLanguageServer (lsp/server.py) holds and does, that these methods use
        settings: Settings
        folder_settings: dict[str, Settings]
        trusted: bool
        projects: dict[str, Project]
        folder_roots: dict[str, list[str]]
        preloading: dict[str, asyncio.Task[tuple[FolderProjects, list[str]]]]
        loads: dict[str, tuple[Project, asyncio.Future[Any]]]
        progress_allowed: bool
        served: dict[str, tuple[str, str]]
        renders: Renders
        diagnostics: DiagnosticsRegistry[types.Diagnostic]
        _skill_root_warned: set[tuple[str, str]]
        conversions_warmed: bool
        adding_folders: int
        protocol: Any
        on_changes: Callable[[Project, ChangeSet], Awaitable[None]]

        @property
        def requests(self) -> RequestRegistry: ...
        def harn_env(self, settings: Settings | None = None) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]: ...
        def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None: ...
        def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]: ...
        async def send_status(self, proj: Project, n_problems: int | None = None) -> None: ...
        def loading_moved(self) -> None: ...

    def settings_of_folder(self, folder: str | None) -> Settings:
        """A workspace folder's settings (its own answer to workspace/configuration), else the workspace's."""
        return self.folder_settings.get(folder, self.settings) if folder is not None else self.settings

    def settings_for(self, proj: Project | None) -> Settings:
        """The settings a project's features follow: its workspace folder's (the workspace's when it has none)."""
        return self.settings_of_folder(self.folder_of(proj)) if proj is not None else self.settings

    def folder_of(self, proj: Project) -> str | None:
        """The workspace folder whose settings the project follows: the innermost folder that holds it and
        serves it (as VS Code takes a resource's setting from its innermost folder: an `outer/` folder's
        search also finds the project of a nested `outer/inner/` folder); else the one whose search found
        it, while that folder still serves it; else the first folder that lists it."""
        root = proj.folder_path
        holding = [f for f, roots in self.folder_roots.items() if root in roots and is_under(root, f)]
        if holding:
            return max(holding, key=len)
        if proj.workspace_folder in self.folder_roots or proj.workspace_folder in self.preloading:
            return proj.workspace_folder
        for folder, roots in self.folder_roots.items():
            if root in roots:
                return folder
        return proj.workspace_folder

    def preload(self, path: str) -> None:
        """Start finding a folder's projects (model/project_discovery.py) and loading them on their project
        threads now: the answer to initialize, the client's `initialized` and the settings round trip go
        by meanwhile. Nothing is sent about them before `add_folder` takes them over."""
        path = os.path.abspath(path)
        if path in self.folder_roots or path in self.preloading:
            return
        self.preloading[path] = asyncio.get_running_loop().create_task(self._find_projects(path), name=f"find {path}")

    async def _find_projects(self, folder: str) -> tuple[FolderProjects, list[str]]:
        """The folder's projects (the search reads directories: off the event loop), each one's load
        started unless it is served or loading already; with the projectRoots setting it used."""
        settings = self.settings_of_folder(folder)
        setting = list(settings.projectRoots)
        try:
            found = await asyncio.to_thread(folder_projects, folder, setting, self.trusted,
                                            list(self.folder_roots) + list(self.preloading) or [folder])
        except Exception:  # a search that failed still serves the folder as it is
            log.exception("looking for Harn projects in %s failed", folder)
            found = FolderProjects(folder, [folder])
        for root in found.roots:
            if root not in self.projects and root not in self.loads:
                proj = Project(root, self.on_changes, self.harn_env(settings), workspace_folder=folder)
                task = asyncio.get_running_loop().create_task(proj.load(), name=f"load {root}")
                # before `initialized` no progress may be sent: show_preloads takes these loads over then
                self.loads[root] = (proj, self.show_load(proj, task) if self.progress_allowed else task)
        return found, setting

    def show_load(self, proj: Project, loading: Awaitable[Any]) -> asyncio.Future[Any]:
        """The load as a task that also shows its progress (lsp/progress.py)."""
        return asyncio.ensure_future(with_progress(self, proj.root, proj.load_progress, loading,
                                                   summary=lambda: proj.loaded_summary))

    def show_preloads(self) -> None:
        """Once `initialized` came: the loads started at `initialize` show their progress from now on,
        before the settings round trip (a client may take its time over it)."""
        self.progress_allowed = True
        for root, (proj, task) in list(self.loads.items()):
            self.loads[root] = (proj, self.show_load(proj, task))

    async def add_folder(self, path: str) -> None:
        self.adding_folders += 1  # requests wait until its projects are served (wait_for_projects)
        try:
            await self._add_folder(path)
        finally:
            self.adding_folders -= 1
            self.loading_moved()

    async def _add_folder(self, path: str) -> None:
        path = os.path.abspath(path)
        if path in self.folder_roots:
            return
        started = self.preloading.pop(path, None)
        found, setting = await (started if started is not None else self._find_projects(path))
        if setting != self.settings_of_folder(path).projectRoots:  # the settings pulled after initialize name other roots
            stale = found.roots
            found, _ = await self._find_projects(path)
            self._drop_unused(r for r in stale if r not in found.roots)
        self.folder_roots[path] = list(found.roots)
        for note in found.notes:
            log.warning(note)
            self.show(f"Harn State: {defuse(note)}", types.MessageType.Warning)  # its paths: made inert
        if len(found.roots) > 1 or found.roots != [path]:
            log.info("workspace folder %s: Harn projects %s", path, ", ".join(found.roots))
        served_already = [root for root in found.roots if root in self.projects]
        for root in found.roots:
            await self._serve_project(root, path)
        if served_already:  # a project another folder served may follow this (inner) folder now: its harnEnv
            await self.reload_for_env()

    async def _serve_project(self, root: str, folder: str | None) -> None:
        """Take over (or start) the load of the project at `root` (found by workspace folder `folder`), then
        show it: problems, status, views."""
        if root in self.projects:
            return  # another workspace folder serves it already
        loading = self.loads.pop(root, None)
        env = self.harn_env(self.settings_of_folder(loading[0].workspace_folder if loading is not None else folder))
        if loading is not None and loading[0].env_spec != env:
            loading[1].cancel()  # the settings round trip changed harnState.harnEnv: load again
            loading[0].close()
            loading = None
        proj = loading[0] if loading is not None else Project(root, self.on_changes, env, workspace_folder=folder)
        self.projects[root] = proj
        try:
            await (loading[1] if loading is not None else self.show_load(proj, proj.load()))
        finally:
            self.loading_moved()
        if proj.closed:
            return  # its folder left the workspace while it loaded
        start_trace.mark(f"project loaded {proj.root}")
        await proj.start_watching()
        log.info("loaded %s in %.0f ms", proj.root, proj.load_seconds * 1000)
        await self.warn_skill_root(proj)
        await self.on_changes(proj, ChangeSet(rescanned=True, kinds=set(RESCAN_KINDS)))
        start_trace.mark(f"first status and views sent {proj.root}")
        # Build the recall index now, after everything is shown, so the first search is warm.
        self.spawn(self._warm_then_report(proj), "recall index warm-up")

    async def reconsider_folders(self, folders: Iterable[str]) -> None:
        """These folders' projectRoots setting changed: serve what it names now, drop what no folder serves any more."""
        for folder in list(folders):
            if folder not in self.folder_roots:
                continue
            found, _ = await self._find_projects(folder)
            old = self.folder_roots.get(folder, [])
            self.folder_roots[folder] = list(found.roots)
            self._drop_unused(r for r in old if r not in found.roots)
            for note in found.notes:
                log.warning(note)
            for root in found.roots:
                await self._serve_project(root, folder)

    async def warn_skill_root(self, proj: Project) -> None:
        """Say once per (folder, skillRoot) when Accept would write where Harn's pattern learning never looks."""
        if proj.ws is None:
            return
        skill_root = self.settings_for(proj).skillRoot
        warning = await proj.run_before_facts(lambda: skill_root_warning(proj.loaded, skill_root))
        key = (proj.root, skill_root)
        if not warning or key in self._skill_root_warned:
            return
        self._skill_root_warned.add(key)
        log.warning("%s: %s", proj.root, warning)
        try:
            self.show(f"Harn State: {warning}", types.MessageType.Warning)
        except Exception as exc:  # a client without window/showMessage still has the log and harn/status
            log.debug("showMessage failed: %s", exc)

    async def _warm_then_report(self, proj: Project) -> None:
        await with_progress(self, proj.root, proj.recall_progress, proj.warm_recall(),
                            summary=lambda: "recall ready")
        await self.send_status(proj)  # recall answers from here on; the rest is upkeep
        start_trace.mark(f"recall ready {proj.root}")
        # beside the settle: the conversions run on the loop, the settle's steps on the project thread
        self.spawn(self.warm_conversions(), "message conversions warm-up")
        await with_progress(self, proj.root, proj.settle_progress, proj.settle_recall(self.requests.quiet_for),
                            summary=lambda: "state cache written")
        start_trace.mark(f"settled {proj.root}")

    async def warm_conversions(self) -> None:
        """Make pygls's message conversions (cattrs code, 2-14 ms per type on first use) now, a
        type per step on the event loop between the client's requests, so the first hover or lens
        after start is served as fast as the next (lsp/conversions.py). Once per server."""
        if self.conversions_warmed:
            return
        self.conversions_warmed = True
        for step in conversions.warm_steps(self.protocol):
            await asyncio.sleep(0)  # a message that came in meanwhile goes first
            await self._wait_for_quiet()
            step()
        await self._wait_for_quiet()
        start_trace.mark("message conversions made")

    async def _wait_for_quiet(self) -> None:
        """Until the client has sent no request for SETTLE_QUIET_S, but no longer than SETTLE_MAX_WAIT_S."""
        waited = 0.0
        while waited < SETTLE_MAX_WAIT_S and self.requests.quiet_for() < SETTLE_QUIET_S:
            await asyncio.sleep(SETTLE_QUIET_S)
            waited += SETTLE_QUIET_S

    def remove_folder(self, path: str) -> None:
        path = os.path.abspath(path)
        roots = self.folder_roots.pop(path, [])
        self.folder_settings.pop(path, None)
        started = self.preloading.pop(path, None)
        if started is not None:  # gone before `initialized`: never served
            if started.done() and not started.cancelled() and started.exception() is None:
                roots = started.result()[0].roots
            else:
                started.cancel()
        self._drop_unused(roots)  # (which wakes the requests waiting for the projects)

    async def reload_for_env(self) -> None:
        """harnState.harnEnv changed: each project served is read again from Harn's new places (its folder's)."""
        for root, proj in list(self.projects.items()):
            if proj.env_spec == self.harn_env(self.settings_for(proj)):
                continue
            folder = self.folder_of(proj)
            self.projects.pop(root, None)
            self._stop_serving(proj)
            await self._serve_project(root, folder)

    def _stop_serving(self, proj: Project) -> None:
        """A project no longer served (dropped, or loaded again): stopped, and the problems it published, the
        documents it served and those kept after its changes forgotten (they hold its model)."""
        proj.close()
        self.diagnostics.clear_source(diagnostics.problems_source(proj.root))
        self.served = {u: v for u, v in self.served.items() if v[0] != proj.root}
        self.renders.fresh = {u: f for u, f in self.renders.fresh.items() if f.made_from[0] is not proj}
        # (no loading_moved here: both callers pulse it once they are done, _drop_unused after all its
        # projects, reload_for_env's _serve_project after the new load)

    def _drop_unused(self, roots: Iterable[str]) -> None:
        """Stop serving the projects at `roots` that no workspace folder serves any more."""
        kept = {r for rs in self.folder_roots.values() for r in rs}
        for root in list(roots):
            if root in kept:
                continue
            loading = self.loads.pop(root, None)
            if loading is not None:  # never served: its load stopped, nothing was sent about it
                loading[1].cancel()
                loading[0].close()
            proj = self.projects.pop(root, None)
            if proj is not None:
                self._stop_serving(proj)
        self.loading_moved()
