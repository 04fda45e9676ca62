"""`workspace/executeCommand` handlers: thin wrappers over `harn_ls.actions`.

Each handler takes its typed argument (harn_ls.contract: `parse_args` turns the JSON into it
and refuses a malformed one with a message naming the field) and answers a contract result
class, sent camelCase. Reads of the model run on the project's worker thread."""

from __future__ import annotations

import getpass
import logging
import os
from typing import Any, Awaitable, Callable

from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls import contract as C
from harn_ls.actions import ActionFailed
from harn_ls.actions.checkpoints import forget_stage as do_forget
from harn_ls.actions.facts import invalidate_fact
from harn_ls.actions.proposals import accept_proposal, reject_proposal
from harn_ls.lsp.probe import run_probe_command
from harn_ls.render import make_uri
from harn_ls.render.message_text import defuse, quote

log = logging.getLogger(__name__)


NO_PROJECT = C.Failure("no Harn project is open")


async def _run_action(ls, proj, fn: Callable[..., dict], *fn_args: Any, done: str, **fn_kwargs: Any) -> dict | C.Failure:
    """Run an action on the project thread, apply what it wrote, and tell the user how it went.
    Returns the action's result dict, or a Failure (already shown)."""
    if proj is None or proj.ws is None:
        return NO_PROJECT
    try:
        result = await proj.run(lambda: fn(proj.ws, *fn_args, **fn_kwargs))
    except ActionFailed as exc:
        ls.show(str(exc), types.MessageType.Error)
        return C.Failure(str(exc))
    written = [p for p in result.get("written", []) if isinstance(p, str)]
    await proj.apply_now(written)
    ls.show(result.get("message", done))
    return result


def _register_typed(server, command: str, fn: Callable[[Any, Any], Awaitable[Any]]) -> None:
    """Register `fn(ls, args)` for `command`: the argument is parsed into its contract class
    first (a malformed one answers a Failure naming the field); the result goes out camelCase."""
    # pygls spreads `arguments` over the parameters: `*args` takes none, one or several
    # (a fixed parameter would make a wrong count an InvalidParams error, not a Failure)
    async def handler(ls, *args):
        try:
            parsed = C.parse_args(command, args)
        except C.ArgumentError as exc:
            return C.to_wire(C.Failure(defuse(str(exc))))
        return C.to_wire(await fn(ls, parsed))

    handler.__name__ = fn.__name__
    server.command(command)(handler)


async def accept(ls, a: C.AcceptArgs):
    proj = await ls.project_holding("proposals", a.id, a.root)
    result = await _run_action(ls, proj, accept_proposal, a.id, skill_root=a.skill_root or ls.settings.skillRoot,
                               done="accepted")
    if isinstance(result, C.Failure):
        return result
    skill = result.get("skill_path")
    if skill and ls.supports("window.show_document"):
        ls.spawn(ls.window_show_document_async(types.ShowDocumentParams(uri=from_fs_path(skill), take_focus=True)),
                 "showDocument")
    return C.from_fields(C.AcceptResult, result)


async def reject(ls, a: C.RejectArgs):
    proj = await ls.project_holding("proposals", a.id, a.root)
    result = await _run_action(ls, proj, reject_proposal, a.id, days=a.days, done="rejected")
    return result if isinstance(result, C.Failure) else C.from_fields(C.RejectResult, result)


async def invalidate(ls, a: C.InvalidateFactArgs):
    proj = await ls.project_holding("facts", a.id, a.root)
    result = await _run_action(ls, proj, invalidate_fact, a.id, done="fact invalidated")
    return result if isinstance(result, C.Failure) else C.from_fields(C.InvalidateFactResult, result)


async def forget_stage(ls, a: C.ForgetStageArgs):
    proj = await ls.project_holding("checkpoints", a.pipeline, a.root)
    if proj is None or proj.ws is None:
        return NO_PROJECT

    def _mtime() -> float | None:
        cf = proj.ws.checkpoints.get(a.pipeline)
        return os.stat(cf.path).st_mtime if cf is not None else None

    mtime = await proj.run(_mtime)
    # The action takes Harn's checkpoint lock (waiting up to 5 s, as Harn does) and refuses
    # with a clear message while a pipeline holds it: no guessing from modification times.
    result = await _run_action(ls, proj, do_forget, a.pipeline, a.key, expect_mtime=mtime, done=f"forgot stage {quote(a.key)}")
    return result if isinstance(result, C.Failure) else C.from_fields(C.ForgetStageResult, result)


