"""`TranscriptSummary`, apart from formats/transcripts.py: a warm one-shot command restores run
records with their summaries from the state cache and never reads a transcript, so it need not
pay for the transcript views' classes (~10 ms of imports)."""

from __future__ import annotations

from harn_ls.util.lean_dataclass import lean_dataclass


@lean_dataclass(frozen=True, slots=True)
class TranscriptSummary:
    """What lists need of a transcript; the transcript itself is read back from its file on demand."""

    id: str | None
    message_count: int
    event_count: int
    asset_count: int
