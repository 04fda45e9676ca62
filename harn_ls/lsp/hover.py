"""Hover on code covered by a fact's `file_range` evidence: what the agent believes about it."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls.lsp.facts_view import fact_spans
from harn_ls.render import make_uri
from harn_ls.render.markdown import cell, inline, short_text


def hover_markdown(spans) -> str:
    parts = []
    for s in spans:
        f = s.fact
        stale = ""
        if s.anchor.state == "stale":
            stale = "\n\n⚠ **may be stale**: the evidence snippet is no longer in this range."
        elif s.anchor.state == "moved":
            stale = f"\n\n↪ re-anchored: recorded at lines {s.evidence.range.start}-{s.evidence.range.end}."
        ev_lines = []
        for ev in f.evidence:
            ev_lines.append(f"- {ev.kind} {inline(ev.ref)}" + (f" — {inline(short_text(ev.snippet, 60))}" if ev.snippet else ""))
        prov = ", ".join(f"{k}: {short_text(v, 40)}" for k, v in (f.provenance or {}).items()) if isinstance(f.provenance, dict) else str(f.provenance)
        parts.append(
            f"**{f.kind}** · confidence **{f.confidence:g}** · asserted {cell(f.asserted_at)}\n\n"
            f"{f.claim}{stale}\n\n"
            + "\n".join(ev_lines)
            + (f"\n\nProvenance: {cell(prov)}" if prov else "")
            + f"\n\n[Open fact]({make_uri('facts', f.id)})"
        )
    return "\n\n---\n\n".join(parts)


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls, params: types.HoverParams):
        uri = params.text_document.uri
        proj = ls.project_for_uri(uri)
        if proj is None or proj.ws is None:
            return None
        path = to_fs_path(uri)
        line = params.position.line + 1
        min_conf = ls.settings.facts.minConfidence

        def _find():
            hits = [s for s in fact_spans(proj.ws, path, min_conf) if s.anchor.start <= line <= s.anchor.end]
            return hits

        hits = await proj.run(_find)
        if not hits:
            return None
        start = min(s.anchor.start for s in hits) - 1
        end = max(s.anchor.end for s in hits) - 1
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_markdown(hits)),
            range=types.Range(start=types.Position(line=start, character=0), end=types.Position(line=end, character=10_000)),
        )
