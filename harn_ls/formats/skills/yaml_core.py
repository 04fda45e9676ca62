"""The hardened YAML loader for SKILL.md frontmatter (§F.2).

YAML is parsed with PyYAML but with YAML 1.2 core-schema scalars, because
Harn uses serde_yaml: `yes`/`no`/`on`/`off` and dates stay strings, `0777`
is decimal, `<<` is an ordinary key. Depth, node count and alias expansion
are bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import cast

from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.error import Mark
from yaml.events import AliasEvent, Event
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from .common import MAX_YAML_DEPTH, MAX_YAML_NODES

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

    # (from Parser, the loader's other half: declared for the checker, never assigned)
    peek_event: Callable[[], Event]

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()
        if not isinstance(event, AliasEvent):
            self._nodes += 1
            if self._nodes > MAX_YAML_NODES:
                # (the pure-Python parser marks every event)
                raise _YamlLimitError("YAML frontmatter has too many nodes", cast(Mark, event.start_mark).line)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _YamlLimitError(
                    f"YAML frontmatter nests deeper than {MAX_YAML_DEPTH} levels", cast(Mark, event.start_mark).line
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

    # (from Reader, the loader's other half: declared for the checker, never assigned)
    get_mark: Callable[[], Mark]

    def fetch_flow_collection_start(self, TokenClass: type) -> None:  # noqa: N803 (PyYAML's name)
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


# (types-PyYAML bounds a constructor's loader to PyYAML's own loader classes; this one is ours)
_HardenedLoader.add_constructor("tag:yaml.org,2002:int", _construct_core_int)  # type: ignore[type-var]
_HardenedLoader.add_constructor("tag:yaml.org,2002:float", _construct_core_float)  # type: ignore[type-var]


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
        items: list[Node] = node.value
        return items
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
