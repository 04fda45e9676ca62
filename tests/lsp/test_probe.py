"""harnState.probeTypecheck end to end: code action -> harn (test double) -> diagnostics -> fact on the code."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from lsprotocol import types

from tests.lsp.conftest import execute_command, make_client_fixture, open_file

client = make_client_fixture()
untrusted = make_client_fixture({"settings": {"harnState": {"harnPath": "/nonexistent/harn"}}, "workspaceTrusted": False})
nobinary = make_client_fixture({"settings": {"harnState": {"harnPath": "/nonexistent/harn"}}, "workspaceTrusted": True})

REL = "pipelines/probe_target.harn"
DOC = ('pipeline main() {\n'
       '  let label = "r\u00e9sum\u00e9 \U0001F600"; let x: int = "oops"\n'
       '  let y: int = 2\n'
       '}\n')


def utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def pos(line: int, ch: int) -> types.Position:
    return types.Position(line=line, character=ch)


def write_and_open(client, text: str = DOC) -> tuple[Path, str]:
    path = client.project / REL
    path.write_text(text, encoding="utf-8")
    return path, open_file(client, path, "harn")


async def probe_action(client, uri: str, rng: types.Range) -> dict:
    """The probe code action, read raw: lsprotocol's client-side converter turns a CodeAction in the
    `(Command | CodeAction)[]` result into a Command (it tries Command first), losing its command."""
    from pygls.protocol.json_rpc import JsonRPCResponseMessage

    msg_id = f"code-action-{time.monotonic_ns()}"
    fut = asyncio.ensure_future(client.protocol.send_request_async(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=[])), msg_id=msg_id))
    await asyncio.sleep(0)  # the request is written (and its result type registered) in the first step
    client.protocol._result_types[msg_id] = JsonRPCResponseMessage  # keep the result untyped
    actions = [_plain(a) for a in (await fut or [])]
    return next(a for a in actions if a["title"] == "Run typecheck probe on selection")


def _plain(obj):
    if hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def probe_diags(client, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.source == "harn-probe"]


async def test_selection_probe_diagnostics_fact_and_hover(client):
    path, uri = write_and_open(client)
    line1 = DOC.split("\n")[1]
    # selection starts mid-line, after multi-byte characters, and ends mid-line 2
    sel = types.Range(start=pos(1, utf16(line1[:line1.index("let x")])), end=pos(2, 7))
    action = await probe_action(client, uri, sel)
    assert action["kind"] == "source.harnState.probe"
    assert action["command"]["command"] == "harnState.probeTypecheck"
    result = await execute_command(client, types.ExecuteCommandParams(
        command=action["command"]["command"], arguments=action["command"]["arguments"]))
    result = _plain(result)
    assert result["ok"] is True and result["outcome"] == "fail"
    assert result["summary"] == "typecheck fail: 1 error"
    fact_id = result["factId"]
    assert fact_id.startswith("fact_")

    await client.rec.wait_for(lambda: probe_diags(client, uri), 10)
    (d,) = probe_diags(client, uri)
    col = utf16(line1[:line1.index('"oops"')])
    assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (1, col, 1, col + 6)
    assert d.code == "HARN-TYP-001" and d.severity == types.DiagnosticSeverity.Error
    assert any(m.startswith("typecheck fail: 1 error") for m in client.rec.shown)

    # work-done progress was shown and ended
    reports = [r for tok, rs in client.progress_reports.items() if str(tok).startswith("harn-probe-") for r in rs]
    assert any(isinstance(r, types.WorkDoneProgressBegin) for r in reports)
    assert any(isinstance(r, types.WorkDoneProgressEnd) for r in reports)

    # the fact is a document ...
    content = await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri=f"harn-state:/facts/{fact_id}.md"))
    assert "probe typecheck" in content.text and "Not found" not in content.text
    assert f"{REL}:2-3" in content.text

    # ... and a hover on the probed lines
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos(2, 3)))
    assert hover is not None and fact_id in hover.contents.value and "probe typecheck" in hover.contents.value

    # an edit before the range shifts the diagnostics; an edit inside clears them
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=pos(0, 0), end=pos(0, 0)), text="// header\n")]))
    await client.rec.wait_for(lambda: probe_diags(client, uri) and probe_diags(client, uri)[0].range.start.line == 2, 10)
    assert probe_diags(client, uri)[0].range.start.character == col
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=pos(3, 2), end=pos(3, 5)), text="const")]))
    await client.rec.wait_for(lambda: uri in client.diagnostics and not probe_diags(client, uri), 10)


async def test_rerun_replaces_and_warning_passes(client):
    path, uri = write_and_open(client, "pipeline main() {\n  let unused_var = 1\n}\n")
    action = await probe_action(client, uri, types.Range(start=pos(1, 0), end=pos(2, 0)))
    for _ in range(2):
        result = await execute_command(client, types.ExecuteCommandParams(
            command=action["command"]["command"], arguments=action["command"]["arguments"]))
        result = _plain(result)
        assert result["outcome"] == "pass" and result["summary"] == "typecheck pass: 1 warning"
    await client.rec.wait_for(lambda: len(probe_diags(client, uri)) == 1, 10)
    assert probe_diags(client, uri)[0].severity == types.DiagnosticSeverity.Warning


def _double_processes() -> dict[int, str]:
    """pid -> temp path of running test-double `check` processes."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{p}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(a.endswith(b"harn_test_double.py") for a in argv) and b"check" in argv:
            tmp = next((a.decode() for a in argv if b"harn-probe-" in a), None)
            if tmp:
                out[int(p)] = tmp
    return out


