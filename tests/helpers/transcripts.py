"""Transcript conveniences for tests: harn-ls renders events itself (render/conversation.py)
and never needs these, so they live here rather than in harn_ls/formats/transcripts.py."""

from __future__ import annotations

from typing import Any

from harn_ls.formats.transcripts import Transcript, TranscriptEvent, normalize_block, render_blocks


def message_text(message: Any, *, hide_private: bool = True) -> str:
    """Rendered text of one `messages[]` entry (string content or block list)."""
    if not isinstance(message, dict):
        return ""
    role = message.get("role") if isinstance(message.get("role"), str) else None
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else ([content] if content is not None else [])
    return render_blocks([normalize_block(b, role) for b in blocks], hide_private=hide_private)


def visible_events(tr: Transcript, *, include_internal: bool = True, include_private: bool = False) -> list[TranscriptEvent]:
    """The events whose visibility is public, plus internal / private when asked."""
    keep = {"public"}
    if include_internal:
        keep.add("internal")
    if include_private:
        keep.add("private")
    return [e for e in tr.events if e.visibility in keep]


def compactions(tr: Transcript) -> list[TranscriptEvent]:
    return [e for e in tr.events if e.kind == "compaction"]
