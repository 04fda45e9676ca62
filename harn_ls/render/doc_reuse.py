"""The last few run and transcript documents made from big files, given again while nothing they
were made from has changed.

Such a document reads its run record (up to the 64 MB cap) and the run's turn log: a 10 MB record
took 0.3 s for its run page and 0.5-0.9 s for a transcript page, on every open and, worse, every
time a change elsewhere among the runs made the server check whether an open document's text had
changed (lsp/documents.refresh_changed), each time on the project thread, ahead of any hover.

A document is given again only when its page, its settings, the model objects it was made from
(compared by identity: the workspace makes new ones whenever it reads their file again) and the
stamps (device, inode, size, mtime and ctime, taken before it was made) of the files it reads are
all the same: the run record, and every place its turn log may be (`<stem>-llm/` and `<id>-llm/`
next to it, stamped as absent when missing, so that one appearing counts as a change). A record
that cannot be stamped is never reused, nor is a transcript with assets (its page shows image
files, which are not stamped). A file changed while a document was made has a new stamp by then:
the document is made again next time. Bounded: MAX_DOCS documents of at most the response cap
each, only those made from REUSE_MIN_BYTES of files or more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harn_ls.formats.runs import llm_log_places
from harn_ls.util.safe_read import file_stamp

MAX_DOCS = 4
REUSE_MIN_BYTES = 1 << 20  # smaller files are read again faster than a page is worth holding
REUSED_KINDS = frozenset({"runs", "transcripts"})


def sources(ws: Any, kind: str, name: str) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """(model objects, file stamps) a `runs` or `transcripts` document of `name` is made from; None
    when it is not worth reusing or cannot be told (then it is simply made)."""
    if kind == "runs":
        run = ws.runs.get(name)
        if run is None:
            return None
        objects: tuple[Any, ...] = (run,)
        files = [run.path]
    elif kind == "transcripts":
        entry = ws.transcripts.get(name)
        if entry is None or entry.asset_count:
            return None
        run = ws.runs.get(entry.run_id) if entry.run_id else None
        objects = (entry, run)
        files = [entry.path]
    else:
        return None
    if run is not None:  # every place its turn log may be (a record read whole looks for it again)
        files += llm_log_places(run.path, run.id)
    stamps = tuple(map(file_stamp, files))
    if stamps[0] is None or sum(s[2] for s in stamps if s is not None) < REUSE_MIN_BYTES:
        return None
    return objects, stamps


class DocReuse:
    """The documents kept (most recently used last), keyed by their page and settings."""

    def __init__(self) -> None:
        self._docs: dict[tuple[Any, ...], tuple[tuple[Any, ...], tuple[Any, ...], str]] = {}
        self.made = 0  # documents made (not given again): what the tests count

    def get_or_make(self, key: tuple[Any, ...], made_of: tuple[tuple[Any, ...], tuple[Any, ...]] | None,
                    make: Callable[[], str]) -> str:
        if made_of is None:
            self.made += 1
            return make()
        objects, stamps = made_of
        kept = self._docs.pop(key, None)
        if kept is not None and kept[1] == stamps and len(kept[0]) == len(objects) \
                and all(a is b for a, b in zip(kept[0], objects, strict=True)):
            self._docs[key] = kept
            return kept[2]
        text = make()
        self.made += 1
        self._docs[key] = (objects, stamps, text)
        while len(self._docs) > MAX_DOCS:
            self._docs.pop(next(iter(self._docs)))
        return text
