"""The classes of a fact read back from memory (`Fact`, its `Evidence`, a `FileRange`), apart from
formats/facts.py, which loads them on first use: a warm one-shot command prints the facts from the
state cache (or leaves them there) and never builds one, so it does not pay for creating them.
`harn_ls.formats.facts` still gives them under their old names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harn_ls.util.json_types import JsonObject


@dataclass(frozen=True, slots=True)
class FileRange:
    """Lines of a project file that a fact's evidence points at."""

    path: str  # posix, relative to the project root
    start: int  # 1-based, inclusive
    end: int  # 1-based, inclusive


@dataclass(frozen=True, slots=True)
class Evidence:
    """One piece of a fact's evidence: what it refers to, and the lines when it is a file range."""

    kind: str
    ref: str
    snippet: str | None = None
    range: FileRange | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    """A fact as Harn stores it in a memory namespace, normalized."""

    id: str
    kind: str
    claim: str
    confidence: float
    evidence: tuple[Evidence, ...]
    provenance: JsonObject
    asserted_at: str
    valid_until: JsonObject | None
    namespace: str
    record_id: str
    memory_key: str
    stored_at: str
    line_no: int
