"""Sidebar data: `harn/tree` {view, parent?, page?} -> {items, nextPage?}; `harn/treeChanged` after changes."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from harn_ls import contract as P
from harn_ls.change_kinds import K
from harn_ls.render import make_uri
from harn_ls.render.limits import DESCRIPTION_BYTES, LABEL_BYTES, MAX_RESPONSE_BYTES, TOOLTIP_BYTES, one_line
from harn_ls.render.markdown import capped_markdown, short_text

# One page of items fits in one response: each item at most this many bytes as JSON.
ITEM_BYTES = MAX_RESPONSE_BYTES // (P.TREE_PAGE_SIZE + 1)

from harn_ls.lsp import tree_state

_VIEW_KINDS = {
    "runs": {K.RUNS} | tree_state.KINDS,
    "checkpoints": {K.CHECKPOINTS},
    "memory": {K.MEMORY, K.FACTS},
    "skills": {K.SKILLS, K.PATTERN},
}


def views_for(changes) -> list[str]:
    if changes.rescanned:
        return list(P.TREE_VIEWS)
    return [v for v, kinds in _VIEW_KINDS.items() if kinds & changes.kinds]


def _item(id: str, label: str, *, description: str = "", tooltip: str = "", icon: str = "", uri: str | None = None,
          context: str = "group", children: bool = False, data: dict | None = None) -> dict:
    """A tree item. `label` and `description` are plain one-line text, capped; `tooltip` is Markdown
    (the extension shows it as a MarkdownString), so data in it is escaped, and capped."""
    out: dict[str, Any] = {"id": id, "label": one_line(label, LABEL_BYTES),
                           "description": one_line(description, DESCRIPTION_BYTES),
                           "tooltip": capped_markdown(tooltip or label, TOOLTIP_BYTES),
                           "icon": icon, "contextValue": context, "hasChildren": children}
    if uri:
        out["uri"] = uri
        out["command"] = {"title": "Open", "command": P.CMD_OPEN, "arguments": [uri]}
    if data:
        out["data"] = data
    return out


def display_time(value) -> str:
    """Run records mix RFC 3339 strings and epoch seconds (as numbers or strings); show one form."""
    import time as _time

    if value is None or value == "":
        return ""
    s = str(value)
    try:
        secs = float(s)
    except ValueError:
        return s.replace("T", " ")[:19]
    if secs > 1e12:  # milliseconds
        secs /= 1000
    return _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(secs))


def _has_state(ws) -> bool:
    import os

    p = ws.paths
    return any(os.path.isdir(d) for d in (p.state_root, p.run_root, p.memory_root)) or bool(ws.skills and ws.skills.skills)


def _runs(ws, parent: str | None) -> list[dict]:
    if parent is not None and parent.startswith(tree_state.PREFIXES):
        return tree_state.children(ws, parent, _item)
    if parent is None:
        runs = sorted(ws.runs.values(), key=lambda r: (display_time(r.started_at), r.id), reverse=True)
        items = [_item(f"run:{r.id}", r.workflow_name or r.id, description=f"{r.status or '?'} · {display_time(r.started_at)}",
                       tooltip=r.id, icon="history", uri=make_uri("runs", r.id), context="run",
                       children=bool(r.transcripts), data={"id": r.id}) for r in runs]
        workers = [e for e in ws.transcripts.values() if e.run_id is None]
        if workers:
            items.append(_item("workers", "Worker transcripts", description=str(len(workers)), icon="person", children=True))
        return tree_state.groups(ws, _item) + items + tree_state.llm_item(ws, _item)
    if parent == "workers":
        entries = [(tid, e) for tid, e in ws.transcripts.items() if e.run_id is None]
    elif parent.startswith("run:"):
        entries = [(tid, e) for tid, e in ws.transcripts.items() if e.run_id == parent[4:]]
    else:
        return []
    return [_item(f"tr:{tid}", tid, description=f"{e.message_count} messages", icon="comment-discussion",
                  uri=make_uri("transcripts", tid), context="transcript", data={"id": tid}) for tid, e in sorted(entries)]


def _checkpoints(ws, parent: str | None) -> list[dict]:
    if parent is None:
        from harn_ls.formats.checkpoints import RUNNING_LABEL, running_now
        from harn_ls.formats.locks import read_flock_table

        table = read_flock_table()  # one read of the kernel's lock table for the whole list
        return [_item(f"ckpt:{name}", name, description=("unreadable" if cf.retry else f"{len(cf.entries)} stage(s)")
                      + (f" · {RUNNING_LABEL}" if running_now(cf.path, table) else ""),
                      icon="database", uri=make_uri("checkpoints", name), context="checkpointFile",
                      children=bool(cf.entries), data={"pipeline": name}) for name, cf in sorted(ws.checkpoints.items())]
    if parent.startswith("ckpt:"):
        name = parent[5:]
        cf = ws.checkpoints.get(name)
        if cf is None:
            return []
        out = []
        for key in sorted(cf.entries):
            e = cf.entries[key]
            desc = f"keyed {e.fingerprint[:15]}…" if e.keyed and e.fingerprint else ("completed (nil)" if e.value is None else "plain")
            out.append(_item(f"stage:{name}/{key}", key, description=desc, icon="check", uri=make_uri("checkpoints", name),
                             context="checkpointStage", data={"pipeline": name, "key": key}))
        out.extend(_checkpoint_history_node(ws, name))
        return out
    if parent.startswith("ckhist:"):
        return _checkpoint_versions(ws, parent[7:])
    return []


def _checkpoint_history_node(ws, name: str) -> list[dict]:
    hist = getattr(ws, "checkpoint_history", None)
    versions = hist.versions(name) if hist is not None else []
    if not versions:
        return []
    return [_item(f"ckhist:{name}", "History", description=f"{len(versions)} version(s)", icon="history",
                  children=True, context="checkpointHistory", data={"pipeline": name})]


def _checkpoint_versions(ws, name: str) -> list[dict]:
    from datetime import datetime, timezone

    hist = getattr(ws, "checkpoint_history", None)
    versions = hist.versions(name) if hist is not None else []
    out = []
    for i in range(len(versions) - 1, -1, -1):
        v = versions[i]
        prev = versions[i - 1].n if i > 0 else None
        when = datetime.fromtimestamp(v.seen_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        data = {"pipeline": name, "version": v.n}
        if prev is not None:
            data["previous"] = prev
            data["previousUri"] = make_uri("checkpoints", name, version=str(prev))
        out.append(_item(f"ckver:{name}/{v.n}", f"version {v.n}", description=when + (" · newest" if i == len(versions) - 1 else ""),
                         icon="git-commit", uri=make_uri("checkpoints", name, version=str(v.n)),
                         context="checkpointVersion" if prev is not None else "checkpointVersion.first", data=data))
    return out


def _memory(ws, parent: str | None, min_conf: float) -> list[dict]:
    if parent is None:
        items = [_item("facts", "Facts", description=str(len(ws.facts)), icon="lightbulb", children=bool(ws.facts))]
        for ns, space in sorted(ws.memory.items()):
            items.append(_item(f"ns:{ns}", ns, description=f"{len(space.active)} records · {space.config.get('backend')}",
                               icon="archive", uri=make_uri("memory", ns), context="namespace",
                               children=bool(space.active), data={"namespace": ns}))
        return items
    if parent == "facts":
        kinds: dict[str, int] = {}
        for f in ws.facts.values():
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        return [_item(f"fk:{k}", k, description=str(n), icon="symbol-class", children=True) for k, n in sorted(kinds.items())]
    if parent.startswith("fk:"):
        kind = parent[3:]
        facts = sorted((f for f in ws.facts.values() if f.kind == kind and f.confidence >= min_conf),
                       key=lambda f: (-f.confidence, f.id))
        return [_item(f"fact:{f.id}", short_text(f.claim, 70), description=f"{f.confidence:g}", tooltip=f.claim,
                      icon="lightbulb", uri=make_uri("facts", f.id), context="fact", data={"id": f.id}) for f in facts]
    if parent.startswith("ns:"):
        ns = parent[3:]
        space = ws.memory.get(ns)
        if space is None:
            return []
        out = []
        for r in reversed(space.records()):
            fact = ws.facts.get((ns, r.seq))
            out.append(_item(f"rec:{ns}:{r.seq}", r.key, description=r.stored_at, tooltip=short_text(r.text, 300),
                             icon="note", uri=make_uri("facts", fact.id) if fact else make_uri("memory", ns),
                             context="fact" if fact else "memoryRecord",
                             data={"id": fact.id} if fact else {"namespace": ns, "id": r.id}))
        return out
    return []


def _skills(ws, parent: str | None, show_suppressed: bool) -> list[dict]:
    from harn_ls.formats.pattern_learning import is_suppressed
    from harn_ls.formats.facts import date_now_iso

    if parent is None:
        pending = ws.pending_proposals()
        items = [_item("proposals", "Pending proposals", description=str(len(pending)), icon="sparkle", children=True)]
        if ws.pattern is not None and ws.pattern.state is not None and not ws.pattern.state.enabled:
            items[0]["description"] += " · learning disabled"
        if ws.skills is not None:
            layers: dict[str, int] = {}
            for s in ws.skills.skills + ws.skills.shadowed:
                layers[s.layer] = layers.get(s.layer, 0) + 1
            for layer, n in layers.items():
                items.append(_item(f"layer:{layer}", layer, description=str(n), icon="folder-library", context="skillLayer",
                                   children=True))
        return items
    if parent == "proposals":
        now = date_now_iso()
        out = []
        for p in ws.pending_proposals(include_suppressed=True):
            suppressed = is_suppressed(p.id, ws.pattern.state, now)
            if suppressed and not show_suppressed:
                continue
            desc = f"{p.kind} · support {p.support}" + (" · suppressed" if suppressed else "")
            out.append(_item(f"proposal:{p.id}", p.title or p.name, description=desc, tooltip=p.description or p.name,
                             icon="sparkle", uri=make_uri("proposals", p.id),
                             context="proposal.suppressed" if suppressed else "proposal", data={"id": p.id}))
        return out
    if parent.startswith("layer:") and ws.skills is not None:
        layer = parent[6:]
        out = []
        for s in ws.skills.skills + ws.skills.shadowed:
            if s.layer != layer:
                continue
            bits = []
            if s.signature is not None and (s.signature.status != "missing_signature" or s.fields.get("require_signature")):
                bits.append(s.signature.label)
            if s.shadowed_by:
                bits.append(f"shadowed by {s.shadowed_by}")
            if not s.loadable:
                bits.append("not loadable")
            out.append(_item(f"skill:{layer}:{s.id}", s.id, description=" · ".join(bits), tooltip=s.short or s.description,
                             icon="book", uri=make_uri("skills", s.id), context="skill", data={"id": s.id}))
        return out
    return []


def tree_items(ws, view: str, parent: str | None, *, min_conf: float = 0.0, show_suppressed: bool = False) -> list[dict]:
    if parent is None and not _has_state(ws):
        return []  # lets the client show its welcome content
    if view == "runs":
        items = _runs(ws, parent)
    elif view == "checkpoints":
        items = _checkpoints(ws, parent)
    elif view == "memory":
        items = _memory(ws, parent, min_conf)
    elif view == "skills":
        items = _skills(ws, parent, show_suppressed)
    else:
        raise ValueError(f"unknown view {view!r}")
    return [_fit(it) for it in items]


def _fit(item: dict) -> dict:
    """An item whose ids (a run id, a namespace, a stage key: data, not cut because commands need
    them whole) make it larger than `ITEM_BYTES` is replaced by a placeholder without actions."""
    import hashlib

    import orjson

    size = len(orjson.dumps(item))
    if size <= ITEM_BYTES:
        return item
    digest = hashlib.sha256(str(item.get("id")).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return {"id": f"toolarge:{digest}", "label": item["label"],
            "description": f"not shown: {size:,} bytes of names (cap {ITEM_BYTES:,})",
            "tooltip": "This entry's names are too long to send; see `harn-ls inspect`.",
            "icon": "warning", "contextValue": "tooLarge", "hasChildren": False}


def register(server) -> None:
    @server.handler(P.TREE)
    async def tree(ls, params):
        try:
            p = P.parse_params(P.TreeParams, params, P.TREE)
        except P.ArgumentError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        view, parent, page, show_suppressed, root = p.view, p.parent, p.page, p.show_suppressed, p.root
        if view not in P.TREE_VIEWS:
            raise JsonRpcInvalidParams(f"unknown view {view!r}; expected one of {', '.join(P.TREE_VIEWS)}")
        proj = ls.projects.get(root) if root else ls.default_project()
        if proj is None or proj.ws is None:
            return {"items": []}
        min_conf = ls.settings.facts.minConfidence
        items = await proj.run(lambda: tree_items(proj.ws, view, parent, min_conf=min_conf, show_suppressed=show_suppressed))
        size = P.TREE_PAGE_SIZE
        start = int(page) * size
        out: dict[str, Any] = {"items": items[start:start + size]}
        if start + size < len(items):
            out["nextPage"] = int(page) + 1
            out["total"] = len(items)
        return out
