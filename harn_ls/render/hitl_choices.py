"""Approve / Deny / Answer… / Accept / Decline / Finish for a HITL request, as plain data: lenses at the
top of its document (harn-state:/hitl/<id>.md) and the tree item's menu (issue 33). Each runs a client
command that asks for the reason or the answer, then the server's `harnState.answerHitl`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harn_ls import contract as C
from harn_ls.formats.hitl.responses import actions_for, choice_labels
from harn_ls.render import view_commands as V
from harn_ls.render.limits import LABEL_BYTES, one_line

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace

TITLES = {"approve": ("Approve", V.HITL_APPROVE), "deny": ("Deny…", V.HITL_DENY), "answer": ("Answer…", V.HITL_ANSWER),
          "accept": ("Accept", V.HITL_ACCEPT), "decline": ("Decline…", V.HITL_DECLINE),
          "finish": ("Finish the answer already given", V.HITL_FINISH)}


def hitl_lenses(ws: Workspace, request_id: str) -> list[V.ViewCommand]:
    found = ws.event_logs.request(request_id)
    if found is None:
        return []
    req, view = found
    if view.loc.backend != "sqlite":
        return [V.ViewCommand("file-backend log: answer from the host running the agent", V.NONE)]
    choices = [one_line(c, LABEL_BYTES) for c in choice_labels(req)] if req.kind == "question" else None
    arg = C.HitlFormArgs(request_id=req.request_id, kind=req.kind, choices=choices)
    return [V.ViewCommand(TITLES[a][0], TITLES[a][1], [arg]) for a in actions_for(req)]
