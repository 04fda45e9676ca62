"""One registry for every diagnostic the server publishes, keyed by (source, uri).

Each source (a folder's state problems, typecheck-probe results, ...) sets or
clears its own entries; the registry merges what all sources hold for a URI and
publishes that list, only when it changed. Sources never read each other, so
none of them imports another to merge.

No pygls here: the publish callback (and the URI normaliser) come from the
server, so this is testable on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

D = TypeVar("D")


class DiagnosticsRegistry(Generic[D]):
    def __init__(self, publish: Callable[[str, list[D]], None],
                 normalize: Callable[[str], str] = lambda uri: uri) -> None:
        self._publish = publish
        self._normalize = normalize
        self._entries: dict[str, dict[str, tuple[D, ...]]] = {}  # uri -> source -> diagnostics
        self._order: dict[str, int] = {}  # source -> rank: merged lists follow first registration

    # ------------------------------------------------------------ reading
    def get(self, source: str, uri: str) -> list[D]:
        return list(self._entries.get(self._normalize(uri), {}).get(source, ()))

    def uris(self, source: str) -> set[str]:
        return {uri for uri, by_source in self._entries.items() if source in by_source}

    def merged(self, uri: str) -> list[D]:
        by_source = self._entries.get(self._normalize(uri), {})
        out: list[D] = []
        for source in sorted(by_source, key=self._order.__getitem__):
            out.extend(by_source[source])
        return out

    # ------------------------------------------------------------ writing
    def set(self, source: str, uri: str, diagnostics: Iterable[D]) -> bool:
        """Replace what `source` says about `uri`; publishes (and returns True) when that changed."""
        uri = self._normalize(uri)
        new = tuple(diagnostics)
        self._order.setdefault(source, len(self._order))
        by_source = self._entries.get(uri, {})
        if by_source.get(source, ()) == new:  # empty lists are never stored: absent == ()
            return False
        if new:
            self._entries.setdefault(uri, {})[source] = new
        else:
            by_source.pop(source, None)
            if not by_source:
                self._entries.pop(uri, None)
        self._publish(uri, self.merged(uri))
        return True

    def clear(self, source: str, uri: str) -> bool:
        """Drop what `source` says about `uri`; True when it had something there."""
        return self.set(source, uri, ())

    def replace_source(self, source: str, by_uri: Mapping[str, Iterable[D]]) -> int:
        """Everything `source` says now: URIs it no longer mentions are cleared.
        Returns how many URIs were published."""
        wanted = {self._normalize(u): tuple(d) for u, d in by_uri.items()}
        sent = 0
        for uri in self.uris(source) - wanted.keys():
            sent += self.clear(source, uri)
        for uri, diags in wanted.items():
            sent += self.set(source, uri, diags)
        return sent

    def clear_source(self, source: str) -> int:
        return self.replace_source(source, {})
