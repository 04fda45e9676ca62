"""One renderer per `harn-state:` document kind."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from harn_ls.formats.fact_anchors import fact_staleness
from harn_ls.formats.harn_time import date_now_iso
from harn_ls.formats.locks import checkpoint_running, session_running
from harn_ls.formats.pattern_learning import is_suppressed
from harn_ls.formats.session_store import read_session_events
from harn_ls.formats.transcripts import read_llm_transcript
from harn_ls.model.accept_plan import planned_files
from harn_ls.render.checkpoint_history import history_section, version_document
from harn_ls.render.compare import compare_document, normalized_document
from harn_ls.render.conversation import context_for, event_sizes, event_windows, message_events, render_event
from harn_ls.render.doc_reuse import REUSED_KINDS, DocReuse, sources
from harn_ls.render.limits import DOC_VALUE_BYTES, MAX_RESPONSE_BYTES, cap_response
from harn_ls.render.markdown import (
    capped_fence,
    capped_markdown,
    cell,
    code_cell,
    file_link,
    human_bytes,
    inline,
    link,
    moment,
    pretty_json,
    short_text,
)
from harn_ls.render.memory_charts import namespace_section
from harn_ls.render.newer_state_doc import newer_state
from harn_ls.render.recall import render_recall_markdown
from harn_ls.render.shown_path import shown_path
from harn_ls.render.state_docs import RENDERERS as STATE_RENDERERS
from harn_ls.render.timeline import LLM_LOG_MAX_BYTES
from harn_ls.render.timeline import section as timeline_section
from harn_ls.render.uri import MAX_QUERY_INT, RenderSettings, StateUri, UriError, make_uri, parse_uri
from harn_ls.util.utf8 import utf8_len

if TYPE_CHECKING:
    from harn_ls.formats.pattern_learning import PatternState, Proposal
    from harn_ls.formats.problems import Problem
    from harn_ls.formats.transcript_summary import TranscriptSummary
    from harn_ls.model.workspace import Workspace

Renderer = Callable[["Workspace", StateUri, RenderSettings], str]


_CUT_NOTE = ("\n\n> harn-ls: this document was cut at 1 MB (every response is at most 1 MB); "
             "open a narrower page.\n")


def render_uri(ws: Workspace, uri: str, settings: RenderSettings | None = None) -> str:
    """The Markdown of one `harn-state:` document, at most `MAX_RESPONSE_BYTES`. Renderers cut each
    value well below this (see `render.limits`); this is the backstop for a document made of very many values."""
    return cap_response(render(ws, parse_uri(uri), settings or RenderSettings()), MAX_RESPONSE_BYTES, _CUT_NOTE)


def render(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    if target.kind in REUSED_KINDS:
        reuse = _doc_reuse(ws)
        if reuse is not None:  # a page made from a big run record: given again while nothing it was made from changed
            made_of = sources(ws, target.kind, target.name)  # (stamped before it is made)
            key = (target.kind, target.name, tuple(sorted(target.query.items())), settings)
            return reuse.get_or_make(key, made_of, lambda: _render(ws, target, settings))
    return _render(ws, target, settings)


def _doc_reuse(ws: object) -> DocReuse | None:
    """The workspace's kept documents, made on first use (an object without a __dict__ keeps none)."""
    reuse: DocReuse | None = getattr(ws, "doc_reuse", None)
    if reuse is None and hasattr(ws, "__dict__"):
        reuse = DocReuse()
        setattr(ws, "doc_reuse", reuse)  # noqa: B010  (an attribute the Workspace class does not declare)
    return reuse


