"""Splitting a SKILL.md into frontmatter and body, and the hardened YAML loader (§F.2).

YAML is parsed with PyYAML but with YAML 1.2 core-schema scalars, because
Harn uses serde_yaml: `yes`/`no`/`on`/`off` and dates stay strings, `0777`
is decimal, `<<` is an ordinary key. Depth, node count and alias expansion
are bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from .common import MAX_YAML_DEPTH, MAX_YAML_NODES, _rust_trim


# --------------------------------------------------------------------------
# Splitting (§F.2, later Harn version)


@dataclass(frozen=True)
class _Split:
    frontmatter: str | None
    body: str
    yaml_line: int  # 1-based file line of the first YAML line (0 = no frontmatter)
    body_line: int  # 1-based file line where the body starts


def _lines_with_ends(text: str) -> list[str]:
    # Split on "\n" only, like Rust's str::lines(); str.splitlines() would also
    # break on \x0b, \x1c, U+2028 ... and disagree with Harn.
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _split(text: str) -> _Split:
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _lines_with_ends(text)
    offset = 0
    opener = -1
    for index, line in enumerate(lines):
        stripped = _rust_trim(line)
        if opener < 0:
            if not stripped:
                offset += len(line)
                continue
            if stripped != "---":
                return _Split(None, text, 0, 1)
            opener = index
            offset += len(line)
            fm_start = offset
            continue
        if stripped == "---":
            return _Split(text[fm_start:offset], text[offset + len(line):], opener + 2, index + 2)
        offset += len(line)
    # No opener at all (blank file) or unterminated: the whole file is body.
    return _Split(None, text, 0, 1)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter YAML or None, body) exactly as Harn's later splitter.

    An optional BOM and leading blank lines are skipped; the first non-blank
    line must be `---` after trimming, the next such line closes. CRLF files
    keep their `\\r\\n` inside both parts. No opener, or no closer: `None` and
    the whole (BOM-less) text as body. `---\\n---\\n` gives `""`, not None.
    """
    split = _split(text)
    return split.frontmatter, split.body


# --------------------------------------------------------------------------
# Hardened YAML loading


class _YamlLimitError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line  # 0-based within the YAML text


class _CoreResolver(BaseResolver):
    """YAML 1.2 core schema, which is what serde_yaml (Harn) resolves."""


_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


class _LimitedComposer(Composer):
    """Composer that bounds nesting depth and node count while building."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent, index):  # type: ignore[override]
        event = self.peek_event()
        if not isinstance(event, AliasEvent):
            self._nodes += 1
            if self._nodes > MAX_YAML_NODES:
                raise _YamlLimitError("YAML frontmatter has too many nodes", event.start_mark.line)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _YamlLimitError(
                    f"YAML frontmatter nests deeper than {MAX_YAML_DEPTH} levels", event.start_mark.line
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _LimitedScanner(Scanner):
    """Scanner that refuses deep `[`/`{` nesting before the composer sees it.

    PyYAML's scanner keeps one pending simple key per flow level and rescans
    them for every token, so megabytes of `[[[[` cost quadratic time long
    before the composer's depth check would run.
    """

    def fetch_flow_collection_start(self, TokenClass):  # type: ignore[override]
        if self.flow_level >= MAX_YAML_DEPTH:
            raise _YamlLimitError(
                f"YAML frontmatter nests deeper than {MAX_YAML_DEPTH} levels", self.get_mark().line
            )
        super().fetch_flow_collection_start(TokenClass)


class _HardenedLoader(Reader, _LimitedScanner, Parser, _LimitedComposer, SafeConstructor, _CoreResolver):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        _LimitedScanner.__init__(self)
        Parser.__init__(self)
        _LimitedComposer.__init__(self)
        SafeConstructor.__init__(self)
        _CoreResolver.__init__(self)


def _construct_core_int(loader: SafeConstructor, node: ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    try:
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)
    except ValueError:  # explicit `!!int` with a YAML 1.1 spelling
        return SafeConstructor.construct_yaml_int(loader, node)


def _construct_core_float(loader: SafeConstructor, node: ScalarNode) -> float:
    text = str(loader.construct_scalar(node))
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return float("-inf") if lowered.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    try:
        return float(text)
    except ValueError:
        return SafeConstructor.construct_yaml_float(loader, node)


_HardenedLoader.add_constructor("tag:yaml.org,2002:int", _construct_core_int)
_HardenedLoader.add_constructor("tag:yaml.org,2002:float", _construct_core_float)


def _check_expansion(root: Node) -> None:
    """Reject alias graphs that expand past MAX_YAML_NODES or loop.

    PyYAML shares aliased nodes, so loading a billion-laughs file is cheap,
    but anything that walks the result (type checks, rendering, JSON) would
    expand it. Count the expanded size without expanding: memoised DFS.
    """
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            total = 1
            for child in _children(node):
                total += sizes[id(child)]
                if total > MAX_YAML_NODES:
                    raise _YamlLimitError(
                        "YAML aliases expand to more than "
                        f"{MAX_YAML_NODES} nodes (alias bomb?)",
                        node.start_mark.line,
                    )
            sizes[key] = total
            in_progress.discard(key)
            continue
        if key in sizes:
            continue
        if key in in_progress:
            raise _YamlLimitError("YAML alias refers to itself (recursive structure)", node.start_mark.line)
        in_progress.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in in_progress:
                raise _YamlLimitError("YAML alias refers to itself (recursive structure)", child.start_mark.line)
            if child_key not in sizes:
                stack.append((child, False))


def _children(node: Node) -> Iterable[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return ()


def _compose(yaml_text: str) -> tuple[Node | None, _HardenedLoader]:
    loader = _HardenedLoader(yaml_text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is not None:
        _check_expansion(node)
    return node, loader