async def test_cancel_request_kills_probe(client):
    path, uri = write_and_open(client, "pipeline main() {\n  // HARN_DOUBLE_HANG\n}\n")
    before = set(_double_processes())
    msg_id = "probe-cancel-1"
    fut = asyncio.ensure_future(client.protocol.send_request_async(types.WORKSPACE_EXECUTE_COMMAND,
                                types.ExecuteCommandParams(command="harnState.probeTypecheck",
                                                           arguments=[{"uri": uri}]), msg_id=msg_id))
    running: dict[int, str] = {}

    def started() -> bool:
        running.update({k: v for k, v in _double_processes().items() if k not in before})
        return bool(running)

    await client.rec.wait_for(started, 10)
    await asyncio.sleep(0.3)  # let `env`/shim wrappers exec into the double
    started()
    (tmp,) = set(running.values())
    pgids = {os.getpgid(p) for p in running if p in _double_processes()}
    assert os.path.exists(tmp) and ".harn" not in Path(tmp).parts[:-1]
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
    try:
        await asyncio.wait_for(fut, 60)
    except Exception as exc:  # pygls answers a cancelled request with an error
        assert "cancel" in str(exc).lower()
    deadline = time.monotonic() + 60  # generous for a loaded machine: the loop ends as soon as all is gone
    while (set(running) & set(_double_processes()) or os.path.exists(tmp)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not set(running) & set(_double_processes())
    assert not os.path.exists(tmp) and not os.path.exists(os.path.dirname(tmp))
    for p in os.listdir("/proc"):  # nothing of the probe's process group survives (zombies aside)
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            assert not (int(fields[2]) in pgids and fields[0] != "Z"), f"process {p} of the probe group survived"
    await client.rec.wait_for(lambda: any("cancelled" in m for m in client.rec.shown), 5)


async def test_untrusted_workspace_refuses(untrusted):
    client = untrusted
    path, uri = write_and_open(client)
    events = client.project / ".harn/memory/project/facts/events.jsonl"
    before = events.read_bytes()
    result = await execute_command(client, types.ExecuteCommandParams(
        command="harnState.probeTypecheck", arguments=[{"uri": uri}]))
    result = _plain(result)
    assert result["ok"] is False and "not trusted" in result["message"]
    assert any("not trusted" in m for m in client.rec.shown)
    assert events.read_bytes() == before
    assert not probe_diags(client, uri)


async def test_missing_binary_one_clear_message(nobinary):
    client = nobinary
    path, uri = write_and_open(client)
    result = _plain(await execute_command(client, types.ExecuteCommandParams(
        command="harnState.probeTypecheck", arguments=[{"uri": uri}])))
    assert result["ok"] is False and "harnState.harnPath" in result["message"]
    await client.rec.wait_for(lambda: any("harnState.harnPath" in m for m in client.rec.shown), 5)
    assert len([m for m in client.rec.shown if "harnState.harnPath" in m]) == 1
