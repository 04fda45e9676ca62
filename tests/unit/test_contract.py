"""The one contract: harn_ls/contract.py and vscode-extension/src/protocol.ts agree, and command
arguments are parsed into their classes with errors that name the field.

protocol.ts is read with three documented regexes (see the comment at its top):
  * `export const NAME = 'text';`                       -> a string constant
  * `export const NAME = { key: 'value', ... } as const;` -> a name table
  * `export interface NAME {` ... a line `}`            -> fields `name?: type;`, one per line
"""

from __future__ import annotations

import os
import re
import types
import typing
from typing import Any

import attrs
import pytest

from harn_ls import contract as C

PROTOCOL_TS = os.path.join(os.path.dirname(__file__), "..", "..", "vscode-extension", "src", "protocol.ts")

STRING_CONST = re.compile(r"^export const (\w+) = '([^']*)';$", re.M)
TABLE = re.compile(r"^export const (\w+) = \{\n(.*?)\n\} as const;$", re.M | re.S)
TABLE_ENTRY = re.compile(r"^\s*(\w+): '([^']*)',", re.M)
INTERFACE = re.compile(r"^export interface (\w+) \{\n(.*?)^\}$", re.M | re.S)
FIELD = re.compile(r"^\s*(\w+)(\??): (.+);$", re.M)
STRING_UNION = re.compile(r"^export type (\w+) = ('[^']*'(?: \| '[^']*')*);$", re.M)

# Interfaces of the extension alone (what it sends at initialize comes from lsp/settings.py).
TS_ONLY = {"InitializationOptions"}
# Classes only the client sends: a field with a default may be left out.
CLIENT_SENT = {*C.COMMAND_ARGS.values(), C.Position, C.Range, C.TreeParams}


def _ts() -> str:
    with open(PROTOCOL_TS, encoding="utf-8") as fh:
        return fh.read()


def ts_interfaces(text: str) -> dict[str, dict[str, tuple[bool, str]]]:
    """interface -> field -> (optional, type text)"""
    out = {}
    for name, body in INTERFACE.findall(text):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        out[name] = {f: (opt == "?", t.strip()) for f, opt, t in FIELD.findall(body)}
    return out


def ts_tables(text: str) -> dict[str, dict[str, str]]:
    return {name: dict(TABLE_ENTRY.findall(body)) for name, body in TABLE.findall(text)}


def ts_type(tp: Any) -> str:
    """The TypeScript spelling of a Python field type, as protocol.ts writes it."""
    if tp is str:
        return "string"
    if tp is int:
        return "number"
    if tp is bool:
        return "boolean"
    if tp is Any:
        return "unknown"
    if tp is type(None):
        return "null"
    if attrs.has(tp):
        return tp.__name__
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(ts_type(a) for a in args)
    if origin is list:
        inner = ts_type(args[0])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<{ts_type(args[0])}, {ts_type(args[1])}>"
    raise AssertionError(f"no TypeScript spelling for {tp!r}")


def normalise_ts(text: str, aliases: dict[str, str]) -> str:
    """`true`/`false` literals are booleans; a union of string literals (ViewName) is a string."""
    text = re.sub(r"\b(true|false)\b", "boolean", text)
    for alias, meaning in aliases.items():
        text = re.sub(rf"\b{alias}\b", meaning, text)
    return " | ".join(sorted(part.strip() for part in text.split("|"))) if "<" not in text else text


def expected_fields(cls: type) -> dict[str, tuple[bool, str]]:
    hints = typing.get_type_hints(cls)
    out = {}
    for a in attrs.fields(cls):
        has_default = a.default is not attrs.NOTHING
        optional = has_default and (cls in CLIENT_SENT or a.default is None)
        out[C.wire_name(a.name)] = (optional, ts_type(hints[a.name]))
    return out


def test_the_ts_parser_reads_the_file():
    text = _ts()
    assert len(ts_interfaces(text)) >= len(C.WIRE_CLASSES)
    assert {"Methods", "ServerCommands", "ClientCommands"} <= set(ts_tables(text))


