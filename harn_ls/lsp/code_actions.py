"""Code actions: Accept / Reject / Compare on a proposal (its document or its pending line
in events.jsonl), and "Run typecheck probe" on `.harn` selections. Actions carry a
`data` payload and are built from it; kinds have the `harnState` tool suffix."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import to_fs_path

from harn_ls.lsp import protocol as P
from harn_ls.render import UriError, make_uri, parse_uri


def _proposal_actions(ws, proposal_id: str, skill_root: str) -> list[types.CodeAction]:
    from harn_ls.actions import ActionFailed
    from harn_ls.accept_plan import planned_files

    prop = ws.proposal(proposal_id)
    if prop is None:
        return []
    actions = []
    try:
        plan = planned_files(ws, prop, skill_root=skill_root)
        conflict = next((f for f in plan.files if f.conflict), None)
    except ActionFailed:
        plan, conflict = None, None
    if conflict is not None:
        actions.append(types.CodeAction(
            title=f"Compare with existing {os.path.relpath(conflict.path, ws.root)}",
            kind=P.KIND_COMPARE,
            command=types.Command(title="Compare with existing", command=P.CMD_COMPARE,
                                  # `uri`: the server's raw text of what Accept would write (the client
                                  # diffs it as it is; it never parses the rendered document)
                                  arguments=[{"id": proposal_id, "path": conflict.path,
                                              "uri": make_uri("proposals", proposal_id,
                                                              file=os.path.relpath(conflict.path, ws.root).replace(os.sep, "/"))}]),
            data={"id": proposal_id}))
    elif plan is not None:
        actions.append(types.CodeAction(
            title=f"Accept skill {prop.name}", kind=P.KIND_ACCEPT,
            command=types.Command(title=f"Accept skill {prop.name}", command=P.CMD_ACCEPT, arguments=[{"id": proposal_id}]),
            data={"id": proposal_id}))
    actions.append(types.CodeAction(
        title="Reject for 14 days", kind=P.KIND_REJECT,
        command=types.Command(title="Reject for 14 days", command=P.CMD_REJECT, arguments=[{"id": proposal_id, "days": 14}]),
        data={"id": proposal_id}))
    return actions


async def proposal_document_actions(ls, uri: str) -> list[types.CodeAction]:
    """Accept / Reject / Compare for a `harn-state:/proposals/<id>.md` document (actions and lenses)."""
    try:
        target = parse_uri(uri)
    except UriError:
        return []
    if target.kind != "proposals":
        return []
    proj = await ls.project_holding(target.kind, target.name, target.query.get("root"))
    if proj is None or proj.ws is None:
        return []
    skill_root = ls.settings.skillRoot
    return await proj.run(lambda: _proposal_actions(proj.ws, target.name, skill_root))


def proposal_at_line(ws, events_path: str, line: int) -> str | None:
    """The pending proposal whose store event is on this 1-based line of the pattern log."""
    if ws.pattern is None:
        return None
    for prop in ws.pattern.pending:
        if prop.record is not None and prop.record.line_no == line and os.path.samefile(ws.namespace_path("project/pattern-learning") or events_path, events_path):
            return prop.id
    return None


def _wanted(context: types.CodeActionContext, kind: str) -> bool:
    only = context.only
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[P.KIND_ACCEPT, P.KIND_REJECT, P.KIND_COMPARE, P.KIND_PROBE, P.KIND_MIGRATE], resolve_provider=False))
    async def code_action(ls, params: types.CodeActionParams):
        uri = params.text_document.uri
        skill_root = ls.settings.skillRoot
        if uri.startswith(P.SCHEME + ":"):
            return [a for a in await proposal_document_actions(ls, uri) if _wanted(params.context, a.kind)]
        proj = ls.project_for_uri(uri)
        if proj is None or proj.ws is None:
            return []
        path = to_fs_path(uri)
        out: list[types.CodeAction] = []
        if os.path.basename(path) == "events.jsonl":
            line = params.range.start.line + 1

            def _acts():
                pid = proposal_at_line(proj.ws, path, line)
                return _proposal_actions(proj.ws, pid, skill_root) if pid else []
            out.extend(await proj.run(_acts))
        if os.path.basename(path).startswith("burin.agent_context.pattern_learning.") and path.endswith(".jsonl") \
                and _wanted(params.context, P.KIND_MIGRATE):
            if await proj.run(lambda: proj.ws.migration_needed):
                out.append(types.CodeAction(
                    title="Migrate legacy pattern learning into .harn/memory", kind=P.KIND_MIGRATE,
                    command=types.Command(title="Migrate pattern learning", command=P.CMD_MIGRATE, arguments=[{}]),
                    data={}))
        if path.endswith(".harn") and _wanted(params.context, P.KIND_PROBE):
            r = params.range
            empty = r.start == r.end
            title = "Run typecheck probe on whole file" if empty else "Run typecheck probe on selection"
            arg = {"uri": uri}
            if not empty:
                arg["range"] = {"start": {"line": r.start.line, "character": r.start.character},
                                "end": {"line": r.end.line, "character": r.end.character}}
            out.append(types.CodeAction(title=title, kind=P.KIND_PROBE,
                                        command=types.Command(title=title, command=P.CMD_PROBE, arguments=[arg]),
                                        data=arg))
        return [a for a in out if _wanted(params.context, a.kind)]
