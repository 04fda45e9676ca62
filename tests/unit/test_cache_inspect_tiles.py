"""The cached `inspect --json` facts (state_rows.fact_inspect_payload) are only printed when their
fragments tile the body exactly as the header says, with string ids and integer ends. Any set of
facts round-trips; a header or body that does not fit is refused."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harn_ls.cache.rows import (
    FACT_SEPARATOR,
    fact_inspect_fragment,
    fact_inspect_payload,
    read_fact_inspect_body,
    read_fact_inspect_payload,
    split_fact_body,
)
from harn_ls.cache.store import CacheInvalid

# text that looks like the layout itself: separators, braces, newlines, indentation
TRICKY = st.text(alphabet=st.sampled_from(list("{}[],:\n\r\t \"\\ab") + ["\u2028", "é"]), max_size=12)


def fact(fid: str, claim: str, ranges: list[tuple[str, int, int]]):
    evidence = [SimpleNamespace(range=SimpleNamespace(path=p, start=a, end=b)) for p, a, b in ranges]
    evidence.append(SimpleNamespace(range=None))
    return SimpleNamespace(id=fid, kind="k", claim=claim, confidence=0.5, namespace="ns", evidence=evidence)


FACTS = st.lists(st.builds(fact, TRICKY, TRICKY, st.lists(st.tuples(TRICKY, st.integers(1, 9), st.integers(1, 9)),
                                                          max_size=3)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(FACTS)
def test_any_facts_round_trip(facts):
    ids, ends, body = read_fact_inspect_payload(fact_inspect_payload(facts), len(facts))
    ordered = sorted(facts, key=lambda f: f.id)
    assert ids == [f.id for f in ordered]
    assert split_fact_body(body, ends) == [fact_inspect_fragment(f) for f in ordered]
    assert all(type(e) is int for e in ends)


@settings(max_examples=200, deadline=None)
@given(FACTS.filter(lambda fs: len(fs) >= 1), st.data())
def test_a_header_that_does_not_fit_its_body_is_refused(facts, data):
    head, _, body = fact_inspect_payload(facts).partition(b"\n")
    doc = orjson.loads(head)
    i = data.draw(st.integers(0, len(facts) - 1))
    doc["ends"][i] += data.draw(st.sampled_from([-1, 1, 2, len(FACT_SEPARATOR)]))
    with pytest.raises(CacheInvalid):
        read_fact_inspect_payload(orjson.dumps(doc) + b"\n" + body, len(facts))


@pytest.mark.parametrize("spell", [float, str, bool, lambda e: [e]])
def test_ends_that_are_not_integers_are_refused(spell):
    facts = [fact("a", "x", []), fact("b", "y", [("f.py", 1, 2)])]
    head, _, body = fact_inspect_payload(facts).partition(b"\n")
    doc = orjson.loads(head)
    ends = [doc["ends"][0], spell(doc["ends"][1])]
    with pytest.raises(CacheInvalid):
        read_fact_inspect_payload(orjson.dumps({"ids": doc["ids"], "ends": ends}) + b"\n" + body, 2)


@pytest.mark.parametrize("bad_id", [7, None, ["a"], True])
def test_ids_that_are_not_strings_are_refused(bad_id):
    facts = [fact("a", "x", []), fact("b", "y", [])]
    head, _, body = fact_inspect_payload(facts).partition(b"\n")
    doc = orjson.loads(head)
    with pytest.raises(CacheInvalid):
        read_fact_inspect_payload(orjson.dumps({"ids": ["a", bad_id], "ends": doc["ends"]}) + b"\n" + body, 2)


@pytest.mark.parametrize("damage", ["boundary_inside", "no_open_brace", "no_close_brace", "extra_entry", "empty_body"])
def test_a_body_that_is_not_the_counted_entries_is_refused(damage):
    facts = [fact("a", "x", []), fact("b", "y", [("f.py", 1, 2)]), fact("c", "z", [])]
    head, _, body = fact_inspect_payload(facts).partition(b"\n")
    if damage == "boundary_inside":  # raw bytes no orjson entry holds, splitting the first entry in two
        body = body.replace(b'"x"', b'"x}' + FACT_SEPARATOR + b'{"', 1)
    elif damage == "no_open_brace":
        body = b" " + body[1:]
    elif damage == "no_close_brace":
        body = body[:-1] + b" "
    elif damage == "extra_entry":
        body = body + FACT_SEPARATOR + b"{}"
    else:
        body = b""
    with pytest.raises(CacheInvalid):
        read_fact_inspect_payload(head + b"\n" + body, 3)


def test_no_facts_means_an_empty_body():
    assert read_fact_inspect_payload(fact_inspect_payload([]), 0) == ([], [], b"")
    with pytest.raises(CacheInvalid):
        read_fact_inspect_payload(orjson.dumps({"ids": [], "ends": []}) + b"\n{}", 0)


# ---------------------------------------------------------------- the body printed whole
@settings(max_examples=300, deadline=None)
@given(FACTS)
def test_a_body_printed_whole_is_the_checked_body(facts):
    payload = fact_inspect_payload(facts)
    assert read_fact_inspect_body(payload, len(facts)) == read_fact_inspect_payload(payload, len(facts))[2]


@settings(max_examples=200, deadline=None)
@given(FACTS.filter(lambda fs: len(fs) >= 1), st.sampled_from(["boundary_inside", "no_open_brace", "no_close_brace",
                                                                "extra_entry", "one_entry_less", "empty_body"]))
def test_a_body_printed_whole_that_is_not_the_counted_entries_is_refused(facts, damage):
    payload = fact_inspect_payload(facts)
    head, _, body = payload.partition(b"\n")
    if damage == "boundary_inside":  # raw bytes no orjson entry holds, splitting the first entry in two
        i = body.index(b'"id": ')
        body = body[:i] + b'"x": 1' + b"}" + FACT_SEPARATOR + b"{" + body[i:]
    elif damage == "no_open_brace":
        body = b" " + body[1:]
    elif damage == "no_close_brace":
        body = body[:-1] + b" "
    elif damage == "extra_entry":
        body = body + FACT_SEPARATOR + b"{}"
    elif damage == "one_entry_less":
        body = body[: read_fact_inspect_payload(payload, len(facts))[1][-2]] if len(facts) > 1 else b""
    else:
        body = b""
    with pytest.raises(CacheInvalid):
        read_fact_inspect_body(head + b"\n" + body, len(facts))


def test_no_facts_printed_whole_means_an_empty_body():
    assert read_fact_inspect_body(fact_inspect_payload([]), 0) == b""
    for bad in (orjson.dumps({"ids": [], "ends": []}) + b"\n{}", b"no header line"):
        with pytest.raises(CacheInvalid):
            read_fact_inspect_body(bad, 0)
