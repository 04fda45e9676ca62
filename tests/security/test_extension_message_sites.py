"""Issue 27 item 1, in the extension's source: every notification, status bar message, quick pick
and input box puts server or data text in only through `src/inert.ts` (`inertMessage`,
`quoteValue`, `noIcons`), and the server's `window/showMessage(Request)` are handled by the
extension (text defused) instead of vscode-languageclient's default handlers.

A grep-level walk of `vscode-extension/src/*.ts`: each `${…}` inside the text argument of
`showInformationMessage` / `showWarningMessage` / `showErrorMessage` / `setStatusBarMessage` and
each `title:` / `prompt:` of an input box must be one of those calls or a name listed below with why."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "vscode-extension" / "src"
INERT_CALLS = ("inertMessage(", "quoteValue(", "noIcons(")
CALLS = re.compile(r"\b(showInformationMessage|showWarningMessage|showErrorMessage|setStatusBarMessage)\(")
# (file, interpolation) -> why it is not data
LABELS = {
    ("commands.ts", "what"): "the command's own label, a literal at each registerCommand",
    ("commands.ts", "placeHolder.toLowerCase()"): "a literal placeholder of pickItem's callers",
    ("extension.ts", "what"): "built just above from quoteValue / inertMessage / a count",
    ("extension.ts", "reqs.length"): "a count",
}


def _argument(text: str, start: int) -> str:
    """The first argument of the call whose `(` is at `start - 1` (balanced brackets, strings skipped)."""
    depth, i, quote = 0, start, None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
            elif quote == "`" and text.startswith("${", i):
                end = _argument(text, i + 2)
                i += 2 + len(end) + 1
                continue
        elif ch in "'\"`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return text[start:i]
            depth -= 1
        elif ch == "," and depth == 0:
            return text[start:i]
        i += 1
    return text[start:]


def _interpolations(arg: str) -> list[str]:
    out, i = [], 0
    while (i := arg.find("${", i)) != -1:
        inner = _argument(arg, i + 2)
        out.append(inner.strip())
        i += 2 + len(inner)
    return out


def _problems(name: str, text: str) -> list[str]:
    problems = []
    sites = [m.end() for m in CALLS.finditer(text)]
    sites += [m.end() for m in re.finditer(r"\b(?:title|prompt):\s*", text)]
    for at in sites:
        arg = _argument(text, at)
        if arg.strip().startswith(INERT_CALLS):
            continue
        for expr in _interpolations(arg):
            if expr.startswith(INERT_CALLS) or (name, expr) in LABELS:
                continue
            line = text.count("\n", 0, at) + 1
            problems.append(f"{name}:{line}: ${{{expr}}} shown without inertMessage/quoteValue/noIcons")
    return problems


def test_every_shown_text_is_inert():
    problems = []
    for path in sorted(SRC.glob("*.ts")):
        problems += _problems(path.name, path.read_text())
    assert problems == []


def test_quick_pick_items_escape_icons():
    for path in sorted(SRC.glob("*.ts")):
        text = path.read_text()
        for m in re.finditer(r"showQuickPick\(", text):
            arg = _argument(text, m.end())
            for field in re.findall(r"\b(label|description|detail):\s*([^,}]+)", arg):
                assert field[1].strip().startswith("noIcons("), f"{path.name}: quick pick {field[0]} = {field[1]}"
            shorthand = re.findall(r"[{,]\s*(label|description|detail)\s*[,}]", arg)
            assert not shorthand, f"{path.name}: quick pick item {shorthand} taken as it is (use noIcons)"


def test_server_messages_are_handled_by_the_extension():
    client = (SRC / "client.ts").read_text()
    assert "client.onNotification(ShowMessageNotification.type" in client
    assert "client.onRequest(ShowMessageRequest.type" in client
    assert "inertMessage(p.message)" in client


def test_the_walk_catches_an_unquoted_site():
    bad = "void vscode.window.showWarningMessage(`Harn: refused ${res.message} (${inertMessage(x)})`, 'Open');"
    assert _problems("new.ts", bad) == ["new.ts:1: ${res.message} shown without inertMessage/quoteValue/noIcons"]
    assert _problems("new.ts", "showErrorMessage(`x ${quoteValue(a.b)} ${noIcons(c)}`)") == []
