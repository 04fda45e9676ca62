"""Problems in state files, published as diagnostics on the files they are in."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls.formats.problems import Severity

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
        message=problem.message,
        severity=_SEVERITY.get(problem.severity, types.DiagnosticSeverity.Warning),
        code=problem.code,
        source=SOURCE,
    )


async def publish(ls, proj) -> None:
    from harn_ls.lsp.probe import diagnostics_for_path  # typecheck-probe results on the same file are kept

    by_path = await proj.run(lambda: proj.ws.problems_by_path())
    before = ls.published.get(proj.root, set())
    now = set()
    for path, problems in by_path.items():
        if not path:
            continue
        now.add(path)
        diags = [to_diagnostic(p) for p in problems[:1000]] + diagnostics_for_path(ls, path)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=diags))
    for path in before - now:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path),
                                                                         diagnostics=diagnostics_for_path(ls, path)))
    ls.published[proj.root] = now


def register(server) -> None:
    """Diagnostics are pushed after every change batch; nothing to register."""
