"""`cli_args.quick_args` reads `inspect` and `recall` command lines without argparse: whatever it
accepts must parse to exactly what argparse gives, and whatever argparse would refuse, explain or
read differently it must leave to argparse (None)."""

from __future__ import annotations

import contextlib
import io
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.cli import main as cli
from harn_ls.cli.args import quick_args

# tokens with a plain meaning and tokens argparse reads its own way (abbreviations, `=`, `--`, help,
# negative numbers, empty strings, a lone dash, values that are not numbers)
INSPECT_TOKENS = ["--json", "--no-cache", "p", "q", "", "-", "--", "--js", "--json=1", "-h", "--bogus", "-1"]
RECALL_TOKENS = ["--json", "--no-cache", "--explain", "-k", "3", "010", "x", "-n", "--namespace", "ns", "p", "q",
                 "", "-", "--", "-k3", "--namespace=ns", "--exp", "-h", "-5", " 7", "1_0"]


def argparse_outcome(argv: list[str]):
    """vars() of argparse's namespace without `func`, or ("exit", code) when it printed and exited."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            parsed = vars(cli.build_parser(argv[0]).parse_args(argv))
        except SystemExit as exc:
            return ("exit", exc.code)
    parsed.pop("func")
    return parsed


def check(argv: list[str]) -> bool:
    quick = quick_args(argv)
    if quick is not None:
        assert quick == argparse_outcome(argv), argv
    return quick is not None


def test_every_short_inspect_command_line_parses_as_argparse_does():
    accepted = sum(check(["inspect", *rest]) for n in range(4) for rest in itertools.product(INSPECT_TOKENS, repeat=n))
    assert accepted > 50  # the plain spellings do take the quick path


def test_every_short_recall_command_line_parses_as_argparse_does():
    accepted = sum(check(["recall", *rest]) for n in range(4) for rest in itertools.product(RECALL_TOKENS, repeat=n))
    assert accepted > 500


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["inspect", "recall"]), st.lists(st.sampled_from(RECALL_TOKENS + INSPECT_TOKENS), max_size=8))
def test_longer_command_lines_parse_as_argparse_does(command, rest):
    check([command, *rest])


@pytest.mark.parametrize("argv", [
    ["inspect", "/some/project", "--json"], ["inspect", "--json", "--no-cache", "p"], ["inspect"],
    ["recall", "p", "invoice rounding", "-k", "10", "--json"], ["recall", "-n", "agent/notes", "--explain", "q"],
])
def test_the_usual_spellings_take_the_quick_path(argv):
    assert check(argv)


@pytest.mark.parametrize("argv", [
    ["inspect", "-h"], ["inspect", "p", "q"], ["inspect", "--js"], ["recall"], ["recall", "-k", "x", "q"],
    ["recall", "p", "-k", "3", "q"], ["recall", "--namespace=ns", "q"], ["serve"], ["show", "u"], [],
])
def test_help_abbreviations_and_mistakes_go_to_argparse(argv):
    assert quick_args(argv) is None


def test_main_runs_a_quick_command_like_the_parsed_one(tmp_path, capsys, monkeypatch):
    """The namespace main builds itself carries the same handler as argparse's set_defaults."""
    monkeypatch.setenv("HARN_LS_CACHE", "off")
    assert cli.main(["inspect", str(tmp_path), "--json"]) == 0
    quick_out = capsys.readouterr().out
    parsed = cli.build_parser("inspect").parse_args(["inspect", str(tmp_path), "--json"])
    assert cli.QUICK_COMMANDS["inspect"] is parsed.func
    assert cli._run(parsed) == 0
    assert capsys.readouterr().out == quick_out and '"roots"' in quick_out
