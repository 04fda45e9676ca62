"""Code lenses: facts above the code they describe, cache state above checkpoint calls, and
Accept / Reject above a proposal document. Lenses are returned bare and filled in
`codeLens/resolve`; titles and targets come from render/lenses.py and render/proposal_choices.py.

A busy file has hundreds of fact lenses, all sent at once, so each is kept small: its data is
`[file number, first line, last line]`, the file number standing for the document URI in
`LensFiles`, not the URI itself (the URI was half of the ~190 bytes of a lens). And they are
built and encoded once per version of the file's spans (`ReadyLenses`), not on every request."""

from __future__ import annotations

import random

import orjson
from lsprotocol import types

from harn_ls import contract as P
from harn_ls.lsp.file_uris import file_path
from harn_ls.lsp.project_links import link_root
from harn_ls.lsp.span_save import run_noting_spans
from harn_ls.lsp.transport import as_encoded
from harn_ls.lsp.view_types import command_id, line_range, on_state_document, to_command
from harn_ls.render.lenses import FACTS_CHANGED, checkpoint_lens, checkpoint_lens_spots, fact_lens, fact_lens_groups
from harn_ls.render.proposal_choices import proposal_choices, proposal_lenses
from harn_ls.util.safe_read import source_text

_TOP = line_range(0)


class LensFiles:
    """Document URIs by number, for fact lens data: the numbers of one server process start at a
    random point and are never reused, so a lens kept from another process or an evicted file
    resolves to "facts changed" rather than to another file's facts."""

    def __init__(self, max_files: int = 4096) -> None:
        self.max_files = max_files
        self._next = random.randrange(1, 1 << 24)
        self._number: dict[str, int] = {}
        self._uri: dict[int, str] = {}

    def number(self, uri: str) -> int:
        n = self._number.pop(uri, None)  # popped and put back: least recently asked about first
        if n is None:
            n = self._next
            self._next += 1
            self._uri[n] = uri
        self._number[uri] = n
        while len(self._number) > self.max_files:
            old = next(iter(self._number))
            del self._uri[self._number.pop(old)]
        return n

    def uri(self, n) -> str | None:
        return self._uri.get(n) if type(n) is int else None


class ReadyLenses:
    """The fact lenses last sent per document, kept while the file's lens groups are the same object
    (the span cache makes a new one whenever the file's spans change) under the same file number:
    the 500-900 lenses of a busy file are then neither rebuilt nor re-encoded (~2 ms a request)."""

    def __init__(self, max_files: int = 32) -> None:
        self.max_files = max_files
        self._by_uri: dict[str, tuple[object, int, list, bytes]] = {}

    def get(self, uri: str, groups: object, number: int, ranges: list[tuple[int, int]]) -> tuple[list, bytes]:
        """(the lenses as JSON-ready dicts, the same encoded: what the transport embeds as is)."""
        hit = self._by_uri.pop(uri, None)  # popped and put back: least recently asked about first
        if hit is None or hit[0] is not groups or hit[1] != number:
            lenses = fact_lens_dicts(number, ranges)
            hit = (groups, number, lenses, orjson.dumps(lenses))
        self._by_uri[uri] = hit
        while len(self._by_uri) > self.max_files:
            del self._by_uri[next(iter(self._by_uri))]
        return hit[2], hit[3]


def fact_lens_dicts(number: int, ranges: list[tuple[int, int]]) -> list[dict]:
    """One bare lens per (start, end), 1-based lines; plain dicts skip the attrs round trip on the way out."""
    return [{"range": {"start": {"line": start - 1, "character": 0}, "end": {"line": start - 1, "character": 0}},
             "data": [number, start, end]} for start, end in ranges]


def _fact_lens_target(files: LensFiles, lens: types.CodeLens) -> tuple[str, int, int] | None:
    """(uri, start, end) of a fact lens this process handed out; None if its data is not one of ours."""
    data = lens.data
    if not (isinstance(data, list) and len(data) == 3 and type(data[1]) is int and type(data[2]) is int):
        return None
    uri = files.uri(data[0])
    return (uri, data[1], data[2]) if uri is not None else None


