"""`lean_dataclass`: a dataclass whose `__repr__`, `__eq__` and `__hash__` are shared functions instead
of ones generated from source text.

Python's `dataclass` writes each class's methods as source and compiles it at import (~1.1 M
instructions a class for `__repr__` and `__eq__`, ~1.5 M for a frozen one's `__hash__` too); a warm
one-shot `inspect --json` creates 27 dataclasses before it reads anything. The class stays a real
dataclass (`dataclasses.fields`, orjson's dataclass output, `__init__` as generated, frozen
`__setattr__`); only these three methods are the shared ones below, with the same behaviour:
`repr` lists the `repr=True` fields as `Name(a=1, b='x')` (recursion shown as ...), `==` compares
the `compare=True` fields as a tuple when both objects are of the very same class (else
NotImplemented), a frozen class hashes that tuple and any other one is unhashable, as `eq=True` makes
it. A method the class body defines itself is kept, as `dataclass` keeps it.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload

if TYPE_CHECKING:
    from typing import TypeAlias

    # the attributes of an object as a tuple (operator.attrgetter, or one of the lambdas below)
    _TupleGetter: TypeAlias = Callable[[object], tuple[Any, ...]]

_T = TypeVar("_T")


def _tuple_getter(names: tuple[str, ...]) -> _TupleGetter:
    """A function giving the named attributes of an object as a tuple (even for one or none)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _methods(cls: type, frozen: bool) -> None:
    fields = dataclasses.fields(cls)
    shown = tuple(f.name for f in fields if f.repr)
    compared = _tuple_getter(tuple(f.name for f in fields if f.compare))
    hashed = _tuple_getter(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))
    own = cls.__dict__

    @reprlib.recursive_repr()
    def __repr__(self: object) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(hashed(self))

    # the class whose methods are replaced: as `type`, a type checker reads `cls.__eq__` as type's own method
    # and refuses the assignment
    target: Any = cls
    if "__repr__" not in own:
        __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
        target.__repr__ = __repr__
    if "__eq__" not in own:
        __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
        target.__eq__ = __eq__
        if "__hash__" not in own or own["__hash__"] is None:
            # as dataclass(eq=True): frozen hashes its fields, anything else cannot be hashed
            target.__hash__ = __hash__ if frozen else None


# The overloads name the options `dataclass` takes that stay open here (repr, eq, order and unsafe_hash do
# not: the implementation refuses them at run time, a type checker already at the call).
@overload
def lean_dataclass(cls: type[_T], /) -> type[_T]: ...
@overload
def lean_dataclass(cls: None = None, /, *, init: bool = True, frozen: bool = False, match_args: bool = True,
                   kw_only: bool = False, slots: bool = False, weakref_slot: bool = False) -> Callable[[type[_T]], type[_T]]: ...


# dataclass_transform: type checkers see the fields and the generated __init__ as for @dataclass
@dataclass_transform(frozen_default=False)
def lean_dataclass(cls: type[_T] | None = None, /, **options: bool) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """`dataclasses.dataclass(cls, **options)` with the shared `__repr__` / `__eq__` / `__hash__`
    (see the module); `repr`, `eq`, `order`, `unsafe_hash` must stay at their defaults."""
    if {"repr", "eq", "order", "unsafe_hash"} & set(options):
        raise TypeError("lean_dataclass makes __repr__ and __eq__ itself")

    def wrap(c: type[_T]) -> type[_T]:
        c = dataclasses.dataclass(c, repr=False, eq=False, **options)
        _methods(c, bool(options.get("frozen")))
        return c

    return wrap if cls is None else wrap(cls)