async def migrate(ls, a: C.MigrateArgs):
    proj = await ls.project_holding("", "", a.root) if a.root else None
    if proj is None:
        for candidate in list(ls.projects.values()):
            ws = candidate.ws
            if ws is not None and await candidate.run(lambda w=ws: w.migration_needed):
                proj = candidate
                break
        else:
            proj = ls.default_project()
    # start-up: the migration (and its legacy-stream readers) loads when a user asks for it
    from harn_ls.actions.migrate import migrate_pattern_learning

    result = await _run_action(ls, proj, migrate_pattern_learning, done="pattern learning migrated")
    return result if isinstance(result, C.Failure) else C.from_fields(C.MigrateResult, result)


async def recall(ls, a: C.RecallArgs):
    return C.RecallResult(uri=make_uri("recall", q=a.query, ns=a.namespace or ""))


async def rescan(ls, a: C.RescanArgs):
    counts = {}
    for proj in list(ls.projects.values()):
        await proj.rescan()
        if proj.ws is not None:
            counts[proj.root] = await proj.run(lambda p=proj: p.ws.counts())
    return C.RescanResult(counts=counts)


async def probe(ls, a: C.ProbeArgs):
    result = await run_probe_command(ls, C.to_wire(a))
    if result.get("ok"):
        return C.from_fields(C.ProbeResult, result, fact_id=result.get("factId"))
    if result.get("outcome") == "cancelled":
        return C.ProbeCancelled(message=result["message"])
    return C.Failure(result.get("message", "typecheck probe failed"))


def register(server) -> None:
    for command, fn in ((C.CMD_ACCEPT, accept), (C.CMD_REJECT, reject), (C.CMD_INVALIDATE_FACT, invalidate),
                        (C.CMD_FORGET_STAGE, forget_stage), (C.CMD_MIGRATE, migrate), (C.CMD_RECALL, recall),
                        (C.CMD_RESCAN, rescan), (C.CMD_PROBE, probe), (C.CMD_RESUME, resume_escalation_command)):
        _register_typed(server, command, fn)


RESUME_NOT_ALLOWED = ("Resuming an escalation runs the harn binary; this server listens on TCP and was not "
                      "started with --allow-probes.")
UNTRUSTED_RESUME = ("Resuming an escalation runs the harn binary; this workspace is not trusted. "
                    "Trust it, or run `harn orchestrator resume` yourself.")


async def _project_with_request(ls, rid: str):
    for proj in list(ls.projects.values()):
        ws = proj.ws
        if ws is not None and await proj.run(lambda w=ws: w.extra.request(rid) is not None):
            return proj
    return None


def _reviewer(ls) -> str:
    reviewer = ls.settings.hitl.reviewer.strip()
    if reviewer:
        return reviewer
    try:
        return getpass.getuser()
    except Exception:
        return ""


async def resume_escalation_command(ls, a: C.ResumeArgs):
    """`harn orchestrator resume` for one escalation (§N.2): trusted workspaces only, argv only, the
    --state-dir of the log the request lives in; the result shows when Harn's response event lands."""
    if not ls.probes_allowed:  # serve --tcp without --allow-probes: no program runs for a client
        ls.show(RESUME_NOT_ALLOWED, types.MessageType.Warning)
        return C.Failure(RESUME_NOT_ALLOWED)
    if not ls.trusted:
        ls.show(UNTRUSTED_RESUME, types.MessageType.Warning)
        return C.Failure(UNTRUSTED_RESUME)
    rid = a.request_id
    if not rid:
        return C.Failure("resumeEscalation needs {requestId}: requestId is empty")
    proj = await _project_with_request(ls, rid)
    if proj is None:
        return C.Failure(f"no escalation {quote(rid)} in the open projects")
    reviewer = _reviewer(ls)
    # start-up: the resume planner and process runner (with harn check's output parser, ~20 ms) load at first use
    from harn_ls.actions.hitl import RESUME_TIMEOUT_S, resume_argv
    from harn_ls.actions.probes import run_process

    try:
        argv, view = await proj.run(lambda: resume_argv(proj.ws, rid, ls.harn_program(), reviewer, a.reason))
        result = await run_process(argv, cwd=proj.root, timeout=RESUME_TIMEOUT_S)
    except ActionFailed as exc:
        ls.show(str(exc), types.MessageType.Error)
        return C.Failure(str(exc))
    await proj.apply_now([view.path, view.path + "-wal"])
    if result.timed_out or result.exit_code != 0:
        err = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        how = "timed out" if result.timed_out else f"exit {result.exit_code:d}"
        msg = f"harn orchestrator resume failed ({how}): {quote(err, 500)}"
        ls.show(msg, types.MessageType.Error)
        return C.ResumeFailure(message=msg, argv=argv[1:])
    state = await proj.run(lambda: (proj.ws.extra.request(rid) or (None,))[0])
    msg = f"escalation {quote(rid)} resumed as {quote(reviewer)}" + (f" — now {quote(state.state)}" if state is not None else "")
    ls.show(msg)
    return C.ResumeResult(message=msg, argv=argv[1:], state=state.state if state is not None else None)
