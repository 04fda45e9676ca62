"""`workspace/executeCommand` handlers: thin wrappers over `harn_ls.actions`.

One path for every command: the JSON argument is parsed once into its contract class (`parse_args`
refuses a malformed one with a message naming the field), the handler takes that instance and
answers a contract result class, and `_register_typed` puts it on the wire (camelCase) once. Reads
of the model run on the project's worker thread.

A command that refuses or fails answers a JSON-RPC error, as LSP asks, so every client shows it:
-32803 (RequestFailed) with the failure's message, its contract payload ({ok: false, message,
...}) as the error's `data`; a malformed argument -32602 (InvalidParams); a cancelled probe -32800
(RequestCancelled). Our VS Code extension reads `data` and shows it as before (src/client.ts)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from attrs import AttrsInstance
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path

from harn_ls import contract as C
from harn_ls.actions import ActionFailed
from harn_ls.actions.checkpoints import forget_stage as do_forget
from harn_ls.actions.facts import invalidate_fact
from harn_ls.actions.proposals import accept_proposal, reject_proposal
from harn_ls.lsp.messages import command_failed, defuse  # (defuse: capped, then made inert: the one message defuser)
from harn_ls.lsp.probe import run_probe_command
from harn_ls.lsp.progress import with_progress
from harn_ls.lsp.view_types import CMD_SERVER_OPEN
from harn_ls.render import make_uri
from harn_ls.util.message_text import quote
from harn_ls.util.portable import os_user
from harn_ls.util.progress import WorkProgress

log = logging.getLogger(__name__)


NO_PROJECT = C.Failure("no Harn project is open")
REQUEST_FAILED = -32803  # LSP's RequestFailed: known method, valid params, and it failed
REQUEST_CANCELLED = -32800
INVALID_PARAMS = -32602
_FAILURES = (C.Failure, C.ResumeFailure, C.ProbeCancelled)
R = TypeVar("R", bound=AttrsInstance)


class CommandFailed(JsonRpcException):
    """A command's refusal or failure, sent as the error of its response (pygls sends a
    JsonRpcException raised by a handler as the request's error, with this code, message, data)."""


def failed(result: Any, code: int = REQUEST_FAILED) -> CommandFailed:
    return CommandFailed(message=result.message, code=code, data=C.to_wire(result))


