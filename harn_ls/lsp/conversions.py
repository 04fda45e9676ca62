"""Warm pygls's cattrs converter after start, so the first request of each kind is as fast as the next.

cattrs writes and compiles the code that turns a message into lsprotocol objects (and an object
back into JSON-ready dicts) on the first use of each type: 2-14 ms per message type, paid by the
first hover, code lens or didOpen after a server start. `warm_steps` asks the converter for those
hooks ahead of time, one type per step, in the settle after recall is ready. Asking only fills the
converter's dispatch cache with the hooks first use would have made, so no message is read or
written any differently.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Iterator
from typing import Any

from lsprotocol import types

# Client messages pygls structures whether or not we handle them (it answers cancellations itself).
_CLIENT_EXTRA = (types.CANCEL_REQUEST, types.TEXT_DOCUMENT_DID_SAVE)
# What the server sends on its own: notifications and the requests whose answers it reads.
_SERVER_SENT = (types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE,
                types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH,
                types.WORKSPACE_CONFIGURATION)


def client_methods(protocol: Any) -> list[str]:
    """Every method a client message may carry after start that this server reads: handled ones
    first. Not initialize (its conversions were made when it came: the warm-up would only make
    its result's again, ~30 ms, see the second pass in `warm_steps`) nor the notebook ones (no
    notebook sync is advertised, so no client sends them)."""
    fm = protocol.fm
    methods = list(fm.features) + [m for m in fm.builtin_features if m not in fm.features]
    methods += [m for m in _CLIENT_EXTRA if m not in methods]
    return [m for m in methods if m != types.INITIALIZE and not m.startswith("notebookDocument/")]


def attrs_classes_in(annotation: Any, seen: set | None = None) -> Iterator[type]:
    """The attrs classes an annotation names, through Optional / Union / list / dict / aliases."""
    seen = set() if seen is None else seen
    if isinstance(annotation, type) and hasattr(annotation, "__attrs_attrs__"):
        if annotation not in seen:
            seen.add(annotation)
            yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from attrs_classes_in(arg, seen)
    value = getattr(annotation, "__value__", None)  # a `type X = ...` alias
    if value is not None:
        yield from attrs_classes_in(value, seen)


def _field_classes(cls: Any, seen: set, depth: int = 2) -> Iterator[type]:
    """The attrs classes `cls`'s fields may hold, `depth` levels down (each once per `seen`): deep
    enough for a hover's or a lens's parts; a code action's workspace edit would add ~200 types
    (0.4 s of CPU) that our actions seldom send."""
    if depth <= 0:
        return
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: its field is left to first use
        return
    for annotation in hints.values():
        for inner in attrs_classes_in(annotation, seen):
            yield inner
            yield from _field_classes(inner, seen, depth - 1)


def _result_classes(response_type: Any, seen: set) -> list[type]:
    """The lsprotocol classes a response of this type may hold in its result, at any depth. The
    server answers with a plain envelope (see `response_converter`), and a union-typed field is
    unstructured by its value's class, so each of them has a hook of its own to make."""
    if not hasattr(response_type, "__attrs_attrs__"):
        return []
    return [cls for cls in _field_classes(response_type, seen) if cls is not response_type]


def warm_steps(protocol: Any) -> list[Callable[[], None]]:
    """One step per type: fetch (and so build and cache) the converter's hook for it. Each step
    runs on the event loop, where pygls converts messages, so no conversion runs beside it."""
    converter = protocol.converter  # (HarnProtocol keeps the one it was made with: no pygls internals)
    structure: list[Any] = []
    # the JSON containers first: a value typed as any JSON (a lens's `data`) is unstructured by its
    # own class, and the first dict or list met that way registers a hook too (see below)
    unstructure: list[Any] = [dict, list]

    def add(hooks: list[Any], cls: Any) -> None:
        if cls is not None and cls not in hooks:
            hooks.append(cls)

    seen: set = set()
    for method in client_methods(protocol):
        message_type, result_type = (types.METHOD_TO_TYPES.get(method, ()) + (None, None))[:2]
        add(structure, message_type)
        for cls in _result_classes(result_type, seen):
            add(unstructure, cls)
    for method in _SERVER_SENT:
        message_type, result_type = (types.METHOD_TO_TYPES.get(method, ()) + (None, None))[:2]
        add(unstructure, message_type)
        for cls in _field_classes(message_type, seen) if message_type is not None else ():
            add(unstructure, cls)
        add(structure, result_type)
    # Twice through the unstructure hooks: cattrs empties that cache each time it meets a new list
    # type (it registers the list's hook), dropping the hooks made before. On the second pass every
    # list type is registered, so the hooks dropped are made again and stay; the rest are cache hits.
    return ([functools.partial(converter.get_structure_hook, cls) for cls in structure]
            + [functools.partial(converter.get_unstructure_hook, cls) for cls in unstructure * 2])