def test_method_and_command_names_agree():
    text = _ts()
    tables = ts_tables(text)
    assert tables["Methods"] == C.METHODS
    assert tables["ServerCommands"] == C.SERVER_COMMAND_NAMES
    for key, name in C.CLIENT_COMMAND_NAMES.items():
        assert tables["ClientCommands"].get(key) == name, key
    consts = dict(STRING_CONST.findall(text))
    assert consts["SCHEME"] == C.SCHEME
    views = re.search(r"^export const VIEWS: readonly ViewName\[\] = \[(.*)\];$", text, re.M)
    assert views and re.findall(r"'([^']*)'", views.group(1)) == list(C.TREE_VIEWS)
    # every server command has its argument and result classes
    assert set(C.COMMAND_ARGS) == set(C.COMMAND_RESULTS)


def test_every_payload_class_has_the_same_fields_in_protocol_ts():
    text = _ts()
    interfaces = ts_interfaces(text)
    aliases = {name: "string" for name, _ in STRING_UNION.findall(text)}
    python_names = {cls.__name__ for cls in C.WIRE_CLASSES}
    assert set(interfaces) - python_names == TS_ONLY
    for cls in C.WIRE_CLASSES:
        assert cls.__name__ in interfaces, f"protocol.ts lacks interface {cls.__name__}"
        want = expected_fields(cls)
        got = interfaces[cls.__name__]
        assert set(got) == set(want), (cls.__name__, sorted(set(got) ^ set(want)))
        for field, (optional, tp) in want.items():
            got_optional, got_tp = got[field]
            assert got_optional == optional, f"{cls.__name__}.{field}: optional should be {optional}"
            assert normalise_ts(got_tp, aliases) == normalise_ts(tp, {}), f"{cls.__name__}.{field}: {got_tp} vs {tp}"


def test_a_mismatch_is_caught():
    """The comparison is not vacuous: a renamed or dropped field in protocol.ts fails it."""
    text = _ts().replace("  recallReady: boolean;\n", "  recall_ready: boolean;\n")
    got = ts_interfaces(text)["StatusParams"]
    assert set(got) != set(expected_fields(C.StatusParams))
    text = _ts().replace("  skillRoot?: string | null;\n", "")
    assert set(ts_interfaces(text)["AcceptArgs"]) != set(expected_fields(C.AcceptArgs))


# ------------------------------------------------------------------------------- parsing
def test_arguments_parse_into_their_classes_camel_case():
    a = C.parse_args(C.CMD_ACCEPT, ({"id": "tools-1", "skillRoot": ".harn/skills", "unknown": 1},))
    assert a == C.AcceptArgs(id="tools-1", skill_root=".harn/skills")
    r = C.parse_args(C.CMD_RESUME, ({"requestId": "hitl_escalation_1"},))
    assert r.request_id == "hitl_escalation_1" and r.reason == ""
    p = C.parse_args(C.CMD_PROBE, ({"uri": "file:///x.harn", "range": {"start": {"line": 1, "character": 2},
                                                                     "end": {"line": 3, "character": 0}}},))
    assert p.range == C.Range(C.Position(1, 2), C.Position(3, 0))
    assert C.parse_args(C.CMD_RESCAN, ()) == C.RescanArgs()
    assert C.parse_args(C.CMD_REJECT, ({"id": "x"},)).days == 14


