"""Problems in state files, published as diagnostics on the files they are in."""

from __future__ import annotations

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls.formats.problems import Severity
from harn_ls.lsp.file_uris import file_path
from harn_ls.render.limits import MAX_RESPONSE_BYTES, MESSAGE_BYTES, cap_text
from harn_ls.util.utf8 import utf8_len

SOURCE = "harn-ls"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def to_diagnostic(problem) -> types.Diagnostic:
    line = max(0, problem.line - 1)
    end_line = max(line, (problem.end_line or problem.line) - 1)
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=line, character=problem.column),
                          end=types.Position(line=end_line, character=10_000)),
        message=cap_text(problem.message, MESSAGE_BYTES),  # plain text; data in it is quoted, never Markdown
        severity=_SEVERITY.get(problem.severity, types.DiagnosticSeverity.Warning),
        code=problem.code,
        source=SOURCE,
    )


def within_budget(diags: list, limit: int = MAX_RESPONSE_BYTES) -> list:
    """As many diagnostics as fit in one notification of at most `limit` bytes; the rest are counted
    in a last diagnostic (each message is already capped at `MESSAGE_BYTES`)."""
    out: list[types.Diagnostic] = []
    total = 400
    for n, d in enumerate(diags):
        if utf8_len(d.message) > MESSAGE_BYTES:  # probe results come from `harn check` output
            d = attrs.evolve(d, message=cap_text(d.message, MESSAGE_BYTES))  # the registry's copy stays as set
        total += utf8_len(d.message) + utf8_len(str(d.code or "")) + 200
        if total > limit:
            rest = len(diags) - n
            out.append(types.Diagnostic(range=out[-1].range if out else d.range, severity=types.DiagnosticSeverity.Information,
                                        message=f"{rest} more problem(s) in this file not shown (see `harn-ls inspect`)",
                                        code="HL-LIMIT-001", source=SOURCE))
            break
        out.append(d)
    return out


def send(ls, uri: str, diags: list) -> None:
    """The registry's publish callback: one file's merged diagnostics, within the notification budget."""
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=within_budget(diags)))


def normalize_uri(uri: str) -> str:
    """One spelling per file, so a probe on the client's URI and problems found by path meet."""
    path = file_path(uri)
    return (from_fs_path(path) or uri) if path else uri


def problems_source(root: str) -> str:
    """The registry source of one folder's state problems."""
    return f"{SOURCE} {root}"


async def publish(ls, proj) -> int:
    """After a change batch: hand the registry the files whose problems changed (found on the project
    thread, by comparing with what it was given last) and the files that have none any more; it
    publishes each merged list. Returns the number of problems (for `harn/status`)."""
    def _collect() -> tuple[dict[str, list], list[str], int]:
        by_path = proj.ws.problems_by_path()
        before = proj.published_problems
        now = {path: tuple(problems[:1000]) for path, problems in by_path.items() if path and problems}
        changed = {from_fs_path(path): [to_diagnostic(p) for p in problems]  # frozen dataclasses: comparable
                   for path, problems in now.items() if before.get(path) != problems}
        gone = [from_fs_path(path) for path in before.keys() - now.keys()]
        proj.published_problems = now
        return changed, gone, sum(len(p) for p in by_path.values())

    changed, gone, count = await proj.run_before_facts(_collect)  # facts' problems are kept decoded
    source = problems_source(proj.root)
    for uri in gone:
        ls.diagnostics.clear(source, uri)
    for uri, diags in changed.items():
        ls.diagnostics.set(source, uri, diags)
    return count


def register(server) -> None:
    """Diagnostics are pushed after every change batch. A file's are sent again when the client opens
    it: some clients (eglot 1.9) drop diagnostics for files they have not opened, and the server
    publishes a project's problems when it loads, before the user opens any of those files."""

    @server.handler(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
        uri = normalize_uri(params.text_document.uri)
        diags = ls.diagnostics.merged(uri)
        if diags:
            send(ls, uri, diags)
