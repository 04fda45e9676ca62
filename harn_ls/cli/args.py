"""The everyday command lines, `inspect [PATH] [--json] [--no-cache] [--quiet]` and `recall [PATH] QUERY
[-k K] [--namespace NS] [--explain] [--json] [--no-cache] [--quiet]`, read without argparse.

Importing argparse and building a sub-parser costs a warm one-shot command ~20 ms of CPU (argparse,
gettext, locale, shutil for the help width), more than it spends on anything but the load itself.
`quick_args` accepts only spellings whose meaning is plain, and gives exactly the values argparse
would; anything else (help, abbreviations, `--opt=value`, `--`, a token starting with `-` that is
not one of the flags, positionals split by an option, a bad `-k`) returns None and goes through
argparse, which parses or complains as before (`tests/unit/test_cli_args.py` compares the two).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

N = TypeVar("N", int, float)


class OutOfRange(ValueError):
    """A number argument outside its range: argparse reports it in one line (exit 2)."""


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse `type` for an int in [low, high]. `99999999999999999999` is refused here, in one
    line, instead of overflowing deeper down (a slice, a SQLite parameter, a C long)."""
    return _in_range(int, low, high, "a whole number", f"{low} to {high}", "number")


def seconds(low: float, high: float) -> Callable[[str], float]:
    """An argparse `type` for a finite number of seconds in [low, high] (`1e400`, `nan` refused)."""
    return _in_range(float, low, high, "a number", f"{low:g} to {high:g} seconds", "seconds")


def _in_range(parse: Callable[[str], N], low: N, high: N, noun: str, expected: str, name: str) -> Callable[[str], N]:
    """`parse`, refusing text it cannot read or a value outside [low, high]; `name`: argparse's word for it."""

    def convert(text: str) -> N:
        try:
            value = parse(text)
        except ValueError:
            raise OutOfRange(f"{text[:40]!r} is not {noun}") from None
        if not low <= value <= high:  # also false for nan
            raise OutOfRange(f"{text[:40]!r} is out of range (expected {expected})")
        return value

    convert.__name__ = name
    return convert


RECALL_K = whole_number(1, 1000)

# per command: the defaults argparse fills in, its flags (store_true), its options taking one value
# (with the type argparse converts the value with) and the positional's name
_Spec = tuple[dict[str, Any], dict[str, str], dict[str, tuple[str, Callable[[str], Any]]], str]
_INSPECT: _Spec = ({"path": None, "json": False, "no_cache": False, "quiet": False},
            {"--json": "json", "--no-cache": "no_cache", "--quiet": "quiet", "-q": "quiet"}, {}, "path")
_RECALL: _Spec = ({"args": None, "namespace": None, "k": 5, "explain": False, "json": False, "no_cache": False, "quiet": False},
           {"--explain": "explain", "--json": "json", "--no-cache": "no_cache", "--quiet": "quiet", "-q": "quiet"},
           {"-k": ("k", RECALL_K), "--namespace": ("namespace", str), "-n": ("namespace", str)}, "args")
_SPECS = {"inspect": _INSPECT, "recall": _RECALL}


def quick_args(argv: list[str]) -> dict | None:
    """The parsed arguments as argparse's namespace would hold them (without `func`), or None when
    `argv` is not one of the plain spellings."""
    if not argv or argv[0] not in _SPECS:
        return None
    command = argv[0]
    defaults, flags, options, positional_name = _SPECS[command]
    values: dict[str, Any] = {"command": command, **defaults}
    positionals: list[str] = []
    block_closed = False  # argparse takes the positionals as one run: an option after them ends it
    i, n = 1, len(argv)
    while i < n:
        token = argv[i]
        if token.startswith("-"):
            if positionals:
                block_closed = True
            if token in flags:
                values[flags[token]] = True
            elif token in options and i + 1 < n and not argv[i + 1].startswith("-"):
                name, convert = options[token]
                try:
                    values[name] = convert(argv[i + 1])
                except ValueError:
                    return None  # argparse words the complaint
                i += 1
            else:
                return None
        elif block_closed:
            return None
        else:
            positionals.append(token)
        i += 1
    if command == "inspect":
        if len(positionals) > 1:
            return None
        values[positional_name] = positionals[0] if positionals else None
    else:
        if not positionals:
            return None
        values[positional_name] = positionals
    return values
