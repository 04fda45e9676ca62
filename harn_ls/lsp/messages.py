"""The one place each kind of text message leaves the server, made inert on the way out.

`window/showMessage`, `window/logMessage`, work-done progress (a cancellable one is a VS Code
notification) and `harn/hitlArrived` all reach a client that may find links in their text
(util/message_text.py says which and how). Every such send in harn_ls goes through a function
here, which passes the text through `defuse`; callers put data and setting values in with
`quote` so they also read as values. `tests/security/test_message_sites.py` walks the source:
a new direct send, or a value put into a message unquoted, fails it.
"""

from __future__ import annotations

import logging

from lsprotocol import types

from harn_ls import contract as P
from harn_ls.render.limits import MESSAGE_BYTES, cap_text
from harn_ls.util.message_text import defuse as _defuse

log = logging.getLogger(__name__)

HITL_PROMPT_CHARS = 300  # a prompt in `harn/hitlArrived` (the document has all of it)


def defuse(text) -> str:
    """One message's text: capped (MESSAGE_BYTES, "… N more bytes"), then made inert."""
    return _defuse(cap_text(text, MESSAGE_BYTES))


def show(ls, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
    """`window/showMessage` with the text made inert."""
    ls.window_show_message(types.ShowMessageParams(type=kind, message=defuse(message)))


def command_failed(ls, message: str, kind: types.MessageType = types.MessageType.Error) -> P.Failure:
    """A command's refusal: shown to the user (`ls.show`, made inert there), then answered as its Failure."""
    ls.show(message, kind)
    return P.Failure(message)


def log_line(ls, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
    """`window/logMessage` with the text made inert (some clients show warnings as pop-ups)."""
    ls.window_log_message(types.LogMessageParams(type=kind, message=defuse(message)))


def begin_progress(ls, token: str, title: str, message: str | None, cancellable: bool = True,
                   percentage: int | None = None) -> None:
    """`$/progress` begin: VS Code shows a cancellable one as a notification (title: message)."""
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
        title=defuse(title), message=defuse(message) if message is not None else None, cancellable=cancellable,
        percentage=percentage))


def report_progress(ls, token: str, message: str | None, percentage: int | None = None) -> None:
    ls.work_done_progress.report(token, types.WorkDoneProgressReport(
        message=defuse(message) if message is not None else None, percentage=percentage))


def end_progress(ls, token: str, message: str | None) -> None:
    ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=defuse(message) if message is not None else None))


def hitl_arrived(ls, root: str, requests: list) -> None:
    """`harn/hitlArrived` for new requests: (formats/hitl/requests.py HitlRequest, its document's URI) pairs.
    The text a client shows (prompt, kind, agent) is data from the event log: made inert. The
    identifiers (request id, URI, project root) go exactly as they are, for the client to act on."""
    ls.protocol.notify(P.HITL_ARRIVED, P.to_wire(P.HitlArrivedParams(root=root, requests=[
        P.HitlRequestNote(request_id=r.request_id, kind=defuse(r.kind), prompt=defuse(r.prompt[:HITL_PROMPT_CHARS]),
                          agent=defuse(r.agent) if r.agent is not None else None, uri=uri)
        for r, uri in requests])))
