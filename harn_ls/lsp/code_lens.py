"""Code lenses: facts above the code they describe, cache state above checkpoint calls, and
Accept / Reject above a proposal document. Lenses are returned bare and filled in
`codeLens/resolve`; titles and targets come from render/lenses.py and render/proposal_choices.py."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls import contract as P
from harn_ls.lsp.view_types import line_range, on_proposal_document, to_command
from harn_ls.render.lenses import checkpoint_lens, checkpoint_lens_spots, fact_lens, fact_lens_ranges
from harn_ls.render.proposal_choices import proposal_choices, proposal_lenses

_TOP = line_range(0)


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=True))
    async def code_lens(ls, params: types.CodeLensParams) -> list:
        uri = params.text_document.uri
        if uri.startswith(P.SCHEME + ":"):
            return await proposal_document_lenses(ls, uri)
        proj = ls.project_for_uri(uri)
        if proj is None or proj.ws is None:
            return []
        path = to_fs_path(uri)
        lenses: list = []
        if ls.settings.codeLens.facts:
            min_conf = ls.settings.facts.minConfidence
            ranges = await proj.run(lambda: fact_lens_ranges(proj.ws, path, min_conf, proj.fact_spans))
            for start, end in ranges:
                # Plain JSON-ready dicts: hundreds of lenses skip the attrs round trip on the way out.
                line = start - 1
                lenses.append({"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
                               "data": {"t": "facts", "uri": uri, "start": start, "end": end}})
        if ls.settings.codeLens.checkpoints and path.endswith(".harn"):
            doc = ls.workspace.get_text_document(uri)
            try:
                text = doc.source
            except OSError:
                text = ""
            for spot in checkpoint_lens_spots(path, text):
                lenses.append(types.CodeLens(range=line_range(spot.line, spot.start_char, spot.end_char),
                                             data={"t": "ckpt", "uri": uri, "pipeline": spot.pipeline, "stage": spot.stage}))
        return lenses

    @server.handler(types.CODE_LENS_RESOLVE)
    async def resolve(ls, lens: types.CodeLens):
        data = lens.data if isinstance(lens.data, dict) else {}
        kind = data.get("t")
        if kind not in ("facts", "ckpt"):
            return lens
        proj = ls.project_for_uri(data.get("uri", ""))
        if proj is None or proj.ws is None:
            lens.command = types.Command(title="harn-ls: project not loaded", command="")
            return lens
        if kind == "facts":
            path = to_fs_path(data["uri"])
            min_conf = ls.settings.facts.minConfidence
            view = await proj.run(lambda: fact_lens(proj.ws, path, data["start"], data["end"], min_conf, proj.fact_spans))
        else:
            view = await proj.run(lambda: checkpoint_lens(proj.ws, data["pipeline"], data["stage"]))
        lens.command = to_command(view)
        return lens


async def proposal_document_lenses(ls, uri: str) -> list[types.CodeLens]:
    """The same Accept / Reject / Compare choices as the code actions, at the top of the document."""
    views = await on_proposal_document(ls, uri, lambda ws, pid, root: proposal_lenses(proposal_choices(ws, pid, root)))
    return [types.CodeLens(range=_TOP, command=to_command(v), data={"t": "proposal"}) for v in views]
