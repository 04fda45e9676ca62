"""`main` builds only the sub-parser of the command it is given: every parse, usage and error message
of that command must be what the whole parser gives."""

from __future__ import annotations

import contextlib
import io

import pytest

from harn_ls.cli import main as cli

ARGS = {
    "serve": [[], ["--tcp", "127.0.0.1:9"], ["--bogus"], ["-h"], ["--allow-probes", "--harn", "x"]],
    "inspect": [[], ["p", "--json"], ["--no-cache", "p"], ["p", "q"], ["--bogus"], ["-h"]],
    "show": [[], ["u"], ["p", "u", "--format", "md"], ["--format", "pdf", "u"], ["-h"]],
    "compare": [["p", "a", "b"], ["p", "a"], ["p", "a", "b", "--format", "svg"], ["-h"]],
    "recall": [["q"], ["p", "q", "-k", "3", "--json"], ["-k", "x", "q"], [], ["-h"]],
    "proposals": [["list"], ["p", "accept", "x", "--days", "2"], ["--days", "z", "list"], ["-h"]],
    "hitl": [["list"], ["p", "approve", "x", "--reason", "ok", "--reviewer", "alice"], ["answer", "x", "v", "--json"],
             ["list", "--all"], ["-h"]],
    "probe": [["typecheck", "f"], ["other", "f"], ["typecheck", "f", "--timeout", "t"], ["-h"]],
    "cache": [["info"], ["clear", "p", "--json"], [], ["-h"]],
    "watch": [[], ["p", "--json"], ["p", "q"], ["-h"]],
}


def outcome(parser, argv: list[str]) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns = vars(parser.parse_args(argv))
            code = None
        except SystemExit as exc:
            ns, code = None, exc.code
    return ns, code, out.getvalue(), err.getvalue()


def test_every_command_is_listed():
    assert tuple(cli.build_parser()._subparsers._group_actions[0].choices) == cli.COMMANDS


@pytest.mark.parametrize("command", cli.COMMANDS)
def test_the_one_command_parser_parses_and_complains_like_the_whole_one(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # the same help width for both
    for rest in ARGS[command]:
        argv = [command, *rest]
        assert outcome(cli.build_parser(command), argv) == outcome(cli.build_parser(), argv), argv
