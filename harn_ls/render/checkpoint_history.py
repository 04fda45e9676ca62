"""Documents for checkpoint history: one version (`?version=N`) and what changed between versions.

`ws.checkpoint_history` is a `harn_ls.cache.checkpoint_history.CheckpointHistory` (set by the
server while it watches); without one there is no history to show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harn_ls.formats.checkpoints import CheckpointFile, parse_checkpoint_bytes
from harn_ls.render.markdown import display_time, fence, human_bytes, pretty_json, short_text
from harn_ls.render.svg import md_text
from harn_ls.render.uri import UriError, make_uri

if TYPE_CHECKING:
    from harn_ls.model.workspace import Workspace


@dataclass
class StageDiff:
    """What changed in a checkpoint's stages between two versions."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    value_changed: list[str] = field(default_factory=list)
    fingerprint_changed: list[str] = field(default_factory=list)

    def changed(self, key: str) -> bool:
        return key in self.added or key in self.value_changed or key in self.fingerprint_changed

    def summary(self) -> str:
        parts = []
        for label, keys in (("added", self.added), ("removed", self.removed),
                            ("fingerprint changed", self.fingerprint_changed), ("value changed", self.value_changed)):
            if keys:
                parts.append(f"{label}: " + ", ".join(md_text(k) for k in keys[:10])
                             + (f" +{len(keys) - 10}" if len(keys) > 10 else ""))
        return "; ".join(parts) or "no stage changed"


def parse(pipeline: str, data: bytes | None) -> CheckpointFile:
    cf = CheckpointFile(pipeline=pipeline, path=f"<history {pipeline}>", entries={})
    if data is not None:
        parse_checkpoint_bytes(data, cf)
    return cf


def diff(old: CheckpointFile | None, new: CheckpointFile) -> StageDiff:
    d = StageDiff()
    before = old.entries if old is not None else {}
    for key in sorted(new.entries):
        e = new.entries[key]
        o = before.get(key)
        if o is None:
            d.added.append(key)
            continue
        if (o.fingerprint or None) != (e.fingerprint or None):
            d.fingerprint_changed.append(key)
        elif pretty_json(o.value) != pretty_json(e.value):
            d.value_changed.append(key)
    d.removed = sorted(k for k in before if k not in new.entries)
    return d


def _when(ts: float) -> str:
    return f"{display_time(ts)} UTC"


def last_change(ws: Workspace, pipeline: str) -> StageDiff | None:
    """What changed between the two newest kept versions (None without two)."""
    hist = ws.checkpoint_history
    if hist is None:
        return None
    versions = hist.versions(pipeline)
    if len(versions) < 2:
        return None
    a, b = versions[-2], versions[-1]
    return diff(parse(pipeline, hist.read(pipeline, a.n)), parse(pipeline, hist.read(pipeline, b.n)))


def version_document(ws: Workspace, pipeline: str, n: int) -> str:
    """One kept version, in the same shape for every version so that two of them diff cleanly."""
    hist = ws.checkpoint_history
    if hist is None:
        raise UriError("checkpoint history is off (harn-ls keeps it only while it watches, with its cache enabled)")
    v = hist.version(pipeline, n)
    data = hist.read(pipeline, n) if v is not None else None
    if v is None or data is None:
        raise UriError(f"no kept version {n} of checkpoints {pipeline!r}")
    cf = parse(pipeline, data)
    out = [f"# Checkpoints — {md_text(pipeline)} · version {n}", "",
           f"Seen {_when(v.seen_at)} · {human_bytes(v.size)} · sha256 `{v.sha256[:16]}…`", ""]
    for pr in cf.problems:
        out.append(f"> {md_text(pr.code)}: {md_text(pr.message)}")
    out.append("| stage | kind | fingerprint | value |\n|---|---|---|---|")
    for key in sorted(cf.entries):
        e = cf.entries[key]
        value = e.value
        out.append(f"| {md_text(key)} | {'keyed' if e.keyed else 'plain'} | {md_text(e.fingerprint or '')} | "
                   f"{md_text(short_text(pretty_json(value, 200), 80)) if value is not None else 'completed (nil)'} |")
    out.append("")
    for key in sorted(cf.entries):
        out.append(f"## {md_text(key)}\n")
        out.append(fence(pretty_json(cf.entries[key].value), "json"))
    return "\n".join(out) + "\n"


def history_section(ws: Workspace, pipeline: str, limit: int = 50) -> list[str]:
    """The *History* part of a checkpoints document: kept versions, newest first, with what changed."""
    hist = ws.checkpoint_history
    if hist is None:
        return []
    versions = hist.versions(pipeline)
    if not versions:
        return ["## History\n", "No version kept yet (harn-ls keeps each version it sees while it watches).", ""]
    out = [f"## History ({len(versions)} version(s) kept)\n",
           "| version | seen | size | changes from the previous version |", "|---|---|---|---|"]
    parsed: dict[int, CheckpointFile] = {}

    def get(n: int) -> CheckpointFile:
        if n not in parsed:
            parsed[n] = parse(pipeline, hist.read(pipeline, n))
        return parsed[n]

    shown = list(reversed(versions))[:limit]
    for i, v in enumerate(shown):
        prev = shown[i + 1] if i + 1 < len(shown) else None
        change = diff(get(prev.n), get(v.n)).summary() if prev is not None else "first kept version"
        link = f"[{v.n}]({make_uri('checkpoints', pipeline, version=str(v.n))})"
        out.append(f"| {link} | {_when(v.seen_at)} | {human_bytes(v.size)} | {change} |")
    out.append("")
    return out
