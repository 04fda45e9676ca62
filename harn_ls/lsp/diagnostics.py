"""Problems in state files, published as diagnostics on the files they are in."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from harn_ls.formats.problems import Severity
from harn_ls.render.limits import MAX_RESPONSE_BYTES, MESSAGE_BYTES, cap_text, utf8_len

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
    out, total = [], 400
    for n, d in enumerate(diags):
        if utf8_len(d.message) > MESSAGE_BYTES:  # probe results come from `harn check` output
            d.message = cap_text(d.message, MESSAGE_BYTES)
        total += utf8_len(d.message) + utf8_len(str(d.code or "")) + 200
        if total > limit:
            rest = len(diags) - n
            out.append(types.Diagnostic(range=out[-1].range if out else d.range, severity=types.DiagnosticSeverity.Information,
                                        message=f"{rest} more problem(s) in this file not shown (see `harn-ls inspect`)",
                                        code="HL-LIMIT-001", source=SOURCE))
            break
        out.append(d)
    return out


def send(ls, path: str, problems) -> None:
    """One file's diagnostics: harn-ls' problems plus any typecheck-probe results kept for it."""
    from harn_ls.lsp.probe import diagnostics_for_path

    diags = within_budget([to_diagnostic(p) for p in problems[:1000]] + diagnostics_for_path(ls, path))
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=diags))


async def publish(ls, proj) -> int:
    """After a change batch: send only the files whose problem list changed, and clear vanished ones.
    Returns the number of problems (for `harn/status`)."""
    by_path = await proj.run(lambda: proj.ws.problems_by_path())
    before = ls.published.get(proj.root, {})
    now: dict[str, tuple] = {}
    for path, problems in by_path.items():
        if not path:
            continue
        now[path] = tuple(problems[:1000])  # Problems are frozen dataclasses: comparable as they are
        if before.get(path) != now[path]:
            send(ls, path, now[path])
    for path in before.keys() - now.keys():
        send(ls, path, ())
    ls.published[proj.root] = now
    return sum(len(p) for p in by_path.values())


async def publish_file(ls, proj, path: str) -> None:
    """Re-send one file (after its probe diagnostics changed)."""
    problems = await proj.run(lambda: proj.ws.problems_by_path().get(path, [])) if proj is not None else []
    send(ls, path, problems)


def register(server) -> None:
    """Diagnostics are pushed after every change batch; nothing to register."""
