"""Plain view data from `harn_ls/render` translated into lsprotocol types (and command ids).

Every command sent is one the client can run: a server command (in the executeCommandProvider
list), or a client-side one the client named in `initializationOptions.clientCommands` (our VS
Code extension and Neovim plugin open `harn-state:` documents and diff proposals themselves).
For any other client "open" becomes `harnState.server.open`, which the server runs with
`window/showDocument` when the client can show documents and read `harn-state:` ones; a lens it
cannot run keeps its title with no command id (shown, nothing to run), and "compare" (a diff only
our clients draw) is not offered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsprotocol import types

from harn_ls import contract as P
from harn_ls.lsp.capabilities import ClientProfile
from harn_ls.lsp.project_links import argument_for, link_root
from harn_ls.render import UriError, parse_uri
from harn_ls.render import view_commands as V
from harn_ls.render.proposal_choices import ProposalChoice

COMMAND_IDS = {V.NONE: "", V.OPEN: P.CMD_OPEN, V.ACCEPT: P.CMD_ACCEPT, V.REJECT: P.CMD_REJECT, V.COMPARE: P.CMD_COMPARE,
               **{f"hitl:{verb}": cmd for verb, cmd in P.CMD_UI_HITL.items()}}
ACTION_KINDS = {V.ACCEPT: P.KIND_ACCEPT, V.REJECT: P.KIND_REJECT, V.COMPARE: P.KIND_COMPARE}
# "open" run by the server: window/showDocument of the harn-state: URI (lsp/commands.py)
CMD_SERVER_OPEN = "harnState.server.open"
# actions whose command the server runs (the rest are the client's own: open, compare, HITL forms)
SERVER_ACTIONS = frozenset({V.NONE, V.ACCEPT, V.REJECT})


def command_id(action: str, client: ClientProfile) -> str | None:
    """The id to send for a view action to this client: "" for a title only, None when it cannot be offered."""
    wire = COMMAND_IDS[action]
    if action in SERVER_ACTIONS or wire in client.client_commands:
        return wire
    if action == V.OPEN:
        return CMD_SERVER_OPEN if client.show_document and client.text_document_content else ""
    return None  # compare, the HITL answers: a diff or a form only our clients draw


def to_command(cmd: V.ViewCommand, client: ClientProfile, root: str | None = None) -> types.Command:
    """A lens's command (a title only when the client could run none). `root`: the project the
    command is about, named in its arguments (several projects; project_links.py)."""
    wire = command_id(cmd.action, client)
    if not wire:
        return types.Command(title=cmd.title, command="")
    return types.Command(title=cmd.title, command=wire,
                         arguments=[argument_for(P.command_argument(a), root) for a in cmd.arguments] or None)


def to_code_action(choice: ProposalChoice, client: ClientProfile, root: str | None = None) -> types.CodeAction | None:
    """A code action, or None when the client cannot run its command."""
    if not command_id(choice.command.action, client):
        return None
    return types.CodeAction(title=choice.title, kind=ACTION_KINDS[choice.action],
                            command=to_command(choice.command, client, root), data=argument_for(dict(choice.data), root))


def line_range(line: int, start: int = 0, end: int = 0) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start), end=types.Position(line=line, character=end))


async def on_state_document(ls, uri: str, kind: str, fn: Callable[[Any, str, str | None, str | None], list]) -> list:
    """`fn(ws, name, skill_root, link_root)` on the worker thread of the project holding the
    `harn-state:/<kind>/<name>.md` document at `uri` (a proposal, a HITL request); [] for any other
    URI. `link_root`: the root its commands name (project_links.py)."""
    try:
        target = parse_uri(uri)
    except UriError:
        return []
    if target.kind != kind:
        return []
    proj = await ls.project_holding(target.kind, target.name, target.query.get("root"))
    if proj is None or proj.ws is None:
        return []
    skill_root, root = ls.settings_for(proj).skillRoot, link_root(ls, proj)
    return await proj.run(lambda: fn(proj.ws, target.name, skill_root, root))
