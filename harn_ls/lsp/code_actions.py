"""Code actions: Accept / Reject / Compare on a proposal (its document or its pending line
in events.jsonl), and "Run typecheck probe" on `.harn` selections. Actions carry a
`data` payload and are built from it; kinds have the `harnState` tool suffix.

A client that did not declare `codeActionLiteralSupport` gets the same choices as `Command[]`
(LSP 3.17: the only answer such a client reads); one that cannot run a choice's command does not
get that choice (lsp/view_types.py)."""

from __future__ import annotations

import os

from lsprotocol import types

from harn_ls import contract as P
from harn_ls.lsp.file_uris import file_path
from harn_ls.lsp.project_links import link_root
from harn_ls.lsp.view_types import on_state_document, to_code_action
from harn_ls.render.proposal_choices import proposal_at_line, proposal_choices


def _proposal_actions(ws, proposal_id: str, skill_root: str | None, client, root: str | None = None) -> list[types.CodeAction]:
    actions = (to_code_action(c, client, root) for c in proposal_choices(ws, proposal_id, skill_root))
    return [a for a in actions if a is not None]


async def proposal_document_actions(ls, uri: str) -> list[types.CodeAction]:
    """Accept / Reject / Compare for a `harn-state:/proposals/<id>.md` document."""
    client = ls.client
    return await on_state_document(ls, uri, "proposals", lambda ws, pid, skill_root, root: _proposal_actions(
        ws, pid, skill_root, client, root))


def for_client(ls, actions: list[types.CodeAction]) -> list:
    """CodeAction literals to a client that declared them, their commands to any other."""
    return actions if ls.client.code_action_literals else [a.command for a in actions if a.command is not None]


def _wanted(context: types.CodeActionContext, kind: str | None) -> bool:
    only = context.only
    if not only:
        return True
    if kind is None:  # (every action built here has a kind)
        return False
    return any(kind == o or kind.startswith(o + ".") for o in only)


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[P.KIND_ACCEPT, P.KIND_REJECT, P.KIND_COMPARE, P.KIND_PROBE, P.KIND_MIGRATE], resolve_provider=False))
    async def code_action(ls, params: types.CodeActionParams):
        uri = params.text_document.uri
        client = ls.client
        if uri.startswith(P.SCHEME + ":"):
            return for_client(ls, [a for a in await proposal_document_actions(ls, uri) if _wanted(params.context, a.kind)])
        path = file_path(uri)
        proj = await ls.loaded_project_for(path)
        if path is None or proj is None or proj.ws is None:
            return []
        skill_root = ls.settings_for(proj).skillRoot  # its workspace folder's
        out: list[types.CodeAction] = []
        if os.path.basename(path) == "events.jsonl":
            line = params.range.start.line + 1
            root = link_root(ls, proj)

            def _acts():
                pid = proposal_at_line(proj.ws, path, line)
                return _proposal_actions(proj.ws, pid, skill_root, client, root) if pid else []
            out.extend(await proj.run(_acts))
        if os.path.basename(path).startswith("burin.agent_context.pattern_learning.") and path.endswith(".jsonl") \
                and _wanted(params.context, P.KIND_MIGRATE):
            if await proj.run(lambda: proj.ws.migration_needed):
                out.append(types.CodeAction(
                    title="Migrate legacy pattern learning into .harn/memory", kind=P.KIND_MIGRATE,
                    command=types.Command(title="Migrate pattern learning", command=P.CMD_MIGRATE,
                                          arguments=[P.to_wire(P.MigrateArgs())]),
                    data={}))
        if path.endswith(".harn") and _wanted(params.context, P.KIND_PROBE):
            r = params.range
            empty = r.start == r.end
            title = "Run typecheck probe on whole file" if empty else "Run typecheck probe on selection"
            rng = None if empty else P.Range(start=P.Position(line=r.start.line, character=r.start.character),
                                             end=P.Position(line=r.end.line, character=r.end.character))
            arg = P.to_wire(P.ProbeArgs(uri=uri, range=rng))
            out.append(types.CodeAction(title=title, kind=P.KIND_PROBE,
                                        command=types.Command(title=title, command=P.CMD_PROBE, arguments=[arg]),
                                        data=arg))
        return for_client(ls, [a for a in out if _wanted(params.context, a.kind)])
