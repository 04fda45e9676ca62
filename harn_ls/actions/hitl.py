"""Resume an escalation through Harn's own CLI (harn-formats §N.2).

harn-ls never writes Harn's event log itself. For an escalation it runs
`harn orchestrator resume <request_id> --reviewer <name> --state-dir <dir> --json`
(argument list, no shell, project root as cwd), where `<dir>` is the folder that
holds the event log the request lives in, so Harn appends to the very file the
waiting VM polls. Approvals and questions are refused: Harn's CLI would record a
denial or a null answer (§P.2); their documents say how to answer instead.
"""

from __future__ import annotations

import re

from harn_ls.actions import ActionFailed
from harn_ls.actions.probes import resolve_harn
from harn_ls.render.message_text import quote

_ESCALATION_ID = re.compile(r"hitl_escalation_[A-Za-z0-9_.-]{1,200}")
RESUME_TIMEOUT_S = 60.0


def resume_argv(ws, request_id: str, harn_path: str, reviewer: str, reason: str = "") -> tuple[list[str], object]:
    """Validate and build the argv. ActionFailed with a user-facing message when not possible."""
    if not isinstance(request_id, str) or not _ESCALATION_ID.fullmatch(request_id):
        raise ActionFailed(f"{quote(request_id, 80)} is not an escalation request id (hitl_escalation_…); "
                           "Harn's CLI can only answer escalations — approvals and questions need harn.hitl.respond")
    found = ws.extra.request(request_id)
    if found is None:
        raise ActionFailed(f"no escalation {quote(request_id)} in this project's event logs")
    req, view = found
    if not req.is_waiting:
        raise ActionFailed(f"escalation {quote(request_id)} is already {quote(req.state)}")
    if view.loc.backend != "sqlite":
        raise ActionFailed("this request lives in a file-backend event log; `harn orchestrator resume` appends to "
                           "SQLite, and two writers on a file log can duplicate ids — answer it from the host instead")
    reviewer = (reviewer or "").strip()
    if not reviewer or reviewer.startswith("-") or len(reviewer) > 200 or any(ord(c) < 32 for c in reviewer):
        raise ActionFailed("set harnState.hitl.reviewer to your name (the reviewer Harn records)")
    argv = [resolve_harn(harn_path), "orchestrator", "resume", request_id, "--reviewer", reviewer,
            "--state-dir", view.loc.state_dir, "--json"]
    reason = (reason or "").strip()
    if reason:
        argv += ["--reason", reason[:2000]]
    return argv, view

