"""`workspace/textDocumentContent` for `harn-state:` URIs, and their refresh.

A change to a project re-renders each open document it can alter to tell whether its text really
changed (the client is asked to fetch only those). The text made for that comparison is kept
(`Renders.fresh`) and is what the client's fetch gets: one render per change, and the bytes compared
are the bytes served. It is served only while it is still what a render would make: same project
and workspace objects, same render settings, same links and pictures, and no change since that can
alter its kind (`refresh_changed` drops it first).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from harn_ls.lsp import heap
from harn_ls.lsp.project_links import link_root, markdown_for
from harn_ls.lsp.transport import as_encoded
from harn_ls.model.change_kinds import K
from harn_ls.render import RenderSettings, UriError, parse_uri, render_uri
from harn_ls.render.markdown import cell
from harn_ls.render.svg import strip_pictures

log = logging.getLogger(__name__)

# Which change kinds can alter which document kinds.
_AFFECTS = {
    "index": None,  # anything
    "memory": {K.MEMORY},
    "facts": {K.MEMORY, K.FACTS},
    "proposals": {K.PATTERN, K.SKILLS, K.MEMORY},
    "checkpoints": {K.CHECKPOINTS},
    "skills": {K.SKILLS},
    "runs": {K.RUNS},
    "transcripts": {K.RUNS},
    "sessions": {K.SESSIONS},
    "recall": {K.MEMORY},
    "compare": {K.RUNS},
}
_AFFECTS.update({  # issue 16: event logs, HITL, the rest of .harn/
    "events_index": {K.EVENTS}, "events": {K.EVENTS}, "hitl_index": {K.EVENTS, K.HITL}, "hitl": {K.EVENTS, K.HITL},
    "store": {K.STORE, K.WORKFLOWS, K.LOCKS, K.EMBED}, "receipts": {K.RECEIPTS},
    "worktrees": {K.WORKTREES, K.CRYSTALLIZATION, K.RECEIPTS}, "crystallization": {K.CRYSTALLIZATION},
    "newer_state": {K.NEWER, K.EVENTS},
})

# Documents rendered from a whole parsed run record (Workspace.full_run_record).
_PARSES_RUN_RECORDS = frozenset({"runs", "transcripts", "compare"})


def _not_found(exc: Exception) -> str:
    # The message can quote names from the URI or the data: escaped like any data.
    return f"# Not found\n\n{cell(exc)}\n"


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Fresh:
    """A document made after a change (to compare with what the client has), kept to be served."""

    made_from: tuple[Any, ...]  # (project, workspace, render settings, link root, pictures): what it depends on
    text: str  # as the client gets it (for_client applied)
    digest: str


class Renders:
    """The documents this server makes for the client: how many (`count`, what the tests read) and
    the ones made after a change, until the client fetches them once (bounded: MAX_FRESH, oldest dropped)."""

    MAX_FRESH = 16

    def __init__(self) -> None:
        self.count = 0
        self.fresh: dict[str, Fresh] = {}

    def keep(self, uri: str, fresh: Fresh) -> None:
        self.fresh.pop(uri, None)
        self.fresh[uri] = fresh
        while len(self.fresh) > self.MAX_FRESH:
            del self.fresh[next(iter(self.fresh))]


def _made_from(ls: Any, proj: Any, settings: RenderSettings) -> tuple[Any, ...]:
    return proj, proj.ws, settings, link_root(ls, proj), ls.client.pictures


def _render_text(ls: Any, proj: Any, uri: str, settings: RenderSettings) -> str:
    """The document at `uri` as the client gets it. The one place documents are made (counted);
    runs on the project's thread."""
    ls.renders.count += 1
    try:
        text = render_uri(proj.ws, uri, settings)
    except UriError as exc:
        text = _not_found(exc)
    return for_client(ls, text, proj)


