"""Code lenses: facts above the code they describe, cache state above checkpoint calls,
and Accept / Reject above a proposal document. Lenses are returned bare and filled
in `codeLens/resolve`."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls.harn_source import find_checkpoint_calls
from harn_ls import contract as P
from harn_ls.lsp.facts_view import fact_spans, group_by_range
from harn_ls.render import make_uri
from harn_ls.render.limits import LABEL_BYTES, one_line

_TOP = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))


def _line_range(line: int, start: int = 0, end: int = 0) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start), end=types.Position(line=line, character=end))


def fact_lens_title(spans) -> str:
    n = len({s.fact.id for s in spans})
    best = max(spans, key=lambda s: s.fact.confidence)
    title = f"{n} fact{'s' if n != 1 else ''} · {one_line(best.fact.kind, 60)} {best.fact.confidence:g}"
    if any(s.anchor.state == "stale" for s in spans):
        title += " · may be stale"
    elif any(s.anchor.state == "moved" for s in spans):
        title += " · re-anchored"
    return title  # plain text (lens titles are not Markdown), every data part capped


def checkpoint_lens_title(entry, cf) -> str:
    if cf is not None and cf.retry:
        return "checkpoint file unreadable · Harn would rerun"
    if entry is None:
        return "not cached"
    if entry.keyed and entry.fingerprint:
        return f"cached · keyed {one_line(entry.fingerprint[:15], 60)}…"
    return "cached"


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=True))
    async def code_lens(ls, params: types.CodeLensParams) -> list:
        uri = params.text_document.uri
        if uri.startswith(P.SCHEME + ":"):
            return await proposal_lenses(ls, uri)
        proj = ls.project_for_uri(uri)
        if proj is None or proj.ws is None:
            return []
        path = to_fs_path(uri)
        lenses: list = []
        if ls.settings.codeLens.facts:
            min_conf = ls.settings.facts.minConfidence
            groups = await proj.run(lambda: group_by_range(fact_spans(proj.ws, path, min_conf)))
            for (start, _end), _spans in sorted(groups.items()):
                # Plain JSON-ready dicts: hundreds of lenses skip the attrs round trip on the way out.
                line = start - 1
                lenses.append({"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
                               "data": {"t": "facts", "uri": uri, "start": start, "end": _end}})
        if ls.settings.codeLens.checkpoints and path.endswith(".harn"):
            doc = ls.workspace.get_text_document(uri)
            try:
                text = doc.source
            except OSError:
                text = ""
            pipeline = os.path.basename(path)[: -len(".harn")]
            for call in find_checkpoint_calls(text):
                lenses.append(types.CodeLens(range=_line_range(call.line, call.start_char, call.end_char),
                                             data={"t": "ckpt", "uri": uri, "pipeline": pipeline, "stage": call.stage}))
        return lenses

    @server.handler(types.CODE_LENS_RESOLVE)
    async def resolve(ls, lens: types.CodeLens):
        data = lens.data if isinstance(lens.data, dict) else {}
        kind = data.get("t")
        if kind == "proposal":
            return lens
        proj = ls.project_for_uri(data.get("uri", ""))
        if proj is None or proj.ws is None:
            lens.command = types.Command(title="harn-ls: project not loaded", command="")
            return lens
        if kind == "facts":
            path = to_fs_path(data["uri"])
            min_conf = ls.settings.facts.minConfidence

            def _spans():
                groups = group_by_range(fact_spans(proj.ws, path, min_conf))
                return groups.get((data["start"], data["end"]), [])

            spans = await proj.run(_spans)
            if not spans:
                lens.command = types.Command(title="facts changed · reopen", command="")
                return lens
            best = max(spans, key=lambda s: s.fact.confidence)
            lens.command = types.Command(title=fact_lens_title(spans), command=P.CMD_OPEN,
                                         arguments=[make_uri("facts", best.fact.id)])
            return lens
        if kind == "ckpt":
            def _entry():
                cf = proj.ws.checkpoints.get(data["pipeline"])
                return cf, (cf.entries.get(data["stage"]) if cf is not None else None)

            cf, entry = await proj.run(_entry)
            title = checkpoint_lens_title(entry, cf)
            from harn_ls.render.checkpoint_history import last_change

            change = await proj.run(lambda: last_change(proj.ws, data["pipeline"]))
            if entry is not None and change is not None and change.changed(data["stage"]):
                title += " · changed since the last run"
            lens.command = types.Command(title=title, command=P.CMD_OPEN,
                                         arguments=[make_uri("checkpoints", data["pipeline"])])
            return lens
        return lens


async def proposal_lenses(ls, uri: str) -> list[types.CodeLens]:
    """The same Accept / Reject / Compare choices as the code actions, at the top of the document."""
    from harn_ls.lsp.code_actions import proposal_document_actions

    actions = await proposal_document_actions(ls, uri)
    for a in actions:
        a.command.title = one_line(a.command.title, LABEL_BYTES)
    return [types.CodeLens(range=_TOP, command=a.command, data={"t": "proposal"}) for a in actions]
