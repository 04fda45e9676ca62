"""Resume an escalation through Harn's own CLI (harn-formats §N.2).

harn-ls never writes Harn's event log itself. For an escalation it runs
`harn orchestrator resume <request_id> --reviewer <name> --config <root>/harn.toml
--state-dir <dir> --json` (argument list, no shell, project root as cwd), where `<dir>`
is the folder that holds the event log the request lives in, so Harn appends to the
very file the waiting VM polls. `--config`: Harn's `load_local_runtime` loads the
manifest first (default `harn.toml` resolved against the working folder, or
`$HARN_ORCHESTRATOR_MANIFEST`) and refuses without one; naming the project's own
keeps a manifest variable of the user's shell from pointing Harn at another project. Approvals and questions
are refused: Harn's CLI would record a denial or a null answer (§P.2); their documents say how to answer instead.
"""

from __future__ import annotations

import os
import re

from harn_ls.actions import ActionFailed
from harn_ls.actions.probes import resolve_harn
from harn_ls.formats.hitl.responses import clean_reviewer
from harn_ls.util.message_text import quote

_ESCALATION_ID = re.compile(r"hitl_escalation_[A-Za-z0-9_.-]{1,200}")
RESUME_TIMEOUT_S = 60.0


def resume_argv(ws, request_id: str, harn_path: str, reviewer: str, reason: str = "") -> tuple[list[str], object]:
    """Validate and build the argv. ActionFailed with a user-facing message when not possible."""
    if not isinstance(request_id, str) or not _ESCALATION_ID.fullmatch(request_id):
        raise ActionFailed(f"{quote(request_id, 80)} is not an escalation request id (hitl_escalation_…); "
                           "Harn's CLI can only answer escalations — approvals and questions need harn.hitl.respond")
    found = ws.event_logs.request(request_id)
    if found is None:
        raise ActionFailed(f"no escalation {quote(request_id)} in this project's event logs")
    req, view = found
    if not req.is_waiting:
        raise ActionFailed(f"escalation {quote(request_id)} is already {quote(req.state)}")
    if view.loc.backend != "sqlite":
        raise ActionFailed("this request lives in a file-backend event log; `harn orchestrator resume` appends to "
                           "SQLite, and two writers on a file log can duplicate ids — answer it from the host instead")
    reviewer = clean_reviewer(reviewer) or ""
    if not reviewer or reviewer.startswith("-"):  # (argv: a leading dash would read as an option)
        raise ActionFailed("set harnState.hitl.reviewer to your name (the reviewer Harn records)")
    argv = [resolve_harn(harn_path), "orchestrator", "resume", request_id, "--reviewer", reviewer,
            "--config", os.path.join(ws.root, "harn.toml"), "--state-dir", os.path.abspath(view.loc.state_dir), "--json"]
    reason = (reason or "").strip()
    if reason:
        argv += ["--reason", reason[:2000]]
    return argv, view


def resume_env(root: str, view, base_env: dict[str, str]) -> dict[str, str]:
    """Harn's environment for the resume: harn-ls's (with harnState.harnEnv), and the log's own path in
    HARN_EVENT_LOG_SQLITE_PATH, absolute, so Harn appends to the file the request lives in even when it
    is not `<state-dir>/events.sqlite` (the orchestrator resolves that variable before its default)."""
    # start-up: the answer writer (and sqlite3) load with the first resume
    from harn_ls.actions.hitl.answer import check_target

    env = dict(base_env)
    # the log's real path, inside the project (or the state dir the user's HARN_STATE_DIR named) as the
    # answer writer checks it: a log swapped for a link since it was read is refused, not handed to Harn
    env["HARN_EVENT_LOG_SQLITE_PATH"] = check_target(root, view.loc.backend, view.loc.path, view.loc.state_dir)
    env.pop("HARN_EVENT_LOG_BACKEND", None)  # resume appends to SQLite (the request lives in one)
    return env


MAX_HARN_ERROR = 2000


def harn_error_text(stderr: str, stdout: str = "") -> str:
    """Harn's own words when it refuses: its `error: …` lines (main.rs prints `error: {error}`), else
    the whole stderr, else stdout; control characters dropped, capped."""
    lines = [ln.rstrip() for ln in (stderr or "").splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith("error")] or lines or \
        [ln.rstrip() for ln in (stdout or "").splitlines() if ln.strip()]
    text = "\n".join(picked).strip() or "(no message)"
    text = "".join(c for c in text if c == "\n" or c == "\t" or ord(c) >= 32)
    return text if len(text) <= MAX_HARN_ERROR else text[:MAX_HARN_ERROR] + "…"

