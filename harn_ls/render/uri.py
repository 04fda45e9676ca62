"""`harn-state:` URIs and the render settings: the leaf every renderer imports (nothing from
the rest of `harn_ls.render`), so the package itself never sits in an import cycle."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit

SCHEME = "harn-state"


class UriError(ValueError):
    """The URI is malformed or names nothing in this project."""


@dataclass(frozen=True)
class RenderSettings:
    """The client settings that change what documents show."""

    show_private: bool = False
    min_confidence: float = 0.0
    page_size: int = 200  # list pages (memory records)
    transcript_window_bytes: int = 200_000
    include_suppressed: bool = False
    skill_root: str | None = None  # where Accept writes a skill (setting `harnState.skillRoot`); None = default


MAX_QUERY_INT = 10**9  # a page, a version, k: far above any real value, far below what overflows


@dataclass(frozen=True)
class StateUri:
    """A parsed `harn-state:` URI."""

    kind: str  # index runs transcripts checkpoints memory facts proposals skills sessions recall
    name: str  # "" for index / recall
    query: dict[str, str]

    def page(self) -> int:
        """`?page=N` (0 when absent); a page past the last shows the last or an empty page."""
        return self.number("page", 0, 0, MAX_QUERY_INT)

    def number(self, key: str, default: int, low: int, high: int) -> int:
        """`?key=N` as an int in [low, high] (`default` when absent or empty). Anything else — not a
        number, `99999999999999999999` — is refused with one line (UriError), never an OverflowError
        from deeper down (a slice, a SQLite parameter)."""
        raw = self.query.get(key, "")
        if raw == "":
            return default
        text = raw.strip()
        # ASCII digits with at most one sign: `--1`, `+-3`, `²`, `١٢` are refused here, not by int()
        if not _WHOLE_NUMBER.fullmatch(text) or not low <= int(text) <= high:
            raise UriError(f"refused: ?{key}={raw[:40]!r} (expected a whole number from {low} to {high})")
        return int(text)


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,19}")

_KINDS = ("runs", "transcripts", "checkpoints", "memory", "facts", "proposals", "skills", "sessions",
          "events", "hitl", "receipts", "crystallization", "compare")
# one-document kinds (the index, recall; issue 16: the rest): path -> kind
_SINGLETONS = {"/index.md": "index", "/recall.md": "recall", "/events.md": "events_index", "/hitl.md": "hitl_index",
               "/store.md": "store", "/worktrees.md": "worktrees",
               "/newer-state.md": "newer_state"}  # issue 28: LLM cache, selection, guard models, snapshot
_SINGLETON_PATHS = {v: k for k, v in _SINGLETONS.items()}
# fullmatch, not `$`: `$` also matches before a trailing "\n", so "facts/x\n" would pass.
_SAFE_NAME = re.compile(r"[^\x00-\x1f\x7f]+")


def parse_uri(uri: str) -> StateUri:
    parts = urlsplit(uri)
    if parts.scheme != SCHEME:
        raise UriError(f"not a {SCHEME}: URI: {uri}")
    if any(ord(c) < 0x20 or c == "\x7f" for c in uri):
        raise UriError(f"refused: {uri!r} (control characters in a URI)")
    path = unquote(parts.path)
    raw_query = parts.query
    if "=" not in raw_query and "%3d" in raw_query.lower():
        raw_query = unquote(raw_query)  # VS Code encodes the whole query of a custom-scheme URI
    query = {k: v[-1] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
    if parts.netloc:  # harn-state://x/... — treat the authority as the first segment
        path = "/" + parts.netloc + path
    if path in ("/", ""):
        return StateUri("index", "", query)
    if path in _SINGLETONS:
        return StateUri(_SINGLETONS[path], "", query)
    if not path.startswith("/") or not path.endswith(".md"):
        raise UriError(f"unknown document: {uri}")
    head, _, rest = path[1:-3].partition("/")
    if head not in _KINDS or not rest:
        raise UriError(f"unknown document: {uri}")
    segments = rest.split("/")
    # Backslashes count as separators here (Harn's namespace rule, Windows paths): `a\..\b` is refused too.
    if any(s in ("", ".", "..") for s in segments) or any(s in (".", "..") for s in rest.replace("\\", "/").split("/")) \
            or not _SAFE_NAME.fullmatch(rest):
        raise UriError(f"refused: {uri} (path segments must not be empty, '.', '..' or control characters)")
    if head == "compare" and len(segments) != 2:
        raise UriError(f"unknown document: {uri} (expected compare/<runA>/<runB>.md)")
    if head not in ("memory", "compare") and len(segments) != 1:
        raise UriError(f"unknown document: {uri}")
    return StateUri(head, rest, query)


def make_uri(kind: str, name: str = "", **query: str) -> str:
    if kind in _SINGLETON_PATHS:
        base = f"{SCHEME}:{_SINGLETON_PATHS[kind]}"
    else:
        base = f"{SCHEME}:/{kind}/{quote(name, safe='/:@-_.~')}.md"
    q = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in query.items() if v not in (None, ""))
    return base + ("?" + q if q else "")


def with_root(uri: str, root: str) -> str:
    """`uri` naming the project at `root` (`?root=`): in a workspace that serves several projects a
    document, a link or a lens must say whose state it shows. A URI that names one already is kept."""
    if not uri.startswith(SCHEME + ":"):
        return uri
    base, hash_, fragment = uri.partition("#")
    path, q, query = base.partition("?")
    if any(part.split("=", 1)[0] == "root" for part in query.split("&") if part):
        return uri
    query = (query + "&" if query else "") + "root=" + quote(root, safe="")
    return f"{path}?{query}{hash_}{fragment}"


# A link target as `render.markdown.link` writes it: `)` and white space are always percent-encoded.
_LINK_TARGET = re.compile(r"\]\((" + re.escape(SCHEME) + r":[^)\s]*)\)")


def links_with_root(markdown: str, root: str) -> str:
    """Every `harn-state:` link target of a rendered document or hover made to name `root`."""
    if SCHEME not in markdown:
        return markdown
    return _LINK_TARGET.sub(lambda m: "](" + with_root(m.group(1), root) + ")", markdown)
