"""`lean_dataclass` behaves as `dataclass` does: the same repr, equality, hashing (frozen) or
unhashability (not frozen), frozen assignment refused, fields, defaults, slots, orjson output and
methods the class defines itself kept; only the generated source text is gone."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harn_ls.util.lean_dataclass import lean_dataclass


def pair(**options):
    """The same class body made by `dataclass` and by `lean_dataclass`."""

    def body():
        class Thing:
            """A thing."""

            name: str
            size: int = 0
            tags: list = field(default_factory=list)
            note: str = field(default="", compare=False, repr=False)

        return Thing

    return dataclass(**options)(body()), lean_dataclass(**options)(body())


def _hash_or_error(obj):
    try:
        return hash(obj)
    except TypeError as exc:
        return str(exc)


OPTIONS = [{}, {"slots": True}, {"frozen": True}, {"frozen": True, "slots": True}]
VALUES = st.tuples(st.text(max_size=5), st.integers(-3, 3), st.one_of(st.lists(st.integers(0, 2), max_size=2),
                                                                   st.tuples(st.integers(0, 2))), st.text(max_size=3))


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@given(a=VALUES, b=VALUES)
def test_same_repr_equality_and_hash_as_dataclass(options, a, b):
    std, lean = pair(**options)
    for cls in (std, lean):
        cls.__qualname__ = "Thing"  # (the two bodies differ only in where they were made)
    x_std, y_std, x_lean, y_lean = std(*a), std(*b), lean(*a), lean(*b)
    assert repr(x_lean) == repr(x_std)
    assert (x_lean == y_lean) == (x_std == y_std)
    assert (x_lean != y_lean) == (x_std != y_std)
    assert (x_lean == lean(*a)) and x_lean != x_std  # another class is never equal
    if options.get("frozen"):
        assert _hash_or_error(x_lean) == _hash_or_error(x_std)  # the same tuple hashed (a list: refused by both)
        with pytest.raises(dataclasses.FrozenInstanceError):
            x_lean.size = 9
    else:
        assert lean.__hash__ is None and std.__hash__ is None
        with pytest.raises(TypeError):
            hash(x_lean)
    assert [f.name for f in dataclasses.fields(lean)] == [f.name for f in dataclasses.fields(std)]
    assert orjson.dumps(x_lean) == orjson.dumps(x_std)
    assert hasattr(lean, "__slots__") == hasattr(std, "__slots__")


def test_recursion_and_defaults():
    @lean_dataclass
    class Node:
        """A node."""

        value: int
        children: list = field(default_factory=list)

    root = Node(1)
    root.children.append(root)
    assert repr(root) == "test_recursion_and_defaults.<locals>.Node(value=1, children=[...])"
    assert Node(2).children == [] and Node(2).children is not Node(2).children


def test_methods_of_the_body_are_kept_and_generated_options_refused():
    @lean_dataclass(frozen=True)
    class Own:
        """Its own equality."""

        key: str

        def __eq__(self, other):
            return isinstance(other, Own) and self.key.lower() == other.key.lower()

        def __hash__(self):
            return hash(self.key.lower())

        def __repr__(self):
            return "own"

    assert Own("A") == Own("a") and hash(Own("A")) == hash(Own("a")) and repr(Own("x")) == "own"
    with pytest.raises(TypeError):
        lean_dataclass(eq=False)
