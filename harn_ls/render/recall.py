"""Recall results as Markdown (`harn-state:/recall.md?q=...&ns=...`) and as CLI JSON."""

from __future__ import annotations

from harn_ls.recall import Hit, RecallResult
from harn_ls.render.markdown import cell, code_cell, inline, link
from harn_ls.render.uri import make_uri
from harn_ls.util.json_types import JsonObject


def _num(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") if x else "0"


def _config_lines(name: str | None, config: JsonObject) -> list[str]:
    backend = config.get("backend", "bm25")
    parts = [f"backend **{cell(backend)}**", f"model hint {inline(config.get('embed_model_hint', 'default'))}"]
    if config.get("embed_dim") is not None:
        parts.append(f"dim {cell(config['embed_dim'])}")
    parts.append(f"weights bm25 {_num(float(config.get('bm25_weight', 0.5)))} / cosine "
                 f"{_num(float(config.get('cosine_weight', 0.5)))}")
    prefix = f"- {inline(name)}: " if name else "- "
    return [prefix + ", ".join(parts)]


def _explain_table(hit: Hit) -> list[str]:
    ex = hit.explain
    if ex is None:
        return []
    out = ["", "| term | × | tf | df | idf | BM25 part | key boost | tag boost |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for t in ex.terms:
        out.append(f"| {code_cell(t.term)} | {t.count} | {t.tf} | {t.df} | {_num(t.idf)} | {_num(t.contribution)} | "
                   f"{_num(t.key_boost)} | {_num(t.tag_boost)} |")
    out.append(f"| **total** | | | | | {_num(ex.bm25)} | {_num(ex.key_boost)} | {_num(ex.tag_boost)} |")
    out.append("")
    out.append(f"dl {ex.dl}, avgdl {_num(ex.avgdl)}, N {ex.n_docs}; lexical score = BM25 + boosts = {_num(ex.lexical)}")
    if ex.cosine is not None and ex.lexical_norm is None:
        out.append(f"semantic score = cosine = {_num(ex.cosine)}")
    elif ex.lexical_norm is not None:
        out.append(f"hybrid score = {_num(ex.bm25_weight or 0)} × {_num(ex.lexical_norm)} (lexical / max(1, best lexical))"
                   f" + {_num(ex.cosine_weight or 0)} × {_num(ex.cosine or 0)} (cosine) = {_num(hit.score)}")
    return out


def render_recall_markdown(result: RecallResult, query: str, namespace: str | None) -> str:
    where = inline(namespace) if namespace else "all namespaces"
    lines = [f"# Recall: {cell(query) or '(empty query)'}", "",
             f"{where} · mode **{result.mode}** · k {result.k} · query tokens: "
             + (", ".join(inline(t, 200) for t in result.query_terms[:100]) or "none (newest first)"), ""]
    lines.append("## Namespace config")
    lines.append("")
    if result.namespaces:
        for name, outcome in result.namespaces.items():
            lines += _config_lines(name if not namespace else None, outcome.config)
            if outcome.note:
                lines.append(f"  - ⚠ {cell(outcome.note)}")
    elif result.config is not None:
        lines += _config_lines(None, result.config)
    if result.note and not result.namespaces:
        lines.append(f"- ⚠ {cell(result.note)}")
    lines += ["", "## Results", ""]
    if not result.hits:
        lines.append("_No record scores above 0 for this query (Harn drops those)._"
                     if result.query_terms else "_No active records._")
    # start-up: `harn-ls recall --json` imports this module; the charts (timeline, svg) load only for Markdown
    from harn_ls.render.memory_charts import score_bar, score_segments

    top = max((sum(v for _, v, _ in score_segments(h)) for h in result.hits), default=0.0)
    for rank, hit in enumerate(result.hits, 1):
        shown = hit.tags[:5]
        tags = ", ".join(inline(t, 200) for t in shown) or "no tags"
        if len(hit.tags) > len(shown):
            tags += f" +{len(hit.tags) - len(shown)} more"
        ns = f" · {inline(hit.namespace)}" if not namespace else ""
        value = hit.record.value
        is_fact = isinstance(value, dict) and value.get("schema") == "harn.fact.v1" and isinstance(value.get("claim"), str)
        target = make_uri("facts", hit.id) if is_fact else make_uri("memory", hit.namespace)
        lines.append(f"### {rank}. {inline(hit.key)} — score {_num(hit.score)}")
        lines.append("")
        lines += [score_bar(hit, top), ""]
        lines.append(f"id {inline(hit.id)}{ns} · stored {cell(hit.stored_at)} · seq {hit.seq} · {tags} · "
                     f"{link('open', target)}")
        text = hit.record.text
        if is_fact:
            # A fact's text is its whole envelope as JSON; the claim is what a person reads.
            lines += ["", f"> **{cell(str(value.get('kind', 'fact')))}** {cell(value['claim'])} "
                          f"(confidence {cell(value.get('confidence'))})"]
        elif text:
            preview = text if len(text) <= 300 else text[:300] + "…"
            lines += ["", "> " + cell(preview)]
        lines += _explain_table(hit)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def recall_json(result: RecallResult) -> list[JsonObject]:
    out: list[JsonObject] = []
    for hit in result.hits:
        item: JsonObject = {
            "id": hit.id, "key": hit.key, "namespace": hit.namespace, "score": hit.score,
            "stored_at": hit.stored_at, "tags": list(hit.tags), "sequence": hit.seq,
        }
        if hit.explain is not None:
            item["explain"] = hit.explain.to_json()
        out.append(item)
    return out
