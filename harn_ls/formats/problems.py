"""The one way every reader reports malformed input: a Problem, never an exception."""

from __future__ import annotations

from enum import StrEnum

from harn_ls.util.json_types import JsonObject
from harn_ls.util.lean_dataclass import lean_dataclass


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@lean_dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong in a state file.

    `line` is 1-based (0 = the file as a whole). `code` is a stable
    identifier (HARN-LS-xxx or Harn's own code such as HARN-FACT-004); the
    message says what Harn itself will do about it.
    """

    path: str
    line: int
    code: str
    message: str
    severity: Severity = Severity.WARNING
    column: int = 0
    end_line: int | None = None  # 1-based inclusive; None = same as line

    def to_json(self) -> JsonObject:
        return {
            "path": self.path,
            "line": self.line,
            "code": self.code,
            "message": self.message,
            "severity": self.severity.value,
        }