class _QuietFailures(logging.Filter):
    """pygls logs every error a handler raises with its traceback; a refusal is no server fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], CommandFailed))


logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietFailures())


async def _run_action(ls, proj, result: type[R], fn: Callable[..., dict[str, Any]], *fn_args: Any, done: str,
                      **fn_kwargs: Any) -> R | C.Failure:
    """Run an action on the project thread, apply what it wrote, and tell the user how it went.
    Returns its result as the contract's `result` class, or a Failure (already shown). (The actions
    answer dicts: the CLI prints them as JSON, and their tests read them.)"""
    if proj is None or proj.ws is None:
        return NO_PROJECT
    try:
        out = await proj.run(lambda: fn(proj.ws, *fn_args, **fn_kwargs))
    except ActionFailed as exc:
        return command_failed(ls, str(exc))
    written = [p for p in out.get("written", []) if isinstance(p, str)]
    await proj.apply_now(written)
    ls.show(out.get("message", done))
    return C.from_fields(result, out)


async def server_open(ls, *args) -> None:
    """`harnState.server.open <harn-state: URI>`: "open" run by the server for a client that runs no
    command of its own, as `window/showDocument` (lsp/view_types.py sends it only to a client that
    can show documents and read harn-state: ones)."""
    uri = args[0] if len(args) == 1 and isinstance(args[0], str) else None
    if uri is None or not uri.startswith(C.SCHEME + ":"):
        raise failed(C.Failure("harnState.server.open takes one harn-state: URI"), INVALID_PARAMS)
    if not ls.client.show_document:
        raise failed(C.Failure(f"this client cannot show documents (window/showDocument); open {quote(uri)} yourself"))
    result = await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
    if not getattr(result, "success", False):
        raise failed(C.Failure(f"the client did not show {quote(uri)}"))


def _register_typed(server, command: str, fn: Callable[[Any, Any], Awaitable[Any]]) -> None:
    """Register `fn(ls, args)` for `command`: the argument is parsed into its contract class
    first (a malformed one answers a Failure naming the field); the result goes out camelCase."""
    # pygls spreads `arguments` over the parameters: `*args` takes none, one or several
    # (a fixed parameter would make a wrong count an InvalidParams error, not a Failure)
    async def handler(ls, *args):
        try:
            parsed = C.parse_args(command, args)
        except C.ArgumentError as exc:
            raise failed(C.Failure(defuse(str(exc))), INVALID_PARAMS) from None
        result = await fn(ls, parsed)
        if isinstance(result, _FAILURES):
            raise failed(result, REQUEST_CANCELLED if isinstance(result, C.ProbeCancelled) else REQUEST_FAILED)
        return C.to_wire(result)

    handler.__name__ = fn.__name__
    server.command(command)(handler)


async def accept(ls, a: C.AcceptArgs):
    proj = await ls.project_holding("proposals", a.id, a.root)
    result = await _run_action(ls, proj, C.AcceptResult, accept_proposal, a.id,
                               skill_root=a.skill_root or ls.settings_for(proj).skillRoot, done="accepted")
    if isinstance(result, C.AcceptResult) and result.skill_path and ls.client.show_document:
        ls.spawn(ls.window_show_document_async(types.ShowDocumentParams(uri=from_fs_path(result.skill_path),
                                                                        take_focus=True)), "showDocument")
    return result


async def reject(ls, a: C.RejectArgs):
    proj = await ls.project_holding("proposals", a.id, a.root)
    return await _run_action(ls, proj, C.RejectResult, reject_proposal, a.id, days=a.days, done="rejected")


async def invalidate(ls, a: C.InvalidateFactArgs):
    proj = await ls.project_holding("facts", a.id, a.root)
    return await _run_action(ls, proj, C.InvalidateFactResult, invalidate_fact, a.id, done="fact invalidated")


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
    return await _run_action(ls, proj, C.ForgetStageResult, do_forget, a.pipeline, a.key, expect_mtime=mtime,
                             done=f"forgot stage {quote(a.key)}")


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

    work = WorkProgress("Harn: migrating pattern learning")
    work.phase("legacy streams", 0, 1.0, counted=False)
    return await with_progress(ls, proj.root if proj is not None else "", work,
                               _run_action(ls, proj, C.MigrateResult, migrate_pattern_learning,
                                           done="pattern learning migrated"))


async def recall(ls, a: C.RecallArgs):
    return C.RecallResult(uri=make_uri("recall", q=a.query, ns=a.namespace or ""))


def _loaded_summary(proj: Any) -> Callable[[], str]:
    return lambda: proj.loaded_summary


async def rescan(ls, a: C.RescanArgs):
    counts = {}
    for proj in list(ls.projects.values()):
        work = WorkProgress(f"Harn: rescanning {os.path.basename(proj.root) or proj.root}")
        await with_progress(ls, proj.root, work, proj.rescan(work), summary=_loaded_summary(proj))
        if proj.ws is not None:
            counts[proj.root] = await proj.run(lambda p=proj: p.ws.counts())
    return C.RescanResult(counts=counts)


def register(server) -> None:
    for command, fn in ((C.CMD_ACCEPT, accept), (C.CMD_REJECT, reject), (C.CMD_INVALIDATE_FACT, invalidate),
                        (C.CMD_FORGET_STAGE, forget_stage), (C.CMD_MIGRATE, migrate), (C.CMD_RECALL, recall),
                        (C.CMD_RESCAN, rescan), (C.CMD_PROBE, run_probe_command), (C.CMD_RESUME, resume_escalation_command),
                        (C.CMD_ANSWER_HITL, answer_hitl_command)):
        _register_typed(server, command, fn)
    server.command(CMD_SERVER_OPEN)(server_open)


RESUME_NOT_ALLOWED = ("Resuming an escalation runs the harn binary; this server listens on TCP and was not "
                      "started with --allow-probes.")
UNTRUSTED_RESUME = ("Resuming an escalation runs the harn binary; this workspace is not trusted. "
                    "Trust it, or run `harn orchestrator resume` yourself.")


async def _project_with_request(ls, rid: str):
    """The project whose event logs hold request `rid` (None when none does)."""
    proj = await ls.project_holding("hitl", rid)
    ws = proj.ws if proj is not None else None
    if proj is None or ws is None or not await proj.run(lambda: ws.event_logs.request(rid) is not None):
        return None
    return proj


def _reviewer(ls) -> str:
    return ls.settings.hitl.reviewer.strip() or os_user()


async def resume_escalation_command(ls, a: C.ResumeArgs):
    """`harn orchestrator resume` for one escalation (§N.2): trusted workspaces only, argv only, the
    --state-dir of the log the request lives in; the result shows when Harn's response event lands."""
    if not ls.probes_allowed:  # serve --tcp without --allow-probes: no program runs for a client
        return command_failed(ls, RESUME_NOT_ALLOWED, types.MessageType.Warning)
    if not ls.trusted:
        return command_failed(ls, UNTRUSTED_RESUME, types.MessageType.Warning)
    rid = a.request_id
    if not rid:
        return C.Failure("resumeEscalation needs {requestId}: requestId is empty")
    proj = await _project_with_request(ls, rid)
    if proj is None:
        return C.Failure(f"no escalation {quote(rid)} in the open projects")
    reviewer = _reviewer(ls)
    # start-up: the resume planner and process runner (with harn check's output parser, ~20 ms) load at first use
    from harn_ls.actions.hitl.resume import RESUME_TIMEOUT_S, harn_error_text, resume_argv, resume_env
    from harn_ls.actions.probes import run_process

    harn = ls.harn_program(proj)  # read on the loop, which owns the folders and their settings
    try:
        argv, view = await proj.run(lambda: resume_argv(proj.ws, rid, harn, reviewer, a.reason))
        result = await run_process(argv, cwd=proj.root, timeout=RESUME_TIMEOUT_S,
                                   env=resume_env(proj.root, view, ls.harn_env(ls.settings_for(proj))[0]))
    except ActionFailed as exc:
        return command_failed(ls, str(exc))
    await proj.apply_now([view.path, view.path + "-wal"])
    if result.timed_out or result.exit_code != 0:
        err = harn_error_text(result.stderr, result.stdout)
        how = "timed out" if result.timed_out else f"exit {result.exit_code:d}"
        msg = f"harn orchestrator resume failed ({how}): {quote(err, 500)}"
        ls.show(msg, types.MessageType.Error)
        return C.ResumeFailure(message=msg, argv=argv[1:])
    state = await proj.run(lambda: (proj.ws.event_logs.request(rid) or (None,))[0])
    msg = f"escalation {quote(rid)} resumed as {quote(reviewer)}" + (f" — now {quote(state.state)}" if state is not None else "")
    ls.show(msg)
    return C.ResumeResult(message=msg, argv=argv[1:], state=state.state if state is not None else None)


