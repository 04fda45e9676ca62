"""The diagnostics registry on its own: sources set / clear (source, uri) entries, the merged list
per URI is published only when it changed."""

from __future__ import annotations

from harn_ls.lsp.diagnostic_registry import DiagnosticsRegistry


def make():
    sent: list[tuple[str, list]] = []
    reg = DiagnosticsRegistry(lambda uri, diags: sent.append((uri, diags)))
    return reg, sent


def test_sources_merge_per_uri_in_registration_order():
    reg, sent = make()
    reg.set("problems", "file:///a", ["p1", "p2"])
    reg.set("probe", "file:///a", ["x"])
    reg.set("probe", "file:///b", ["y"])
    assert reg.merged("file:///a") == ["p1", "p2", "x"]
    assert sent == [("file:///a", ["p1", "p2"]), ("file:///a", ["p1", "p2", "x"]), ("file:///b", ["y"])]
    # A later change of the first source keeps the order: problems first, probe after.
    reg.set("problems", "file:///a", ["p3"])
    assert sent[-1] == ("file:///a", ["p3", "x"])


def test_unchanged_set_publishes_nothing():
    reg, sent = make()
    assert reg.set("probe", "file:///a", ["x"]) is True
    assert reg.set("probe", "file:///a", ["x"]) is False
    assert reg.set("probe", "file:///b", []) is False  # nothing there before, nothing now
    assert sent == [("file:///a", ["x"])]


def test_clear_sends_what_the_other_sources_still_hold():
    reg, sent = make()
    reg.set("problems", "file:///a", ["p"])
    reg.set("probe", "file:///a", ["x"])
    assert reg.clear("probe", "file:///a") is True
    assert sent[-1] == ("file:///a", ["p"])
    assert reg.clear("probe", "file:///a") is False
    assert reg.clear("problems", "file:///a") is True
    assert sent[-1] == ("file:///a", [])
    assert reg.uris("problems") == set() and reg.merged("file:///a") == []


def test_replace_source_clears_vanished_uris_only_for_that_source():
    reg, sent = make()
    reg.replace_source("problems", {"file:///a": ["p"], "file:///b": ["q"]})
    reg.set("probe", "file:///b", ["x"])
    sent.clear()
    n = reg.replace_source("problems", {"file:///a": ["p"], "file:///c": ["r"]})
    assert n == 2  # b cleared, c new; a unchanged
    assert sorted(sent) == [("file:///b", ["x"]), ("file:///c", ["r"])]
    assert reg.uris("problems") == {"file:///a", "file:///c"} and reg.uris("probe") == {"file:///b"}
    assert reg.clear_source("problems") == 2
    assert reg.merged("file:///a") == [] and reg.merged("file:///b") == ["x"]


def test_uris_are_normalised_so_spellings_meet():
    sent: list[tuple[str, list]] = []
    reg = DiagnosticsRegistry(lambda uri, diags: sent.append((uri, diags)), normalize=str.lower)
    reg.set("problems", "file:///A", ["p"])
    reg.set("probe", "FILE:///a", ["x"])
    assert reg.merged("file:///a") == ["p", "x"] and reg.get("probe", "File:///A") == ["x"]
    assert [u for u, _ in sent] == ["file:///a", "file:///a"]


def test_get_returns_a_copy():
    reg, _ = make()
    reg.set("probe", "file:///a", ["x"])
    got = reg.get("probe", "file:///a")
    got.append("y")
    assert reg.get("probe", "file:///a") == ["x"]


def test_server_wiring_normalises_file_uris_and_budget_leaves_entries_alone():
    from lsprotocol import types

    from harn_ls.lsp.diagnostics import normalize_uri, within_budget
    from harn_ls.render.limits import MESSAGE_BYTES

    assert normalize_uri("file:///tmp/a%20b/x.py") == normalize_uri("file:///tmp/a b/x.py")
    assert normalize_uri("harn-state:/index.md") == "harn-state:/index.md"
    long = types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0),
                                              end=types.Position(line=0, character=1)), message="x" * (MESSAGE_BYTES * 2))
    sent: list = []
    reg = DiagnosticsRegistry(lambda uri, diags: sent.append(within_budget(diags)), normalize_uri)
    reg.set("harn-probe", "file:///tmp/a%20b/x.py", [long])
    assert len(sent[0][0].message.encode()) <= MESSAGE_BYTES + 64
    assert reg.get("harn-probe", "file:///tmp/a b/x.py")[0].message == "x" * (MESSAGE_BYTES * 2)  # stored as set
