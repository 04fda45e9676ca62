"""`workspace/textDocumentContent` for `harn-state:` URIs, and their refresh."""

from __future__ import annotations

import hashlib
import logging

from lsprotocol import types

from harn_ls.lsp import heap
from harn_ls.lsp.project_links import markdown_for
from harn_ls.lsp.transport import as_encoded
from harn_ls.model.change_kinds import K
from harn_ls.render import UriError, parse_uri, render_uri
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


async def _project_for_state_uri(ls, uri: str):
    target = parse_uri(uri)
    return await ls.project_holding(target.kind, target.name, target.query.get("root")), target


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


async def render(ls, uri: str) -> str:
    try:
        proj, target = await _project_for_state_uri(ls, uri)
    except UriError as exc:
        return _not_found(exc)
    if proj is None or proj.ws is None:
        return "# harn-ls\n\nNo project is open yet.\n"
    settings = ls.render_settings(proj)
    try:
        text = await proj.run(lambda: render_uri(proj.ws, uri, settings))
        if target.kind in _PARSES_RUN_RECORDS:
            proj.submit(heap.trim)  # after the response: a whole run record was parsed (10 MB: ~20 MB of holes)
    except UriError as exc:
        text = _not_found(exc)
    except Exception as exc:  # a renderer bug must not take the document (or the server) down
        log.exception("rendering %s failed", uri)
        text = f"# harn-ls could not render this document\n\n{type(exc).__name__}: {cell(exc)}\n"
    text = for_client(ls, text, proj)
    ls.served[uri] = (proj.root, text_hash(text))
    return text


def for_client(ls, text: str, proj) -> str:
    """Drop picture lines for clients that show documents as plain text (see server.initialize); name
    the project in its links when the workspace serves several (project_links.py)."""
    text = markdown_for(ls, proj, text)
    if ls.pictures:
        return text
    return strip_pictures(text)


def register(server) -> None:
    @server.handler(types.WORKSPACE_TEXT_DOCUMENT_CONTENT)
    async def text_document_content(ls, params: types.TextDocumentContentParams):
        # up to 1 MB of text: encoded by orjson (json.dumps of a 1 MB document with non-ASCII text
        # took tens of milliseconds on the event loop)
        return as_encoded(ls.protocol, {"text": await render(ls, params.uri)})


async def refresh_changed(ls, proj, changes) -> None:
    """Ask the client to re-fetch the documents it has open whose text really changed."""
    if not ls.served or not ls.client.text_document_content_refresh:
        return  # a client that did not declare the capability has no refresh handler
    settings = ls.render_settings(proj)
    candidates = []
    for uri, (root, digest) in list(ls.served.items()):
        if root != proj.root:
            continue
        try:
            kind = parse_uri(uri).kind
        except UriError:
            continue
        affects = _AFFECTS.get(kind)
        if affects is not None and not (affects & changes.kinds):
            continue
        candidates.append((uri, digest))
    if not candidates:
        return

    def _rerender():
        out = []
        for uri, digest in candidates:
            try:
                text = render_uri(proj.ws, uri, settings)
            except UriError as exc:
                text = _not_found(exc)
            new = text_hash(for_client(ls, text, proj))
            if new != digest:
                out.append(uri)
        return out

    changed = await proj.run(_rerender)
    for uri in changed:
        ls.served.pop(uri, None)  # re-recorded when the client fetches it again
        ls.spawn(_refresh(ls, uri), f"refresh {uri}")


async def _refresh(ls, uri: str) -> None:
    try:
        await ls.workspace_text_document_content_refresh_async(types.TextDocumentContentRefreshParams(uri=uri))
    except Exception as exc:
        log.debug("textDocumentContent/refresh %s: %s", uri, exc)