UNTRUSTED_ANSWER = ("Answering a HITL request appends to the project's event log; this workspace is not trusted. "
                    "Trust it to answer from the editor.")
async def answer_hitl_command(ls, a: C.AnswerHitlArgs):
    """Approve / deny / answer / accept / decline / finish one HITL request (issue 33): appended as Harn's
    `append_hitl_response` to the log the waiting run polls (harn_ls.actions.hitl.answer). Trusted
    workspaces only; the reviewer is the harnState.hitl.reviewer setting (else the OS user)."""
    if not ls.trusted:
        return command_failed(ls, UNTRUSTED_ANSWER, types.MessageType.Warning)
    rid = a.request_id
    if not rid:
        return C.Failure("answerHitl needs {requestId}: requestId is empty")
    # start-up: the writer loads at first use
    from harn_ls.actions.hitl import answer as HA
    from harn_ls.formats.hitl.responses import choices

    if a.action not in (*HA.ACTIONS, "finish"):
        return C.Failure("answerHitl: unknown action; one of " + ", ".join((*HA.ACTIONS, "finish")))
    proj = await _project_with_request(ls, rid)
    if proj is None:
        return command_failed(ls, f"No HITL request {quote(rid, 120)} in the open projects.")
    reviewer = _reviewer(ls)

    def run():
        ws = proj.ws
        if a.action == "finish":
            return HA.finish_in(ws, rid)
        value, text = HA.H.MISSING, None
        if a.action == "answer":
            if a.choice is not None:
                req = HA.locate(ws, rid)[0]
                opts = choices(req.payload.get("schema"))
                if not 0 <= a.choice < len(opts):
                    raise HA.AnswerRefused(f"choice {a.choice:d} is not one of the question's {len(opts)} choices")
                value = opts[a.choice]
            else:
                text = a.answer
        return HA.answer_in(ws, rid, a.action, reviewer=reviewer, reason=a.reason, answer_text=text, answer_value=value)

    try:
        res = await proj.run(run)
    except ActionFailed as exc:
        return command_failed(ls, "Not written: " + str(exc))
    finally:
        found = await proj.run(lambda: proj.ws.event_logs.request(rid))
        if found is not None:
            await proj.apply_now([found[1].path, found[1].path + "-wal"])
    state = await proj.run(lambda: (proj.ws.event_logs.request(rid) or (None,))[0])
    rel = os.path.relpath(res.log_path, proj.root)
    msg = (f"{quote(res.outcome)} as {quote(reviewer)}: {len(res.written)} event(s) appended to "
           f"{quote(rel)} — direct append to the log the run polls (no harn.hitl.respond host is reachable).")
    ls.show(msg)
    return C.AnswerHitlResult(message=msg, outcome=res.outcome, path=res.path_used, reviewer=reviewer or "",
                              written=[C.WrittenEvent(w.topic, w.event_id, w.kind) for w in res.written],
                              state=state.state if state is not None else None)
