"""Hover on code covered by a fact's `file_range` evidence: what the agent believes about it."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls.lsp.facts_view import fact_spans
from harn_ls.render import make_uri
from harn_ls.render.limits import HOVER_FACTS, HOVER_VALUE_BYTES, MAX_RESPONSE_BYTES, cap_response
from harn_ls.render.markdown import capped_markdown, cell, inline, link, short_text

# Every string below that comes from the fact is escaped or a code span: a claim cannot
# draw its own "**observation** · confidence" line, a link, an image or HTML. The hover is
# sent as plain MarkupContent, which clients never treat as trusted (no command: links run).


def _one_fact(s) -> str:
    f = s.fact
    stale = ""
    if s.anchor.state == "stale":
        stale = "\n\n⚠ **may be stale**: the evidence snippet is no longer in this range."
    elif s.anchor.state == "moved":
        stale = f"\n\n↪ re-anchored: recorded at lines {int(s.evidence.range.start)}-{int(s.evidence.range.end)}."
    ev_lines = []
    for ev in f.evidence[:10]:
        ev_lines.append(f"- {cell(ev.kind, 60)} {inline(ev.ref, 300)}" + (f" — {inline(short_text(ev.snippet, 60))}" if ev.snippet else ""))
    if len(f.evidence) > 10:
        ev_lines.append(f"- … {len(f.evidence) - 10} more")
    if isinstance(f.provenance, dict):
        prov = ", ".join(f"{short_text(k, 40)}: {short_text(v, 40)}" for k, v in list(f.provenance.items())[:10])
    else:
        prov = short_text(f.provenance, 200)
    uri = make_uri("facts", f.id)
    return (f"**{cell(f.kind, 60)}** · confidence **{f.confidence:g}** · asserted {cell(f.asserted_at, 80)}\n\n"
            f"{capped_markdown(f.claim, HOVER_VALUE_BYTES, link('open the fact', uri))}{stale}\n\n"
            + "\n".join(ev_lines)
            + (f"\n\nProvenance: {cell(prov, 600)}" if prov else "")
            + f"\n\n{link('Open fact', uri)}")


def hover_markdown(spans) -> str:
    """The hover for the facts covering one position: at most `HOVER_FACTS` facts, each claim cut at
    `HOVER_VALUE_BYTES`, the whole at most `MAX_RESPONSE_BYTES`."""
    spans = sorted(spans, key=lambda s: -s.fact.confidence)
    parts = [_one_fact(s) for s in spans[:HOVER_FACTS]]
    if len(spans) > HOVER_FACTS:
        parts.append(f"… and {len(spans) - HOVER_FACTS} more fact(s) on these lines (see the Memory & Facts view).")
    return cap_response("\n\n---\n\n".join(parts), MAX_RESPONSE_BYTES)


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