async def render(ls, uri: str) -> str:
    try:
        target = parse_uri(uri)
    except UriError as exc:
        return _not_found(exc)
    proj = await ls.project_holding(target.kind, target.name, target.query.get("root"))
    if proj is None or proj.ws is None:
        return "# harn-ls\n\nNo project is open yet.\n"
    settings = ls.render_settings(proj)
    # served once: a later fetch renders again (a page may read live state no file event announces:
    # the checkpoint lock's "Writing now", a suppression that expired)
    fresh = ls.renders.fresh.pop(uri, None)
    if fresh is not None and fresh.made_from == _made_from(ls, proj, settings):
        ls.served[uri] = (proj.root, fresh.digest)
        return fresh.text  # made when the change came, compared, and not changed since
    try:
        text = await proj.run(lambda: _render_text(ls, proj, uri, settings))
        if target.kind in _PARSES_RUN_RECORDS:
            proj.submit(heap.trim)  # after the response: a whole run record was parsed (10 MB: ~20 MB of holes)
    except Exception as exc:  # a renderer bug must not take the document (or the server) down
        log.exception("rendering %s failed", uri)
        text = for_client(ls, f"# harn-ls could not render this document\n\n{type(exc).__name__}: {cell(exc)}\n", proj)
    ls.served[uri] = (proj.root, text_hash(text))
    return text


def for_client(ls, text: str, proj) -> str:
    """Drop picture lines for clients that did not ask for them (lsp/capabilities.py, `pictures`); name
    the project in its links when the workspace serves several (project_links.py)."""
    text = markdown_for(ls, proj, text)
    return text if ls.client.pictures else strip_pictures(text)


def register(server) -> None:
    @server.handler(types.WORKSPACE_TEXT_DOCUMENT_CONTENT)
    async def text_document_content(ls, params: types.TextDocumentContentParams):
        # up to 1 MB of text: encoded by orjson (json.dumps of a 1 MB document with non-ASCII text
        # took tens of milliseconds on the event loop)
        return as_encoded(ls.protocol, {"text": await render(ls, params.uri)})


def _affected(uri: str, changes: Any) -> bool:
    """Whether `changes` can alter the document at `uri` (by the kinds of what changed)."""
    try:
        kind = parse_uri(uri).kind
    except UriError:
        return False
    affects = _AFFECTS.get(kind)
    return affects is None or bool(affects & changes.kinds)


async def refresh_changed(ls, proj, changes) -> None:
    """Ask the client to re-fetch the documents it has open whose text really changed; what it
    fetches is the text made here to compare (Renders.fresh)."""
    fresh = ls.renders.fresh
    for uri in [u for u, f in fresh.items() if f.made_from[0] is proj and (changes.rescanned or _affected(u, changes))]:
        del fresh[uri]  # made before this change: no longer what the client should get
    if not ls.served or not ls.client.text_document_content_refresh:
        return  # a client that did not declare the capability has no refresh handler
    settings = ls.render_settings(proj)
    candidates = [(uri, digest) for uri, (root, digest) in list(ls.served.items())
                  if root == proj.root and _affected(uri, changes)]
    if not candidates:
        return

    def _rerender() -> list[tuple[str, str]]:
        out = []
        for uri, digest in candidates:
            text = _render_text(ls, proj, uri, settings)
            if text_hash(text) != digest:
                out.append((uri, text))
        return out

    made_from = _made_from(ls, proj, settings)
    changed = await proj.run(_rerender)
    for uri, text in changed:
        ls.served.pop(uri, None)  # re-recorded when the client fetches it again
        ls.renders.keep(uri, Fresh(made_from, text, text_hash(text)))
        ls.spawn(_refresh(ls, uri), f"refresh {uri}")


async def _refresh(ls, uri: str) -> None:
    try:
        await ls.workspace_text_document_content_refresh_async(types.TextDocumentContentRefreshParams(uri=uri))
    except Exception as exc:
        log.debug("textDocumentContent/refresh %s: %s", uri, exc)
