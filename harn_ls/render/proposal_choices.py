"""Accept / Reject / Compare for a pending skill proposal, as plain data: shown as code actions
(on the proposal document and on its pending line in events.jsonl) and as lenses on the document.
Their arguments are the contract's classes (AcceptArgs, RejectArgs, CompareArgs), put on the wire
by harn_ls/lsp (contract.command_argument)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harn_ls import contract as C
from harn_ls.model.accept_plan import planned_files
from harn_ls.render.limits import LABEL_BYTES, one_line
from harn_ls.render.shown_path import shown_path
from harn_ls.render.uri import make_uri
from harn_ls.render.view_commands import ACCEPT, COMPARE, REJECT, ViewCommand
from harn_ls.util.refusal import ActionFailed

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace

REJECT_DAYS = 14


@dataclass(frozen=True)
class ProposalChoice:
    """One choice offered on a proposal (Accept, Reject, Compare) and its command."""

    title: str  # the code action's title
    command: ViewCommand
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def action(self) -> str:
        return self.command.action


def proposal_choices(ws: Workspace, proposal_id: str, skill_root: str | None) -> list[ProposalChoice]:
    """Compare (when Accept would overwrite a different file) or Accept, then Reject; [] when the
    proposal is not pending."""
    prop = ws.proposal(proposal_id)
    if prop is None:
        return []
    out = []
    try:
        plan = planned_files(ws, prop, skill_root=skill_root)
        conflict = next((f for f in plan.files if f.conflict), None)
    except ActionFailed:
        plan, conflict = None, None
    if conflict is not None:
        rel = shown_path(ws, conflict.path)  # (inside the project: planned_files refuses any other path)
        # `uri`: the server's raw text of what Accept would write (the client diffs it as it is; it
        # never parses the rendered document)
        arg = C.CompareArgs(id=proposal_id, path=conflict.path,
                            uri=make_uri("proposals", proposal_id, file=rel))
        out.append(ProposalChoice(f"Compare with existing {rel}", ViewCommand("Compare with existing", COMPARE, [arg]),
                                  {"id": proposal_id}))
    elif plan is not None:
        title = f"Accept skill {prop.name}"
        out.append(ProposalChoice(title, ViewCommand(title, ACCEPT, [C.AcceptArgs(id=proposal_id)]), {"id": proposal_id}))
    title = f"Reject for {REJECT_DAYS} days"
    out.append(ProposalChoice(title, ViewCommand(title, REJECT, [C.RejectArgs(id=proposal_id, days=REJECT_DAYS)]),
                              {"id": proposal_id}))
    return out


def proposal_lenses(choices: list[ProposalChoice]) -> list[ViewCommand]:
    """The same choices as lenses at the top of the proposal document: one-line titles, capped."""
    return [ViewCommand(one_line(c.command.title, LABEL_BYTES), c.command.action, c.command.arguments) for c in choices]


def proposal_at_line(ws: Workspace, events_path: str, line: int) -> str | None:
    """The pending proposal whose store event is on this 1-based line of the pattern log."""
    if ws.pattern is None:
        return None
    for prop in ws.pattern.pending:
        if prop.record is not None and prop.record.line_no == line and \
                os.path.samefile(ws.namespace_path("project/pattern-learning") or events_path, events_path):
            return prop.id
    return None
