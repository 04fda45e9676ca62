"""`workspace/executeCommand` handlers: thin wrappers over `harn_ls.actions`."""

from __future__ import annotations

import logging
import os
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls.lsp import protocol as P
from harn_ls.render import make_uri

log = logging.getLogger(__name__)


def _arg(args: Any) -> dict:
    """Commands take one object argument; accept it bare or as a namedtuple.

    Handlers are declared `(ls, *args)`: pygls 2 spreads `arguments` over the handler's
    parameters, so a fixed `args` parameter made a call with no arguments (or two) an
    InvalidParams error instead of `{ok: false, message}`."""
    if isinstance(args, (list, tuple)) and args and not hasattr(args, "_asdict"):
        args = args[0]
    if hasattr(args, "_asdict"):
        args = args._asdict()
    return args if isinstance(args, dict) else {}


async def _run_action(ls, fn, *fn_args, _where: tuple = ("", "", None), _done: str = "done", **fn_kwargs) -> dict:
    """Run an action on the project thread, apply what it wrote, and tell the user how it went."""
    from harn_ls.actions import ActionFailed

    proj = await ls.project_holding(*_where)
    if proj is None or proj.ws is None:
        return {"ok": False, "message": "no Harn project is open"}
    try:
        result = await proj.run(lambda: fn(proj.ws, *fn_args, **fn_kwargs))
    except ActionFailed as exc:
        ls.show(str(exc), types.MessageType.Error)
        return {"ok": False, "message": str(exc)}
    written = [p for p in result.get("written", []) if isinstance(p, str)]
    await proj.apply_now(written + result.get("touched", []))
    ls.show(result.get("message", _done))
    return {"ok": True, **result}


def register(server) -> None:
    @server.command(P.CMD_ACCEPT)
    async def accept(ls, *args):
        from harn_ls.actions.proposals import accept_proposal

        a = _arg(args)
        if not a.get("id"):
            return {"ok": False, "message": "acceptProposal needs {id}"}
        result = await _run_action(ls, accept_proposal, str(a["id"]), skill_root=a.get("skillRoot") or ls.settings.skillRoot,
                                   _where=("proposals", str(a["id"]), a.get("root")), _done="accepted")
        if result.get("ok"):
            skill = result.get("skill_path")
            if skill and ls.supports("window.show_document"):
                ls.spawn(ls.window_show_document_async(types.ShowDocumentParams(uri=from_fs_path(skill), take_focus=True)),
                         "showDocument")
        return result

    @server.command(P.CMD_REJECT)
    async def reject(ls, *args):
        from harn_ls.actions.proposals import reject_proposal

        a = _arg(args)
        if not a.get("id"):
            return {"ok": False, "message": "rejectProposal needs {id}"}
        try:
            days = int(a.get("days", 14))
        except (TypeError, ValueError):
            return {"ok": False, "message": "days must be a whole number"}
        result = await _run_action(ls, reject_proposal, str(a["id"]), days=days,
                                   _where=("proposals", str(a["id"]), a.get("root")), _done="rejected")
        return result

    @server.command(P.CMD_INVALIDATE_FACT)
    async def invalidate(ls, *args):
        from harn_ls.actions.facts import invalidate_fact

        a = _arg(args)
        if not a.get("id"):
            return {"ok": False, "message": "invalidateFact needs {id}"}
        result = await _run_action(ls, invalidate_fact, str(a["id"]), _where=("facts", str(a["id"]), a.get("root")),
                                   _done="fact invalidated")
        return result

    @server.command(P.CMD_FORGET_STAGE)
    async def forget_stage(ls, *args):
        from harn_ls.actions.checkpoints import forget_stage as do_forget

        a = _arg(args)
        pipeline, key = a.get("pipeline"), a.get("key")
        if not pipeline or not isinstance(pipeline, str) or key is None:
            return {"ok": False, "message": "forgetCheckpointStage needs {pipeline, key}"}
        proj = await ls.project_holding("checkpoints", str(pipeline), a.get("root"))
        if proj is None or proj.ws is None:
            return {"ok": False, "message": "no Harn project is open"}
        mtime = await proj.run(lambda: os.stat(proj.ws.checkpoints[pipeline].path).st_mtime if pipeline in proj.ws.checkpoints else None)
        # The action takes Harn's checkpoint lock (waiting up to 5 s, as Harn does) and refuses
        # with a clear message while a pipeline holds it: no guessing from modification times.
        result = await _run_action(ls, do_forget, str(pipeline), str(key), expect_mtime=mtime,
                                   _where=("checkpoints", str(pipeline), a.get("root")), _done=f"forgot stage {key}")
        return result

    @server.command(P.CMD_MIGRATE)
    async def migrate(ls, *args):
        from harn_ls.actions.migrate import migrate_pattern_learning

        a = _arg(args)
        proj = next(iter([p for p in list(ls.projects.values()) if p.ws is not None
                          and await p.run(lambda p=p: p.ws.migration_needed)]), None)
        result = await _run_action(ls, migrate_pattern_learning,
                                   _where=("", "", a.get("root") or (proj.folder_path if proj else None)),
                                   _done="pattern learning migrated")
        return result

    @server.command(P.CMD_RECALL)
    async def recall(ls, *args):
        a = _arg(args)
        query = str(a.get("query", ""))
        ns = a.get("namespace") or None
        return {"uri": make_uri("recall", q=query, ns=ns or "")}

    @server.command(P.CMD_RESCAN)
    async def rescan(ls, *args):
        for proj in ls.projects.values():
            await proj.rescan()
        return {"ok": True, "counts": {p.root: await p.run(lambda p=p: p.ws.counts())
                                       for p in list(ls.projects.values()) if p.ws is not None}}

    @server.command(P.CMD_PROBE)
    async def probe(ls, *args):
        from harn_ls.lsp.probe import run_probe_command

        return await run_probe_command(ls, _arg(args))

    @server.command(P.CMD_RESUME)
    async def resume(ls, *args):
        return await resume_escalation_command(ls, _arg(args))


