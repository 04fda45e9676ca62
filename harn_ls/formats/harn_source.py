"""Find checkpoint calls in `.harn` source text (no Harn parser needed for string-literal stage names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harn_ls.util.text_positions import UTF16, TextIndex, units_len

_CALL = re.compile(
    r'\b(?P<fn>checkpoint_stage_keyed_retry|checkpoint_stage_keyed|checkpoint_stage_retry|checkpoint_stage|checkpoint)'
    r'\s*\(\s*"(?P<name>(?:[^"\\\n]|\\.)*)"'
)


@dataclass(frozen=True)
class CheckpointCall:
    """A checkpoint call found in Harn source: which function, which stage, where."""

    function: str
    stage: str
    line: int  # 0-based
    start_char: int  # column of the function name, in find_checkpoint_calls' `encoding`
    end_char: int

    @property
    def keyed(self) -> bool:
        return "keyed" in self.function


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def _blank_comments(text: str) -> str:
    """Replace `//` and `/* */` comments with spaces (same length), leaving string literals alone."""
    out = list(text)
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"' or c == "\n":
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
            continue
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        i += 1
    return "".join(out)


def find_checkpoint_calls(text: str, encoding: str = UTF16) -> list[CheckpointCall]:
    code = _blank_comments(text)
    index = TextIndex(text, encoding)
    out = []
    for m in _CALL.finditer(code):
        line, col = index.position(m.start("fn"))
        out.append(CheckpointCall(m.group("fn"), _unescape(m.group("name")), line, col, col + units_len(m.group("fn"), encoding)))
    return out
