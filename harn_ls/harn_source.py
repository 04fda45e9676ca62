"""Find checkpoint calls in `.harn` source text (no Harn parser needed for string-literal stage names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_CALL = re.compile(
    r'\b(?P<fn>checkpoint_stage_keyed_retry|checkpoint_stage_keyed|checkpoint_stage_retry|checkpoint_stage|checkpoint)'
    r'\s*\(\s*"(?P<name>(?:[^"\\\n]|\\.)*)"'
)
_COMMENT = re.compile(r"//[^\n]*")


@dataclass(frozen=True)
class CheckpointCall:
    function: str
    stage: str
    line: int  # 0-based
    start_char: int  # UTF-16 column of the function name
    end_char: int

    @property
    def keyed(self) -> bool:
        return "keyed" in self.function


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def find_checkpoint_calls(text: str) -> list[CheckpointCall]:
    out = []
    for lineno, line in enumerate(text.splitlines()):
        code = line
        m_comment = _COMMENT.search(line)
        if m_comment and '"' not in line[: m_comment.start()].replace('\\"', ""):
            code = line[: m_comment.start()]
        for m in _CALL.finditer(code):
            start = _utf16_len(line[: m.start("fn")])
            out.append(CheckpointCall(m.group("fn"), _unescape(m.group("name")), lineno, start, start + _utf16_len(m.group("fn"))))
    return out