RESUME_NOT_ALLOWED = ("Resuming an escalation runs the harn binary; this server listens on TCP and was not "
                      "started with --allow-probes.")
UNTRUSTED_RESUME = ("Resuming an escalation runs the harn binary; this workspace is not trusted. "
                    "Trust it, or run `harn orchestrator resume` yourself.")


async def resume_escalation_command(ls, a: dict) -> dict:
    """`harn orchestrator resume` for one escalation (§N.2): trusted workspaces only, argv only, the
    --state-dir of the log the request lives in; the result shows when Harn's response event lands."""
    import getpass

    from harn_ls.actions import ActionFailed
    from harn_ls.actions.hitl import RESUME_TIMEOUT_S, resume_argv
    from harn_ls.actions.probes import run_process

    if not ls.probes_allowed:  # serve --tcp without --allow-probes: no program runs for a client
        ls.show(RESUME_NOT_ALLOWED, types.MessageType.Warning)
        return {"ok": False, "message": RESUME_NOT_ALLOWED}
    if not ls.trusted:
        ls.show(UNTRUSTED_RESUME, types.MessageType.Warning)
        return {"ok": False, "message": UNTRUSTED_RESUME}
    rid = a.get("requestId") or a.get("id")
    if not isinstance(rid, str) or not rid:
        return {"ok": False, "message": "resumeEscalation needs {requestId}"}
    proj = next(iter([p for p in list(ls.projects.values()) if p.ws is not None
                      and await p.run(lambda p=p: p.ws.extra.request(rid) is not None)]), None)
    if proj is None:
        return {"ok": False, "message": f"no escalation {rid} in the open projects"}
    reviewer = ls.settings.hitl.reviewer.strip()
    if not reviewer:
        try:
            reviewer = getpass.getuser()
        except Exception:
            reviewer = ""
    reason = a.get("reason") if isinstance(a.get("reason"), str) else ""
    try:
        argv, view = await proj.run(lambda: resume_argv(proj.ws, rid, ls.harn_program(), reviewer, reason))
        result = await run_process(argv, cwd=proj.root, timeout=RESUME_TIMEOUT_S)
    except ActionFailed as exc:
        ls.show(str(exc), types.MessageType.Error)
        return {"ok": False, "message": str(exc)}
    await proj.apply_now([view.path, view.path + "-wal"])
    if result.timed_out or result.exit_code != 0:
        err = (result.stderr.strip().splitlines() or ["(no message)"])[-1][:500]
        msg = f"harn orchestrator resume failed ({'timed out' if result.timed_out else f'exit {result.exit_code}'}): {err}"
        ls.show(msg, types.MessageType.Error)
        return {"ok": False, "message": msg, "argv": argv[1:]}
    state = await proj.run(lambda: (proj.ws.extra.request(rid) or (None,))[0])
    msg = f"escalation {rid} resumed as {reviewer}" + (f" — now {state.state}" if state is not None else "")
    ls.show(msg)
    return {"ok": True, "message": msg, "state": state.state if state is not None else None, "argv": argv[1:]}
