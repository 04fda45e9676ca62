"""`harn-state:/newer-state.md[?page=N]`: the newer parts of `.harn/` (issue 28 item 8) — the LLM response
cache (counts, sizes, newest entry, model names; never a cached prompt or response), the model selection,
guard models, the orchestrator's snapshot, `.harn/metadata/` and the event logs' idempotency keys. The
cache entries are listed newest first, a page at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harn_ls.formats.newer_state import PAGE
from harn_ls.render.markdown import cell, display_time, human_bytes, inline
from harn_ls.render.shown_path import shown_path
from harn_ls.render.uri import RenderSettings, StateUri, make_uri

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace
    from harn_ls.util.json_types import JsonObject


def _when(ts: object) -> str:
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts <= 0:
        return ""
    return display_time(ts) + "Z"


def _fields(fields: JsonObject) -> list[str]:
    if not fields:
        return ["(no plain fields)"]
    out = ["| field | value |", "|---|---|"]
    out += [f"| {cell(k)} | {cell(v)} |" for k, v in fields.items()]
    return out


def newer_state(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    n = ws.event_logs.newer
    keys = ws.event_logs.idempotency_keys() if n is not None else {}
    out = ["# Newer Harn state", ""]
    if n is None or (n.empty and not any(keys.values())):
        out.append("None of `.harn/cache/llm.sqlite`, `.harn/cache/llm/`, `.harn/local/selection.json`, `.harn/guard/`, "
                   "`orchestrator-state.json`, `.harn/metadata/` or `event_idempotency_keys` rows is here.")
        return "\n".join(out) + "\n"
    for p in n.problems[:50]:
        out.append(f"> ⚠ {cell(p.message)}\n")
    out.append("## LLM response cache\n")
    out.append("Cached prompts and responses are never shown here: only counts, sizes, times and model names.\n")
    if n.llm_sqlite:
        s = n.llm_sqlite
        out.append(f"- {inline(shown_path(ws, s['path']))}: {cell(s['rows'] if s['rows'] is not None else '?')} row(s) in "
                   f"`cache_entries`, {human_bytes(s['bytes'])}" + (f", newest {cell(s['newest'])}" if s.get("newest") else ""))
        if s["models"]:
            out.append(f"  - models: {', '.join(inline(m) for m in s['models'])}")
    if n.llm_files:
        out.append("\n| namespace | entries | size | newest | models |\n|---|---|---|---|---|")
        for ns, info in sorted(n.llm_files.items()):
            out.append(f"| {inline(ns)} | {info['files']} | {human_bytes(info['bytes'])} | {_when(info['newest'])} | "
                       f"{cell(', '.join(info['models']))} |")
        entries = n.llm_entries
        page = target.page()
        pages = max(1, -(-len(entries) // PAGE))
        chunk = entries[page * PAGE:(page + 1) * PAGE]
        out.append(f"\n### Entries, newest first (page {page + 1} of {pages})\n")
        if chunk:
            out.append("| namespace | key (sha256) | size | written | model |\n|---|---|---|---|---|")
            for e in chunk:
                out.append(f"| {inline(e.namespace)} | {inline(e.key[:16] + '…')} | {human_bytes(e.size)} | "
                           f"{_when(e.mtime)} | {cell(e.model)} |")
        nav = []
        if page > 0:
            nav.append(f"[newer]({make_uri('newer_state', page=str(page - 1))})")
        if page + 1 < pages:
            nav.append(f"[older]({make_uri('newer_state', page=str(page + 1))})")
        if nav:
            out.append("\n" + " · ".join(nav))
    if not n.llm_sqlite and not n.llm_files:
        out.append("No LLM response cache.")
    out.append("\n## Model selection (`harn local switch`)\n")
    if n.selection:
        out.append(f"{inline(shown_path(ws, n.selection['path']))}\n")
        out += _fields(n.selection["fields"])
    else:
        out.append("No `.harn/local/selection.json`.")
    out.append(f"\n## Guard models ({len(n.guard)})\n")
    for g in n.guard:
        out.append(f"### {cell(g['model'])}" + ("" if g["manifest"] else " — no readable `manifest.json`") + "\n")
        if g["manifest"]:
            out += _fields(g["fields"])
        out.append("")
    out.append("\n## Orchestrator snapshot\n")
    if n.orchestrator:
        o = n.orchestrator
        out.append(f"{inline(shown_path(ws, o['path']))}\n")
        shown = {k: v for k, v in o.items() if k not in ("path", "connector_names")}
        out += _fields(shown)
        if o.get("connector_names"):
            out.append(f"\nConnectors: {', '.join(inline(c) for c in o['connector_names'])}")
    else:
        out.append("No `orchestrator-state.json` in the orchestrator state dir.")
    out.append("\n## Metadata\n")
    if n.metadata:
        m = n.metadata
        out.append(f"{inline(shown_path(ws, m['path']))}: {m['files']} file(s), {human_bytes(m['bytes'])}, "
                   f"newest {_when(m['newest'])}")
    else:
        out.append("No `.harn/metadata/`.")
    out.append("\n## Idempotency keys\n")
    if keys:
        out += [f"- log {inline(label)}: {rows} row(s) in `event_idempotency_keys`" for label, rows in keys.items()]
    else:
        out.append("No event log has an `event_idempotency_keys` table.")
    return "\n".join(out) + "\n"
