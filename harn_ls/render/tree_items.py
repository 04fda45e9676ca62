"""Sidebar items (`harn/tree`, contract.TreeItemData and TreeResult): runs, checkpoints, memory &
facts, skills. harn_ls/lsp puts a page on the wire; `tree_items` gives every item as it is sent.

Labels and descriptions are one-line text, capped; tooltips are Markdown with data escaped,
capped; one item is at most `TreeOptions.item_bytes` as JSON, so a page fits in one response.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from harn_ls import contract as C
from harn_ls.formats.checkpoints import RUNNING_LABEL
from harn_ls.formats.harn_time import date_now_iso
from harn_ls.formats.locks import checkpoint_running, read_flock_table
from harn_ls.formats.pattern_learning import is_suppressed
from harn_ls.render import tree_state
from harn_ls.render.limits import DESCRIPTION_BYTES, LABEL_BYTES, MAX_RESPONSE_BYTES, TOOLTIP_BYTES, one_line
from harn_ls.render.markdown import capped_markdown, display_time, short_text
from harn_ls.render.uri import make_uri

if TYPE_CHECKING:
    from harn_ls.cache.checkpoint_history import Version
    from harn_ls.model.workspace import Workspace


@dataclass(frozen=True)
class TreeOptions:
    """How tree pages are built: the open command, page size and filters."""

    open_command: str  # the client command that opens an item's `uri` (an item's click)
    page_size: int  # items per `harn/tree` response
    min_conf: float = 0.0  # facts below this confidence are not listed
    show_suppressed: bool = False  # list proposals the user rejected for a while

    @property
    def item_bytes(self) -> int:
        """One page of items fits in one response: each item at most this many bytes as JSON."""
        return MAX_RESPONSE_BYTES // (self.page_size + 1)


def tree_item(open_command: str, id: str, label: str, *, description: str = "", tooltip: str = "", icon: str = "",
              uri: str | None = None, context: str = "group", children: bool = False,
              data: dict[str, Any] | None = None) -> C.TreeItemData:
    """A tree item. `label` and `description` are plain one-line text, capped; `tooltip` is Markdown
    (the extension shows it as a MarkdownString), so data in it is escaped, and capped. A `uri` is
    opened by a click (`open_command`); `data` is the argument object of the item's server command."""
    return C.TreeItemData(id=id, label=one_line(label, LABEL_BYTES), description=one_line(description, DESCRIPTION_BYTES),
                          tooltip=capped_markdown(tooltip or label, TOOLTIP_BYTES), icon=icon, context_value=context,
                          has_children=children, uri=uri or None,
                          command=C.LspCommand(title="Open", command=open_command, arguments=[uri]) if uri else None,
                          data=data or None)


Item = tree_state.ItemMaker[C.TreeItemData]  # tree_item with the open command given


def _has_state(ws: Workspace) -> bool:
    p = ws.paths
    return any(os.path.isdir(d) for d in (p.state_root, p.run_root, p.memory_root)) or bool(ws.skills and ws.skills.skills)


def _runs(item: Item, ws: Workspace, parent: str | None) -> list[C.TreeItemData]:
    if parent is not None and parent.startswith(tree_state.PREFIXES):
        return tree_state.children(ws, parent, item)
    if parent is None:
        runs = sorted(ws.runs.values(), key=lambda r: (display_time(r.started_at), r.id), reverse=True)
        items = [item(f"run:{r.id}", r.workflow_name or r.id, description=f"{r.status or '?'} · {display_time(r.started_at)}",
                       tooltip=r.id, icon="history", uri=make_uri("runs", r.id), context="run",
                       children=bool(r.transcripts), data={"id": r.id}) for r in runs]
        workers = [e for e in ws.transcripts.values() if e.run_id is None]
        if workers:
            items.append(item("workers", "Worker transcripts", description=str(len(workers)), icon="person", children=True))
        return tree_state.groups(ws, item) + items + tree_state.llm_item(ws, item)
    if parent == "workers":
        entries = [(tid, e) for tid, e in ws.transcripts.items() if e.run_id is None]
    elif parent.startswith("run:"):
        entries = [(tid, e) for tid, e in ws.transcripts.items() if e.run_id == parent[4:]]
    else:
        return []
    return [item(f"tr:{tid}", tid, description=f"{e.message_count} messages", icon="comment-discussion",
                  uri=make_uri("transcripts", tid), context="transcript", data={"id": tid}) for tid, e in sorted(entries)]