def _render(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    """The document made afresh (never a kept one)."""
    return _RENDERERS[target.kind](ws, target, settings)


def _source_link(ws: Workspace, path: str, line: int | None = None) -> str:
    """Where the whole of a cut value is: a link to its file (and line) inside the project."""
    rel = ws.relpath(path) if path else None
    if rel is None:
        return "the whole value is in " + inline(path)
    where = f"{rel}:{line}" if line else rel
    return "the whole value is in " + file_link(where, os.path.join(ws.root, rel), line)


def _json_block(value: Any, limit: int = 2000, max_bytes: int = DOC_VALUE_BYTES // 4, more: str = "") -> str:
    """A JSON value from data as a fenced block: long strings, lists and objects summarised, then cut."""
    return capped_fence(pretty_json(value, limit), "json", max_bytes, more)


def _problem_line(pr: Problem) -> str:
    return f"> {cell(pr.code)} (line {int(pr.line)}): {cell(pr.message)}"


def _pattern_state(ws: Workspace) -> PatternState | None:
    """Pattern learning's state record (None: no pattern learning, or no state record)."""
    return ws.pattern.state if ws.pattern is not None else None


def _suppressed_until(state: PatternState | None, proposal_id: str) -> Any:
    return state.suppressed_until.get(proposal_id) if state is not None else None


# ------------------------------------------------------------------ index
def index(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    if target.query.get("suppressed") == "1":
        settings = replace(settings, include_suppressed=True)
    c = ws.counts()
    p = ws.paths
    out = [f"# Harn state — {cell(os.path.basename(ws.root) or ws.root)}", ""]
    out.append("| root | path |\n|---|---|")
    for label, path in (("project", p.project_root), ("state", p.state_root), ("runs", p.run_root),
                        ("memory", p.memory_root), ("pattern learning memory", p.pattern_memory_root)):
        exists = "" if os.path.isdir(path) else " *(missing)*"
        out.append(f"| {label} | {code_cell(path)}{exists} |")
    out.append("")
    out.append("| what | count |\n|---|---|")
    for k, v in c.items():
        out.append(f"| {k} | {v} |")
    out.append("")

    problems = ws.problems()
    out.append(f"## Problems ({len(problems)})")
    if not problems:
        out.append("\nNone found.")
    else:
        out.append("")
        out.append("| file | line | code | message |\n|---|---|---|---|")
        for pr in problems[:500]:
            out.append(f"| {code_cell(shown_path(ws, pr.path))} | {int(pr.line)} | {cell(pr.code)} | {cell(pr.message)} |")
        if len(problems) > 500:
            out.append(f"\n…and {len(problems) - 500} more (see `harn-ls inspect`).")
    out.append("")

    out += _proposals_section(ws, settings)

    out.append(f"## Checkpoints ({len(ws.checkpoints)})")
    for name in sorted(ws.checkpoints):
        cf = ws.checkpoints[name]
        keyed = sum(1 for e in cf.entries.values() if e.keyed)
        out.append(f"- {link(name, make_uri('checkpoints', name))} — {len(cf.entries)} stage(s), {keyed} keyed"
                   + (" — **unreadable, Harn would start empty**" if cf.retry else ""))
    out.append("")

    out.append(f"## Memory ({len(ws.memory)} namespaces)")
    for ns in sorted(ws.memory):
        space = ws.memory[ns]
        out.append(f"- {link(ns, make_uri('memory', ns))} — {len(space.active)} active, {len(space.forgotten)} "
                   f"forgotten id(s), backend {cell(space.config.get('backend'))}")
    out.append("")

    out.append(f"## Facts ({len(ws.facts)})")
    for fact in sorted(ws.facts.values(), key=lambda f: (-f.confidence, f.id))[:200]:
        if fact.confidence < settings.min_confidence:
            continue
        out.append(f"- {link(short_text(fact.claim, 90), make_uri('facts', fact.id))} · {cell(fact.kind)} · {fact.confidence:g}")
    out.append("")

    if ws.skills is not None:
        out.append(f"## Skills ({len(ws.skills.skills)}, {len(ws.skills.shadowed)} shadowed)")
        for sk in ws.skills.skills:
            signed = sk.signature is not None and sk.signature.status != "missing_signature"
            sig = f" · signature {cell(sk.signature.label)}" if signed and sk.signature is not None else ""
            out.append(f"- {link(sk.id, make_uri('skills', sk.id))} · {cell(sk.layer)}{sig}")
        out.append("")

    out.append(f"## Runs ({len(ws.runs)})")
    for run in sorted(ws.runs.values(), key=lambda r: (str(r.started_at or ""), r.id), reverse=True)[:200]:
        out.append(f"- {link(run.id, make_uri('runs', run.id))} · {cell(run.status or '?')} · {cell(run.workflow_name or '')}")
    out.append("")
    if ws.sessions is not None:
        out.append(f"## Sessions ({len(ws.sessions.sessions)})")
        for s in ws.sessions.sessions[:200]:
            out.append(f"- {link(s.title or s.id, make_uri('sessions', s.id))} · {cell(s.status)} · "
                       f"{cell(s.event_count)} event(s)")
        out.append("")
    x = ws.event_logs  # issue 16: event logs, HITL, the rest of .harn/
    out.append(f"## Activity\n\n- {link(f'Waiting for you ({len(x.waiting())})', make_uri('hitl_index'))}"
               f"\n- {link('Event logs', make_uri('events_index'))} · {link('Store, mailboxes, locks', make_uri('store'))}"
               f" · {link('Worktrees, candidates, receipts', make_uri('worktrees'))}\n")
    out.append(f"Search memory: {link('recall', make_uri('recall', q=''))}")
    return "\n".join(out) + "\n"


def _proposals_section(ws: Workspace, settings: RenderSettings) -> list[str]:
    """The index's pending proposals (suppressed ones behind a link unless asked for)."""
    pending = ws.pending_proposals(include_suppressed=True)
    out = [f"## Pending skill proposals ({len(ws.pending_proposals())})"]
    if ws.pattern is not None and ws.pattern.state is not None and not ws.pattern.state.enabled:
        out.append("\n> **Pattern learning is disabled** (`enabled: false` in the state record): Harn records no new proposals.")
    if ws.migration_needed:
        out.append("\n> Legacy Burin pattern-learning streams found and not migrated yet — "
                   "run *Harn State: Migrate pattern learning*.")
    now = date_now_iso()
    shown = 0
    state = _pattern_state(ws)
    for prop in pending:
        suppressed = is_suppressed(prop.id, state, now)
        if suppressed and not settings.include_suppressed:
            continue
        shown += 1
        extra = f" — suppressed until {cell(_suppressed_until(state, prop.id))}" if suppressed else ""
        out.append(f"- {link(prop.title or prop.name, make_uri('proposals', prop.id))} · {cell(prop.kind)} · "
                   f"support {cell(prop.support)}{extra}")
    hidden = len(pending) - shown
    if hidden:
        out.append(f"- *{hidden} suppressed proposal(s) hidden* — {link('show them', make_uri('index', suppressed='1'))}")
    if not pending:
        out.append("\nNone.")
    out.append("")
    return out


# ------------------------------------------------------------ checkpoints
def checkpoints(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    if target.query.get("version"):
        return version_document(ws, target.name, target.number("version", 0, 0, MAX_QUERY_INT))
    return _checkpoints_current(ws, target, settings) + "\n".join(history_section(ws, target.name))


def _checkpoints_current(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    cf = ws.checkpoints.get(target.name)
    if cf is None:
        return (f"# Checkpoints — {cell(target.name)}\n\n"
                f"No checkpoint file {inline('.harn/checkpoints/' + target.name + '.json')}: "
                "no stage of this pipeline is cached.\n")
    out = [f"# Checkpoints — {cell(target.name)}", "", f"File: {inline(shown_path(ws, cf.path))} · {human_bytes(cf.size)}", ""]

    running = checkpoint_running(cf.path)
    if running:
        out.append("> **Writing now**: a Harn process holds this checkpoint's lock "
                   f"{inline(os.path.basename(cf.path)[:-5] + '.lock')}; *Forget stage* waits for it (up to 5 s).\n")
    if cf.retry:
        out.append("> **This file cannot be parsed.** Harn treats it as empty on its next run and overwrites it; "
                   "if an agent is writing it right now, it will be re-read in a moment.\n")
    for pr in cf.problems:
        out.append(_problem_line(pr))
    out.append("| stage | kind | fingerprint | value |\n|---|---|---|---|")
    for key in sorted(cf.entries):
        e = cf.entries[key]
        kind = "keyed" if e.keyed else "plain"
        fp = code_cell(e.fingerprint[:15] + "…") if e.fingerprint else ""
        value = e.value.get("value") if e.keyed and isinstance(e.value, dict) else e.value
        preview = "completed (nil)" if value is None else code_cell(short_text(pretty_json(value, 200), 80))
        out.append(f"| {code_cell(key)} | {kind} | {fp} | {preview} |")
    out.append("")
    for key in sorted(cf.entries):
        e = cf.entries[key]
        out.append(f"## {cell(key)}")
        if e.keyed:
            out.append(f"Keyed stage · fingerprint {inline(e.fingerprint)}")
        out.append(capped_fence(pretty_json(e.value), "json", DOC_VALUE_BYTES, _source_link(ws, cf.path)))
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------- memory
def memory(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    space = ws.memory.get(target.name)
    if space is None:
        raise UriError(f"no memory namespace {target.name!r}")
    page = target.page()
    records = space.records()
    records.reverse()  # newest first
    size = settings.page_size
    start = page * size
    chunk = records[start:start + size]
    cfg = space.config
    out = [f"# Memory — {cell(target.name)}", "",
           f"File: {inline(shown_path(ws, space.path))} · {space.event_count} event(s) · {len(records)} active · "
           f"{len(space.forgotten)} forgotten id(s)", "",
           f"Config (last `open`): backend **{cell(cfg.get('backend'))}**, model hint {inline(cfg.get('embed_model_hint'))}, "
           f"weights bm25 {cell(cfg.get('bm25_weight'))} / cosine {cell(cfg.get('cosine_weight'))}"
           + (f", dim {cell(cfg.get('embed_dim'))}" if cfg.get("embed_dim") is not None else ""), ""]
    if page == 0:
        out.extend(namespace_section(space))
    nav = []
    if page > 0:
        nav.append(link("← newer", make_uri("memory", target.name, page=str(page - 1))))
    if start + size < len(records):
        nav.append(link("older →", make_uri("memory", target.name, page=str(page + 1))))
    if nav:
        out.append(f"Page {page + 1} of {(len(records) + size - 1) // size} · " + " · ".join(nav) + "\n")
    out.append("| key | tags | stored at | text |\n|---|---|---|---|")
    for r in chunk:
        fact = ws.facts.get((target.name, r.seq))
        key = link(r.key, make_uri("facts", fact.id)) if fact is not None else code_cell(r.key)
        more_tags = "…" if len(r.tags) > 6 else ""
        out.append(f"| {key} | {cell(', '.join(r.tags[:6]))}{more_tags} | {cell(r.stored_at)} | "
                   f"{cell(short_text(r.text, 100))} |")
    if space.hidden:
        out.append("\n## Hidden forever by an earlier tombstone")
        out.append("These records were stored with an id that a `forget` event had already listed; "
                   "Harn never shows them again.\n")
        for r in space.hidden[:100]:
            out.append(f"- line {int(r.line_no)}: {inline(r.key)} ({inline(r.id)})")
    if space.forgets:
        out.append(f"\n## Forget events ({len(space.forgets)})")
        for fe in space.forgets[-50:]:
            ids = fe.get("forgotten_ids")
            out.append(f"- line {cell(fe.get('_line'))}: predicate {inline(short_text(pretty_json(fe.get('predicate')), 80))} → "
                       f"{len(ids) if isinstance(ids, list) else 0} id(s) at {cell(fe.get('forgotten_at'))}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ facts
def facts(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    fact = ws.facts_by_id.get(target.name)
    if fact is None:
        raise UriError(f"no fact {target.name!r} (it may have been invalidated)")

    space = ws.memory.get(fact.namespace)
    where = _source_link(ws, space.path, fact.line_no) if space is not None else ""
    out = [f"# Fact — {cell(short_text(fact.claim, 100))}", "",
           f"| field | value |\n|---|---|\n| id | {code_cell(fact.id)} |\n| kind | {cell(fact.kind)} |\n"
           f"| confidence | {fact.confidence:g} |\n"
           f"| asserted at | {cell(fact.asserted_at)} |\n"
           f"| namespace | {link(fact.namespace, make_uri('memory', fact.namespace))} |\n"
           f"| memory key | {code_cell(fact.memory_key)} |\n| stored at | {cell(fact.stored_at)} |", ""]
    out.append("## Claim\n")
    out.append(capped_markdown(fact.claim, DOC_VALUE_BYTES, where))
    out.append("\n## Evidence\n")
    if not fact.evidence:
        out.append("None.")
    for ev in fact.evidence:
        line = f"- **{cell(ev.kind)}** {inline(ev.ref)}"
        if ev.range is not None:
            status = fact_staleness(ws.root, ev)
            label = f"{ev.range.path}:{ev.range.start}-{ev.range.end}"
            line += f" → {file_link(label, os.path.join(ws.root, ev.range.path), ev.range.start)} · {cell(status.label)}"
        elif ev.kind == "trace_ref" and ev.ref in ws.runs:
            line += f" → {link('run', make_uri('runs', ev.ref))}"
        out.append(line)
        if ev.snippet:
            out.append(capped_fence(ev.snippet, "", DOC_VALUE_BYTES // 4, where).replace("\n", "\n  ").rstrip() + "\n")
    if fact.valid_until:
        out.append("\n## Valid until\n")
        out.append(capped_fence(pretty_json(fact.valid_until), "json", DOC_VALUE_BYTES // 4, where))
    out.append("\n## Provenance\n")
    out.append(capped_fence(pretty_json(fact.provenance), "json", DOC_VALUE_BYTES // 4, where))
    return "\n".join(out) + "\n"


# -------------------------------------------------------------- proposals
def proposals(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    prop = ws.proposal(target.name)
    if prop is None:
        raise UriError(f"no pending proposal {target.name!r} (accepted, rejected or refreshed away)")
    wanted = target.query.get("file")
    if wanted:
        return proposal_file_text(ws, prop, wanted, settings.skill_root)
    out = [f"# Proposal — {cell(prop.title or prop.name)}", ""]
    state = _pattern_state(ws)
    if is_suppressed(prop.id, state, date_now_iso()):
        out.append(f"> Suppressed until {cell(_suppressed_until(state, prop.id))} (rejected earlier).\n")
    out.append("| field | value |\n|---|---|")
    for label, value in (("id", code_cell(prop.id)), ("name", code_cell(prop.name)), ("kind", cell(prop.kind)),
                         ("source", cell(prop.source)), ("support", cell(prop.support)), ("created", cell(prop.created_at)),
                         ("last seen", cell(prop.last_seen_at))):
        out.append(f"| {label} | {value} |")
    out.append("")
    # Free text from the proposal is escaped: it cannot open a heading or a fence of its own, so it
    # cannot pass itself off as the "What Accept writes" section below.
    if prop.description:
        out.append("## Description\n")
        out.append(capped_markdown(prop.description, DOC_VALUE_BYTES // 4) + "\n")
    if prop.when_to_use:
        out.append("**When to use:** " + capped_markdown(prop.when_to_use, DOC_VALUE_BYTES // 4) + "\n")
    if prop.sample_prompts:
        out.append("## Sample prompts\n")
        prompts = prop.sample_prompts if isinstance(prop.sample_prompts, list) else [prop.sample_prompts]
        out.extend(f"- {cell(p)}" for p in prompts[:50])
        out.append("")
    if prop.tool_sequence:
        out.append("## Tool sequence\n")
        tools = prop.tool_sequence if isinstance(prop.tool_sequence, list) else [prop.tool_sequence]
        out.append(" → ".join(inline(t, 200) for t in tools[:100]) + "\n")
    if getattr(prop, "evidence_ids", None):
        out.append("## Evidence\n")
        out.extend(f"- {inline(e)}" for e in list(prop.evidence_ids)[:100])
        out.append("")
    try:
        plan = planned_files(ws, prop, skill_root=settings.skill_root)
    except Exception as exc:  # a hostile proposal still renders, with the refusal shown
        out.append(f"## Accept is refused\n\n{cell(exc)}\n")
        return "\n".join(out) + "\n"
    out.append("## What Accept writes\n")
    if plan.warning:
        out.append(f"> **Warning:** {cell(plan.warning)}\n")
    for f in plan.files:
        status = (" — **a different file already exists here**" if f.conflict
                  else (" — identical file already exists" if f.identical else ""))
        rel = shown_path(ws, f.path)
        out.append(f"### {inline(rel)}{status}\n")
        raw = link("the exact text", make_uri("proposals", prop.id, file=rel))
        out.append(capped_fence(f.text, f.lang, DOC_VALUE_BYTES, raw))
    out.append(f"Then one memory `forget` event with predicate {inline(plan.forget_predicate)} is appended to "
               f"{inline(shown_path(ws, plan.events_path))}.\n")
    return "\n".join(out) + "\n"


def proposal_file_text(ws: Workspace, prop: Proposal, wanted: str, skill_root: str | None = None) -> str:
    """`?file=<path>`: the exact text Accept would write to that file (for a client-side diff).

    Raw text, not Markdown: the client diffs it as it is and must never parse it out of the
    rendered document (whose free text comes from the proposal)."""

    try:
        plan = planned_files(ws, prop, skill_root)
    except Exception as exc:
        raise UriError(f"Accept is refused for proposal {prop.id}: {exc}") from None
    for f in plan.files:
        if shown_path(ws, f.path) == wanted or f.path == wanted:
            size = utf8_len(f.text)
            if size > MAX_RESPONSE_BYTES:
                raise UriError(f"proposal {prop.id} would write {size:,} bytes to {wanted}; harn-ls sends at most "
                               f"{MAX_RESPONSE_BYTES:,} bytes, so it cannot be compared here")
            return f.text
    raise UriError(f"proposal {prop.id} writes no file {wanted!r}")


# ----------------------------------------------------------------- skills
def skills(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    inv = ws.skills
    matches = [s for s in (inv.skills if inv else []) if s.id == target.name]
    shadowed = [s for s in (inv.shadowed if inv else []) if s.id == target.name]
    if not matches and not shadowed:
        raise UriError(f"no skill {target.name!r}")
    sk = matches[0] if matches else shadowed[0]
    out = [f"# Skill — {cell(sk.id)}", "", "| field | value |\n|---|---|",
           f"| layer | {cell(sk.layer)} |", f"| file | {code_cell(shown_path(ws, sk.path))} |",
           f"| short | {cell(sk.short)} |", f"| description | {cell(sk.description)} |",
           f"| when to use | {cell(sk.when_to_use)} |", f"| sha256 | {code_cell(sk.sha256)} |"]
    if sk.signature is not None:
        sig = sk.signature
        signer = f" · signer {code_cell(sig.signer_fingerprint[:16] + '…')}" if sig.signer_fingerprint else ""
        out.append(f"| signature | **{cell(sig.label)}**" + signer
                   + (f" · {cell(sig.error)}" if sig.error else "") + " |")
    out.append(f"| loadable by Harn | {'yes' if sk.loadable else '**no**'} |")
    out.append("")
    if shadowed and matches:
        out.append("## Shadowed copies\n")
        for s in shadowed:
            out.append(f"- {cell(s.layer)}: {inline(shown_path(ws, s.path))} (hidden by the {cell(sk.layer)} layer)")
        out.append("")
    if sk.unknown_fields:
        out.append("Unknown frontmatter fields (Harn warns and ignores them): "
                   + ", ".join(inline(u, 200) for u in list(sk.unknown_fields)[:50]) + "\n")
    for pr in sk.problems:
        out.append(_problem_line(pr))
    out.append("\n## Frontmatter\n")
    out.append(capped_fence(pretty_json(sk.fields), "json", DOC_VALUE_BYTES // 4, _source_link(ws, sk.path)))
    out.append("## Body\n")
    out.append(capped_fence(sk.body, "markdown", DOC_VALUE_BYTES, _source_link(ws, sk.path)))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------- runs
def runs(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    run = ws.runs.get(target.name)
    if run is None:
        raise UriError(f"no run {target.name!r}")
    if target.query.get("normalized") == "1":
        return normalized_document(ws, run.id)
    out = [f"# Run — {cell(run.id)}", "", "| field | value |\n|---|---|",
           f"| status | {cell(run.status)} |", f"| workflow | {cell(run.workflow_name or run.workflow_id)} |",
           f"| started | {cell(moment(run.started_at))} |", f"| finished | {cell(moment(run.finished_at))} |",
           f"| file | {code_cell(shown_path(ws, run.path))} · {human_bytes(run.size or 0)} |", ""]

    full = ws.full_run_record(run.path)
    out.extend(timeline_section(full if full is not None and full.ok else run))
    for pr in run.problems:
        out.append(_problem_line(pr))
    if run.usage:
        out.append("## Usage\n")
        out.append("| field | value |\n|---|---|")
        for k, v in list(run.usage.items())[:200]:
            out.append(f"| {cell(k)} | {cell(v if not isinstance(v, (dict, list)) else short_text(pretty_json(v), 80))} |")
        out.append("")
    if run.stages:
        out.append(f"## Stages ({len(run.stages)})\n")
        out.append("| stage | kind | status | outcome | attempts |\n|---|---|---|---|---|")
        for st in run.stages[:1000]:
            if not isinstance(st, dict):
                continue
            raw_attempts = st.get("attempts")
            attempts = raw_attempts if isinstance(raw_attempts, list) else []
            out.append(f"| {cell(st.get('node_id') or st.get('id'))} | {cell(st.get('kind'))} | {cell(st.get('status'))} | "
                       f"{cell(st.get('outcome'))} | {len(attempts)} |")
        out.append("")
    out.append(f"## Transcripts ({len(run.transcripts)})\n")
    for tr in cast("list[TranscriptSummary]", run.transcripts):  # (a workspace's runs hold summaries)
        # a transcript without an id (reported as a problem of the record) has no page of its own
        name = link(tr.id, make_uri("transcripts", tr.id)) if tr.id is not None else "a transcript without an id"
        out.append(f"- {name} — {tr.message_count} message(s), {tr.event_count} event(s)")
    if run.llm_transcript_path:
        out.append(f"\n## LLM calls\n\nTurn log: {inline(shown_path(ws, run.llm_transcript_path))}\n")
        out.extend(_llm_calls(run.llm_transcript_path))
    return "\n".join(out) + "\n"


def _llm_calls(path: str) -> list[str]:
    """One row per provider call, rebuilt from `llm_transcript.jsonl` (read only when shown)."""
    try:
        if os.path.getsize(path) > LLM_LOG_MAX_BYTES:
            return [f"The turn log is larger than {human_bytes(LLM_LOG_MAX_BYTES)}; not summarised here."]
    except OSError:
        return ["The turn log is gone."]
    log = read_llm_transcript(path)
    if not log.steps:
        return ["No provider calls recorded yet."]
    rows = ["| # | iteration | model | in tokens | out tokens | ms | tool calls | reply |", "|---|---|---|---|---|---|---|---|"]
    for i, step in enumerate(log.steps[:500], 1):
        resp = step.response or {}
        req = step.request or {}
        raw_calls = resp.get("tool_calls")
        calls = raw_calls if isinstance(raw_calls, list) else []
        names = ", ".join(short_text(c.get("name", "?"), 60) for c in calls[:20] if isinstance(c, dict))
        rows.append(f"| {i} | {cell(step.iteration)} | {cell(resp.get('model') or req.get('model'))} | "
                    f"{cell(resp.get('input_tokens'))} | {cell(resp.get('output_tokens'))} | {cell(resp.get('response_ms'))} | "
                    f"{cell(names)} | {cell(short_text(resp.get('text'), 60))} |")
    if len(log.steps) > 500:
        rows.append(f"\n…and {len(log.steps) - 500} more calls.")
    for pr in log.problems[:20]:
        rows.append("\n" + _problem_line(pr))
    return rows


def transcripts(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    entry = ws.transcripts.get(target.name)
    if entry is None:
        raise UriError(f"no transcript {target.name!r}")
    tr = entry.transcript
    if tr is None:
        raise UriError(f"transcript {target.name!r} is no longer in {shown_path(ws, entry.path)}")
    items = tr.events if tr.events else message_events(tr)
    ctx = context_for(ws, entry, tr, settings.show_private)
    sizes, starts, hidden_private = event_sizes(items, ctx)
    windows = event_windows(sizes, settings.transcript_window_bytes)
    page = min(target.page(), len(windows) - 1)
    start, stop = windows[page]
    if start < stop:  # the page's blocks, rendered again from the context they started with
        ctx.images_left, ctx.assistant_seen = starts[2 * start], starts[2 * start + 1]
    window = [render_event(i, items[i], ctx)[0] for i in range(start, stop)]
    out = [f"# Transcript — {cell(tr.id)}", ""]
    if entry.run_id:
        out.append(f"Run: {link(entry.run_id, make_uri('runs', entry.run_id))}")
    out.append(f"Source: {inline(shown_path(ws, entry.path))} · state {cell(tr.state or '?')} · "
               f"{len(tr.messages)} message(s) · {len(tr.events)} event(s) · {len(tr.assets)} asset(s)")
    if hidden_private:
        out.append(f"\n{hidden_private} private reasoning event(s) hidden.")
    if tr.summary:
        out.append("\n## Summary\n")
        out.append(capped_markdown(tr.summary if isinstance(tr.summary, str) else pretty_json(tr.summary), DOC_VALUE_BYTES // 4,
                                   _source_link(ws, entry.path)))
    if tr.budget is not None:
        out.append("\n## Transcript budget\n")
        out.append(_json_block(tr.budget, 500))
    nav = []
    here = tr.id or target.name  # (a transcript without an id is reached by its name)
    if page + 1 < len(windows):
        nav.append(link("← earlier", make_uri("transcripts", here, page=str(page + 1))))
    if page > 0:
        nav.append(link("newer →", make_uri("transcripts", here, page=str(page - 1))))
    out.append(f"\n## Events — window {page + 1} of {len(windows)} (newest window first)"
               + (" · " + " · ".join(nav) if nav else "") + "\n")
    out.extend(window)
    if tr.assets:
        out.append(f"\n## Assets ({len(tr.assets)})\n")
        for a in tr.assets[:200]:
            out.append(f"- {cell(a.name or a.id)} · {cell(a.kind)} · {cell(a.mime_type or '')} {inline(a.storage_path or '')}")
    if isinstance(tr.metadata, dict) and tr.metadata:
        out.append("\n## Metadata\n")
        out.append(_json_block(tr.metadata, 500))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------- sessions
def sessions(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    snap = ws.sessions
    session = next((s for s in (snap.sessions if snap else []) if s.id == target.name), None)
    if session is None or snap is None:
        raise UriError(f"no session {target.name!r}")
    out = [f"# Session — {cell(session.title or session.id)}", "", "| field | value |\n|---|---|"]
    for label in ("id", "status", "session_type", "model", "persona", "cwd", "created_at", "updated_at", "event_count"):
        out.append(f"| {label} | {cell(getattr(session, label, ''))} |")

    running = session_running(snap.path, session.id)  # Harn's writer lease, agent-run-writers/<blake3>.lock
    lease = "yes: a Harn process holds its writer lease" if running else "unknown" if running is None else "no"
    out.append(f"| running now | {lease} |")
    out.append("")
    events = read_session_events(ws.paths.session_store, session.id, limit=500)
    out.append(f"## Events ({len(events)})\n")
    for ev in events:
        custom = cell(":" + str(ev.custom_kind)) if getattr(ev, "custom_kind", None) else ""
        out.append(f"**{cell(ev.event_id)} · {cell(ev.kind)}{custom} · "
                   f"{cell(ev.actor)} · {cell(ev.ts)}**\n")
        out.append(_json_block(ev.payload, 1000))
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------- recall
def recall(ws: Workspace, target: StateUri, settings: RenderSettings) -> str:
    query = target.query.get("q", "")
    ns = target.query.get("ns") or None
    k = target.number("k", 5, 1, 1000)  # 5: Harn's default, as the CLI
    if ns is not None and ns not in ws.memory:
        raise UriError(f"no memory namespace {ns!r}")
    result = ws.recall.recall(query, k=k, namespace=ns, explain=True)
    return render_recall_markdown(result, query, ns)


_RENDERERS: dict[str, Renderer] = {
    "index": index,
    "checkpoints": checkpoints,
    "memory": memory,
    "facts": facts,
    "proposals": proposals,
    "skills": skills,
    "runs": runs,
    "transcripts": transcripts,
    "sessions": sessions,
    "recall": recall,
    "compare": compare_document,
    **STATE_RENDERERS,  # event logs, HITL, store, receipts, worktrees
    "newer_state": newer_state,  # issue 28: the LLM cache, selection, guard models, snapshot, metadata
}