@pytest.mark.parametrize("command, args, message", [
    (C.CMD_ACCEPT, ({},), "acceptProposal needs {id}: id is missing"),
    (C.CMD_ACCEPT, (), "acceptProposal needs {id}: id is missing"),
    (C.CMD_ACCEPT, ("not an object",), "acceptProposal needs {id}: the argument must be an object"),
    (C.CMD_ACCEPT, ({"id": 7},), "acceptProposal needs {id}: id must be a string"),
    (C.CMD_ACCEPT, ({"id": "a"}, {"id": "b"}), "acceptProposal takes one object argument, not 2"),
    (C.CMD_REJECT, ({"id": "a", "days": "soon"},), "rejectProposal needs {id}: days must be a whole number"),
    (C.CMD_REJECT, ({"id": "a", "days": True},), "rejectProposal needs {id}: days must be a whole number"),
    (C.CMD_FORGET_STAGE, ({"pipeline": "ingest"},), "forgetCheckpointStage needs {pipeline, key}: key is missing"),
    (C.CMD_RESUME, ({"id": "hitl_escalation_1"},), "resumeEscalation needs {requestId}: requestId is missing"),
    (C.CMD_PROBE, ({"uri": "file:///a", "range": 5},), "probeTypecheck needs {uri}: range must be an object"),
    (C.CMD_PROBE, ({"uri": "file:///a", "range": {"start": {"line": 0, "character": "x"}, "end": {"line": 0}}},),
     "probeTypecheck needs {uri}: range.start.character must be a whole number; range.end.character is missing"),
])
def test_a_malformed_argument_names_the_field(command, args, message):
    with pytest.raises(C.ArgumentError) as err:
        C.parse_args(command, args)
    assert str(err.value) == message


def test_namedtuples_from_pygls_are_plain_objects():
    from collections import namedtuple

    Pos = namedtuple("Object", "line character")
    Rng = namedtuple("Object", "start end")
    Arg = namedtuple("Object", "uri range")
    p = C.parse_args(C.CMD_PROBE, (Arg("file:///a", Rng(Pos(0, 1), Pos(2, 3))),))
    assert p.range == C.Range(C.Position(0, 1), C.Position(2, 3))


def test_results_go_out_camel_case_nested_too():
    note = C.HitlArrivedParams(root="/p", requests=[C.HitlRequestNote("hitl_1", "escalation", "why?", None, "u")])
    assert C.to_wire(note) == {"root": "/p", "requests": [
        {"requestId": "hitl_1", "kind": "escalation", "prompt": "why?", "agent": None, "uri": "u"}]}
    action = {"message": "m", "id": "i", "name": "n", "suppressed_until": "2026-01-01", "events": [], "state_id": "s"}
    assert C.to_wire(C.from_fields(C.RejectResult, action)) == {
        "message": "m", "id": "i", "name": "n", "suppressedUntil": "2026-01-01", "ok": True}
    assert C.to_wire(C.Failure("no")) == {"message": "no", "ok": False}


# ------------------------------------------------------- what the server's tree really sends
def _all_items(ws) -> list[dict]:
    from harn_ls.lsp.tree import tree_options
    from harn_ls.render.tree_items import tree_items

    out, todo = [], [(view, None) for view in C.TREE_VIEWS]
    while todo:
        view, parent = todo.pop()
        for item in tree_items(ws, view, parent, tree_options(show_suppressed=True)):
            out.append(item)
            if item.get("hasChildren"):
                todo.append((view, item["id"]))
    return out


def test_tree_items_are_contract_items_and_carry_their_command_argument(tmp_path):
    import shutil

    from harn_ls.model.workspace import Workspace

    project = tmp_path / "p"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sample-project"), project,
                    symlinks=True)
    items = _all_items(Workspace.load(str(project)))
    wire = set(expected_fields(C.TreeItemData))
    seen = set()
    for item in items:
        assert set(item) <= wire, (item["id"], set(item) - wire)
        C.converter.structure(item, C.TreeItemData)  # every field has its contract type
        ctx = item["contextValue"]
        seen.add(ctx)
        if ctx == "checkpointStage":  # the client passes data on as ForgetStageArgs
            assert C.parse_args(C.CMD_FORGET_STAGE, (item["data"],)).key == item["label"]
        if ctx in ("proposal", "proposal.suppressed"):
            assert C.parse_args(C.CMD_ACCEPT, (item["data"],)).id
        if ctx == "fact":
            assert C.parse_args(C.CMD_INVALIDATE_FACT, (item["data"],)).id
    assert {"checkpointStage", "proposal", "fact"} <= seen