def register(server) -> None:
    files = LensFiles()
    ready = ReadyLenses()

    @server.handler(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=True))
    async def code_lens(ls, params: types.CodeLensParams) -> object:  # a list, or its pre-encoded JSON
        uri = params.text_document.uri
        if uri.startswith(P.SCHEME + ":"):
            if uri.startswith(P.SCHEME + ":/hitl/"):
                return await hitl_document_lenses(ls, uri)
            return await proposal_document_lenses(ls, uri)
        path = file_path(uri)
        proj = await ls.loaded_project_for(path)
        if path is None or proj is None or proj.ws is None:
            return []
        fact_lenses: list = []
        encoded: bytes | None = None
        settings = ls.settings_for(proj)  # its workspace folder's
        if settings.codeLens.facts:
            min_conf = settings.facts.minConfidence
            groups, ranges = await run_noting_spans(proj, lambda: fact_lens_groups(proj.ws, path, min_conf,
                                                                                   proj.fact_spans))
            if ranges:
                fact_lenses, encoded = ready.get(uri, groups, files.number(uri), ranges)
        if not (settings.codeLens.checkpoints and path.endswith(".harn")):
            return as_encoded(ls.protocol, fact_lenses, encoded) if encoded is not None else []
        lenses: list = list(fact_lenses)
        opened = ls.workspace.text_documents.get(uri)
        text = opened.source if opened is not None else await proj.run(lambda: source_text(path, proj.root))
        for spot in checkpoint_lens_spots(path, text, ls.position_encoding):
            lenses.append(types.CodeLens(range=line_range(spot.line, spot.start_char, spot.end_char),
                                         data={"t": "ckpt", "uri": uri, "pipeline": spot.pipeline, "stage": spot.stage}))
        return lenses

    @server.handler(types.CODE_LENS_RESOLVE)
    async def resolve(ls, lens: types.CodeLens):
        if isinstance(lens.data, list):
            return await resolve_fact_lens(ls, files, lens)
        data = lens.data if isinstance(lens.data, dict) else {}
        if data.get("t") != "ckpt":
            return lens
        proj = await ls.loaded_project_for(file_path(str(data.get("uri", ""))))
        if proj is None or proj.ws is None:
            lens.command = types.Command(title="harn-ls: project not loaded", command="")
            return lens
        view = await proj.run(lambda: checkpoint_lens(proj.ws, data["pipeline"], data["stage"]))
        lens.command = to_command(view, ls.client, link_root(ls, proj))
        return lens


async def resolve_fact_lens(ls, files: LensFiles, lens: types.CodeLens) -> types.CodeLens:
    target = _fact_lens_target(files, lens)
    if target is None:  # not one of ours, or its file is no longer numbered: the client asks again
        lens.command = to_command(FACTS_CHANGED, ls.client)
        return lens
    uri, start, end = target
    path = file_path(uri)
    proj = await ls.loaded_project_for(path)
    if path is None or proj is None or proj.ws is None:
        lens.command = types.Command(title="harn-ls: project not loaded", command="")
        return lens
    min_conf = ls.settings_for(proj).facts.minConfidence
    view = await run_noting_spans(proj, lambda: fact_lens(proj.ws, path, start, end, min_conf, proj.fact_spans))
    lens.command = to_command(view, ls.client, link_root(ls, proj))
    return lens


async def hitl_document_lenses(ls, uri: str) -> list[types.CodeLens]:
    """Approve / Deny / Answer… / Accept / Decline (or Finish) at the top of a request's document."""
    # start-up: the HITL choices load with the first request document
    from harn_ls.render.hitl_choices import hitl_lenses

    # (hitl_lenses: [] when the project holds no such request)
    views = await on_state_document(ls, uri, "hitl", lambda ws, rid, _skill_root, _root: hitl_lenses(ws, rid) if rid else [])
    return [types.CodeLens(range=_TOP, command=to_command(v, ls.client), data={"t": "hitl"})
            for v in views if command_id(v.action, ls.client) is not None]  # forms only our clients draw


async def proposal_document_lenses(ls, uri: str) -> list[types.CodeLens]:
    """The same Accept / Reject / Compare choices as the code actions, at the top of the document."""
    views = await on_state_document(ls, uri, "proposals", lambda ws, pid, skill_root, root: [
        (v, root) for v in proposal_lenses(proposal_choices(ws, pid, skill_root))])
    return [types.CodeLens(range=_TOP, command=to_command(v, ls.client, root), data={"t": "proposal"})
            for v, root in views if command_id(v.action, ls.client) is not None]  # no Compare where no diff is drawn
