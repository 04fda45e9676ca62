"""Plain view data from `harn_ls/render` translated into lsprotocol types (and command ids)."""

from __future__ import annotations

from typing import Any, Callable

from lsprotocol import types

from harn_ls import contract as P
from harn_ls.lsp.project_links import argument_for, link_root
from harn_ls.render import UriError, parse_uri
from harn_ls.render import view_commands as V
from harn_ls.render.proposal_choices import ProposalChoice

COMMAND_IDS = {V.NONE: "", V.OPEN: P.CMD_OPEN, V.ACCEPT: P.CMD_ACCEPT, V.REJECT: P.CMD_REJECT, V.COMPARE: P.CMD_COMPARE,
               **{f"hitl:{verb}": cmd for verb, cmd in P.CMD_UI_HITL.items()}}
ACTION_KINDS = {V.ACCEPT: P.KIND_ACCEPT, V.REJECT: P.KIND_REJECT, V.COMPARE: P.KIND_COMPARE}


def to_command(cmd: V.ViewCommand, root: str | None = None) -> types.Command:
    """`root`: the project the command is about, named in its arguments (several projects; project_links.py)."""
    return types.Command(title=cmd.title, command=COMMAND_IDS[cmd.action],
                         arguments=[argument_for(a, root) for a in cmd.arguments] or None)


def to_code_action(choice: ProposalChoice, root: str | None = None) -> types.CodeAction:
    return types.CodeAction(title=choice.title, kind=ACTION_KINDS[choice.action], command=to_command(choice.command, root),
                            data=argument_for(dict(choice.data), root))


def line_range(line: int, start: int = 0, end: int = 0) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start), end=types.Position(line=line, character=end))


async def on_proposal_document(ls, uri: str, fn: Callable[[Any, str, str | None, str | None], list]) -> list:
    """`fn(ws, proposal_id, skill_root, link_root)` on the worker thread of the project holding the
    `harn-state:/proposals/<id>.md` document at `uri`; [] for any other URI. `link_root`: the root
    its commands name (project_links.py)."""
    try:
        target = parse_uri(uri)
    except UriError:
        return []
    if target.kind != "proposals":
        return []
    proj = await ls.project_holding(target.kind, target.name, target.query.get("root"))
    if proj is None or proj.ws is None:
        return []
    skill_root, root = ls.settings.skillRoot, link_root(ls, proj)
    return await proj.run(lambda: fn(proj.ws, target.name, skill_root, root))