def _checkpoints(item: Item, ws: Workspace, parent: str | None) -> list[C.TreeItemData]:
    if parent is None:
        table = read_flock_table()  # one read of the kernel's lock table for the whole list
        return [item(f"ckpt:{name}", name, description=("unreadable" if cf.retry else f"{len(cf.entries)} stage(s)")
                      + (f" · {RUNNING_LABEL}" if checkpoint_running(cf.path, table) else ""),
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
            desc = (f"keyed {e.fingerprint[:15]}…" if e.keyed and e.fingerprint
                    else ("completed (nil)" if e.value is None else "plain"))
            out.append(item(f"stage:{name}/{key}", key, description=desc, icon="check", uri=make_uri("checkpoints", name),
                             context="checkpointStage", data={"pipeline": name, "key": key}))
        versions = _kept_versions(ws, name)
        if versions:
            out.append(item(f"ckhist:{name}", "History", description=f"{len(versions)} version(s)", icon="history",
                            children=True, context="checkpointHistory", data={"pipeline": name}))
        return out
    if parent.startswith("ckhist:"):
        return _checkpoint_versions(item, ws, parent[7:])
    return []


def _kept_versions(ws: Workspace, name: str) -> list[Version]:
    hist = ws.checkpoint_history
    return hist.versions(name) if hist is not None else []


def _checkpoint_versions(item: Item, ws: Workspace, name: str) -> list[C.TreeItemData]:
    versions = _kept_versions(ws, name)
    out = []
    for i in range(len(versions) - 1, -1, -1):
        v = versions[i]
        prev = versions[i - 1].n if i > 0 else None
        when = display_time(v.seen_at)
        data = {"pipeline": name, "version": v.n}
        if prev is not None:
            data["previous"] = prev
            data["previousUri"] = make_uri("checkpoints", name, version=str(prev))
        newest = " · newest" if i == len(versions) - 1 else ""
        out.append(item(f"ckver:{name}/{v.n}", f"version {v.n}", description=when + newest,
                         icon="git-commit", uri=make_uri("checkpoints", name, version=str(v.n)),
                         context="checkpointVersion" if prev is not None else "checkpointVersion.first", data=data))
    return out


def _memory(item: Item, ws: Workspace, parent: str | None, min_conf: float) -> list[C.TreeItemData]:
    if parent is None:
        items = [item("facts", "Facts", description=str(len(ws.facts)), icon="lightbulb", children=bool(ws.facts))]
        for ns, space in sorted(ws.memory.items()):
            items.append(item(f"ns:{ns}", ns, description=f"{len(space.active)} records · {space.config.get('backend')}",
                               icon="archive", uri=make_uri("memory", ns), context="namespace",
                               children=bool(space.active), data={"namespace": ns}))
        return items
    if parent == "facts":
        kinds: dict[str, int] = {}
        for f in ws.facts.values():
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        return [item(f"fk:{k}", k, description=str(n), icon="symbol-class", children=True) for k, n in sorted(kinds.items())]
    if parent.startswith("fk:"):
        kind = parent[3:]
        facts = sorted((f for f in ws.facts.values() if f.kind == kind and f.confidence >= min_conf),
                       key=lambda f: (-f.confidence, f.id))
        return [item(f"fact:{f.id}", short_text(f.claim, 70), description=f"{f.confidence:g}", tooltip=f.claim,
                      icon="lightbulb", uri=make_uri("facts", f.id), context="fact", data={"id": f.id}) for f in facts]
    if parent.startswith("ns:"):
        ns = parent[3:]
        shown = ws.memory.get(ns)
        if shown is None:
            return []
        out = []
        for r in reversed(shown.records()):
            fact = ws.facts.get((ns, r.seq))
            out.append(item(f"rec:{ns}:{r.seq}", r.key, description=r.stored_at, tooltip=short_text(r.text, 300),
                             icon="note", uri=make_uri("facts", fact.id) if fact else make_uri("memory", ns),
                             context="fact" if fact else "memoryRecord",
                             data={"id": fact.id} if fact else {"namespace": ns, "id": r.id}))
        return out
    return []


def _skills(item: Item, ws: Workspace, parent: str | None, show_suppressed: bool) -> list[C.TreeItemData]:
    if parent is None:
        pending = ws.pending_proposals()
        items = [item("proposals", "Pending proposals", description=str(len(pending)), icon="sparkle", children=True)]
        if ws.pattern is not None and ws.pattern.state is not None and not ws.pattern.state.enabled:
            items[0] = attrs.evolve(items[0], description=items[0].description + " · learning disabled")
        if ws.skills is not None:
            layers: dict[str, int] = {}
            for s in ws.skills.skills + ws.skills.shadowed:
                layers[s.layer] = layers.get(s.layer, 0) + 1
            for layer, n in layers.items():
                items.append(item(f"layer:{layer}", layer, description=str(n), icon="folder-library", context="skillLayer",
                                   children=True))
        return items
    if parent == "proposals":
        now = date_now_iso()
        state = ws.pattern.state if ws.pattern is not None else None
        out = []
        for p in ws.pending_proposals(include_suppressed=True):
            suppressed = is_suppressed(p.id, state, now)
            if suppressed and not show_suppressed:
                continue
            desc = f"{p.kind} · support {p.support}" + (" · suppressed" if suppressed else "")
            out.append(item(f"proposal:{p.id}", p.title or p.name, description=desc, tooltip=p.description or p.name,
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
            out.append(item(f"skill:{layer}:{s.id}", s.id, description=" · ".join(bits), tooltip=s.short or s.description,
                             icon="book", uri=make_uri("skills", s.id), context="skill", data={"id": s.id}))
        return out
    return []


def tree_item_data(ws: Workspace, view: str, parent: str | None, opts: TreeOptions) -> list[C.TreeItemData]:
    """Every item under `parent` (None: the view's top level) of one view, not yet fitted to `opts.item_bytes`."""
    if parent is None and not _has_state(ws):
        return []  # lets the client show its welcome content
    item = partial(tree_item, opts.open_command)
    if view == "runs":
        return _runs(item, ws, parent)
    if view == "checkpoints":
        return _checkpoints(item, ws, parent)
    if view == "memory":
        return _memory(item, ws, parent, opts.min_conf)
    if view == "skills":
        return _skills(item, ws, parent, opts.show_suppressed)
    raise ValueError(f"unknown view {view!r}")


def tree_result(ws: Workspace, view: str, parent: str | None, page: int, opts: TreeOptions) -> C.TreeResult:
    """One page of items, each at most `opts.item_bytes`; with `next_page` and `total` (all items)
    when more pages follow."""
    items = tree_item_data(ws, view, parent, opts)
    size = opts.page_size
    start = max(0, int(page)) * size
    shown = [_fit(it, opts.item_bytes) for it in items[start:start + size]]
    if start + size < len(items):
        return C.TreeResult(items=shown, next_page=int(page) + 1, total=len(items))
    return C.TreeResult(items=shown)


def tree_items(ws: Workspace, view: str, parent: str | None, opts: TreeOptions) -> list[dict[str, Any]]:
    """Every item under `parent` of one view as the client receives it (JSON data, each at most
    `opts.item_bytes`): what the CLI checks and the output-limit tests measure."""
    return [C.to_wire(_fit(it, opts.item_bytes)) for it in tree_item_data(ws, view, parent, opts)]


def _fit(item: C.TreeItemData, item_bytes: int) -> C.TreeItemData:
    """An item whose ids (a run id, a namespace, a stage key: data, not cut because commands need
    them whole) make it larger than `item_bytes` is replaced by a placeholder without actions."""
    size = len(orjson.dumps(C.to_wire(item)))
    if size <= item_bytes:
        return item
    digest = hashlib.sha256(str(item.id).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return C.TreeItemData(id=f"toolarge:{digest}", label=item.label,
                          description=f"not shown: {size:,} bytes of names (cap {item_bytes:,})",
                          tooltip="This entry's names are too long to send; see `harn-ls inspect`.",
                          icon="warning", context_value="tooLarge", has_children=False)
