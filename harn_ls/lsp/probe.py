"""`harnState.probeTypecheck` (contract.ProbeArgs -> ProbeResult): run a typecheck probe on an editor selection.

The runner is `harn_ls.actions.probes`; this module adds what the editor
needs around it: the trust gate, work-done progress, cancellation, the
`harn-probe` diagnostics on the probed document, and keeping those
diagnostics honest while the document is edited.

Cancellation. pygls 2 runs `workspace/executeCommand` through a generator
builtin: a `$/cancelRequest` cancels only that builtin's bookkeeping future
(the client gets its "cancelled" response) and never the asyncio task of the
command handler. So the handler watches the server's own record of the
request (`ls.requests`, which sees every `$/cancelRequest` and the shutdown),
and the progress token's cancel future (`window/workDoneProgress/cancel`), and
cancels the probe sub-task, which kills harn's process group and removes the
temp file.

Diagnostics. Probe diagnostics are the `harn-probe` source of the server's
diagnostics registry (`ls.diagnostics`), which merges them with the state
problems of the same file; the probed range lives in `ls.probe_states[uri]`.
They are dropped when an edit touches the probed range (edits before it shift
them), when the probe is re-run on that document, and when the range's text no
longer matches what was probed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from harn_ls import contract as C
from harn_ls.actions import ActionFailed, uuid7
from harn_ls.lsp import messages
from harn_ls.lsp.file_uris import file_path
from harn_ls.util.message_text import quote
from harn_ls.util.text_positions import shift_position

if TYPE_CHECKING:
    from harn_ls.actions import probes as runner

log = logging.getLogger(__name__)

UNTRUSTED = ("Typecheck probes are disabled: this workspace is not trusted (they run the harn binary "
             "on your code). Trust the workspace to enable them.")
CANCELLED = "typecheck probe cancelled"
NOT_ALLOWED = ("Typecheck probes are disabled: this server listens on TCP and was not started with "
               "--allow-probes.")
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


@dataclass
class ProbeState:
    """A probe that ran on a document, kept to follow its range across edits."""

    range: runner.Range  # document range of the probed snippet (kept up to date across edits)
    snippet: str


def _runner():
    # start-up: the probe runner and the parser of `harn check` output (~20 ms) load at the first probe
    from harn_ls.actions import probes

    return probes


def to_lsp_diagnostic(d: runner.ProbeDiagnostic) -> types.Diagnostic:
    (sl, sc), (el, ec) = d.range
    message = d.message + (f"\nhelp: {d.help}" if d.help else "")
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=sl, character=sc), end=types.Position(line=el, character=ec)),
        message=message,
        severity=_SEVERITY.get(d.severity, types.DiagnosticSeverity.Error),
        code=d.code,
        source=_runner().SOURCE,
        data={"checkSource": d.check_source} if d.check_source else None,
    )


def _clear(ls, uri: str) -> bool:
    ls.probe_states.pop(uri, None)
    return ls.diagnostics.clear(_runner().SOURCE, uri)


# -- edits ---------------------------------------------------------------------------------


def _shift_diag(d: types.Diagnostic, cs, ce, text, encoding: str) -> types.Diagnostic:
    def _moved(p: types.Position) -> types.Position:
        nl, nc = shift_position((p.line, p.character), cs, ce, text, encoding)
        return types.Position(line=nl, character=nc)
    return attrs.evolve(d, range=types.Range(start=_moved(d.range.start), end=_moved(d.range.end)))


def apply_text_edits(ls, uri: str, changes, current_text: str | None) -> bool:
    """Track one didChange for the probed range; True when the diagnostics changed (the registry
    has published them)."""
    st = ls.probe_states.get(uri)
    if st is None:
        return False
    moved = False
    encoding = ls.position_encoding
    for ch in changes:
        rng = getattr(ch, "range", None)
        if rng is None:  # whole-document replacement: decided by the text check below
            continue
        cs, ce = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
        start, end = st.range
        if cs >= end:  # entirely after the probed code
            continue
        if ce <= start:  # entirely before: shift the range and its diagnostics
            st.range = (shift_position(start, cs, ce, ch.text, encoding), shift_position(end, cs, ce, ch.text, encoding))
            ls.diagnostics.set(_runner().SOURCE, uri, [_shift_diag(d, cs, ce, ch.text, encoding)
                                                     for d in ls.diagnostics.get(_runner().SOURCE, uri)])
            moved = True
            continue
        return _clear(ls, uri)  # the edit touches the probed code
    if current_text is not None and _runner().select(current_text, st.range, encoding).snippet != st.snippet:
        return _clear(ls, uri)
    return moved


# -- the command ---------------------------------------------------------------------------


async def _begin_progress(ls, title: str, message: str) -> str | None:
    if not ls.client.work_done_progress:
        return None
    token = f"harn-probe-{uuid7()}"
    try:
        await ls.work_done_progress.create_async(token)
    except Exception as exc:
        log.debug("workDoneProgress/create refused: %s", exc)
        return None
    messages.begin_progress(ls, token, title, message)
    return token


def _end_progress(ls, token: str | None, message: str) -> None:
    if token is None:
        return
    with contextlib.suppress(Exception):
        messages.end_progress(ls, token, message)
    ls.work_done_progress.tokens.pop(token, None)


def document_range(rng: C.Range | None) -> runner.Range | None:
    """The probed range of a ProbeArgs (the converter has checked its types), start before end;
    ActionFailed for a negative position."""
    if rng is None:
        return None
    start, end = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
    if min(start + end) < 0:
        raise ActionFailed(f"refused: negative position in range {quote(C.to_wire(rng))}")
    return (start, end) if start <= end else (end, start)


async def run_probe_command(ls, args: C.ProbeArgs) -> C.ProbeResult | C.ProbeCancelled | C.Failure:
    """`harnState.probeTypecheck`: a typecheck probe of `args.range` (none: the whole file) of `args.uri`."""
    if not ls.probes_allowed:
        return messages.command_failed(ls, NOT_ALLOWED, types.MessageType.Warning)
    if not ls.trusted:
        return messages.command_failed(ls, UNTRUSTED, types.MessageType.Warning)
    uri = args.uri
    path = file_path(uri)
    if path is None:
        return messages.command_failed(ls, "probeTypecheck needs {uri} of a file")
    proj = await ls.loaded_project_for(path) or ls.default_project()
    if proj is None or proj.ws is None:
        return messages.command_failed(ls, "no Harn project is open")
    try:
        rng = document_range(args.range)
        doc = ls.workspace.get_text_document(uri)
        text = doc.source
    except ActionFailed as exc:
        return messages.command_failed(ls, str(exc))
    except OSError as exc:
        return messages.command_failed(ls, f"cannot read {quote(path)}: {exc.strerror or quote(exc)}")
    version = doc.version

    # A re-run replaces the previous result on this document.
    _clear(ls, uri)

    settings = ls.settings_for(proj)  # its workspace folder's
    where = quote(os.path.basename(path) + ("" if rng is None else f":{rng[0][0] + 1}"))
    token = await _begin_progress(ls, "Harn typecheck probe", f"harn check {where}")
    memory_root = await proj.run(lambda: proj.ws.paths.memory_root)
    probe_task = asyncio.ensure_future(_runner().run_typecheck_probe(
        proj.root, path, text, rng, ls.harn_program(proj),
        settings.probes.timeoutSeconds,
        store=settings.probes.storeFacts, memory_root=memory_root, encoding=ls.position_encoding))

    def _cancel_probe(fut: asyncio.Future[Any]) -> None:
        if fut.cancelled() and not probe_task.done():
            probe_task.get_loop().call_soon_threadsafe(probe_task.cancel)

    request = ls.requests.get(ls.protocol.msg_id)  # None when called outside a tracked request
    watched = [f for f in (request.signal if request else None,
                           ls.work_done_progress.tokens.get(token) if token else None) if f is not None]
    for fut in watched:
        fut.add_done_callback(_cancel_probe)
    try:
        outcome = await probe_task
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if me is not None and me.cancelling():  # we are being torn down (shutdown): let the probe clean up
            probe_task.cancel()
            with contextlib.suppress(BaseException):
                await probe_task
            raise
        _end_progress(ls, token, "cancelled")
        token = None
        ls.show(CANCELLED)
        return C.ProbeCancelled(message=CANCELLED)
    except ActionFailed as exc:
        return messages.command_failed(ls, str(exc))
    finally:
        for fut in watched:
            with contextlib.suppress(Exception):
                fut.remove_done_callback(_cancel_probe)
        _end_progress(ls, token, "done")

    notes = []
    current = ls.workspace.get_text_document(uri)
    if current.version != version and _runner().select(current.source, outcome.range,
                                                       ls.position_encoding).snippet != outcome.snippet:
        notes.append("the document changed while the probe ran; diagnostics not shown")
    else:
        ls.probe_states[uri] = ProbeState(range=outcome.range, snippet=outcome.snippet)
        ls.diagnostics.set(_runner().SOURCE, uri, [to_lsp_diagnostic(d) for d in outcome.diagnostics])

    if outcome.events_path:
        await proj.apply_now([outcome.events_path])
        fid = outcome.fact_id
        if not await proj.run(lambda: fid in proj.ws.facts_by_id):
            notes.append(f"fact {quote(fid)} is stored but hidden: an earlier forget tombstoned this id (Harn hides it too)")
    if outcome.store_error:
        notes.append(f"fact not stored: {quote(outcome.store_error)}")
    summary = outcome.summary_line
    kind = types.MessageType.Info if outcome.outcome == "pass" else types.MessageType.Warning
    ls.show(summary + "".join(f" ({n})" for n in notes), kind)
    return C.ProbeResult(outcome=outcome.outcome, summary=summary, fact_id=outcome.fact_id, envelope=outcome.envelope,
                         diagnostics=len(outcome.diagnostics), notes=notes)


def register(server) -> None:
    @server.handler(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
        # Synchronous on purpose: pygls applies each didChange before calling us, and an async
        # handler would run later, against text that further edits have already changed.
        uri = params.text_document.uri
        if uri not in ls.probe_states:
            return
        try:
            text = ls.workspace.get_text_document(uri).source
        except Exception:
            text = None
        apply_text_edits(ls, uri, params.content_changes, text)  # the registry publishes what changed
