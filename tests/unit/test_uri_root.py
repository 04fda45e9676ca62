"""`harn-state:` URIs that name their project (`?root=`), for workspaces serving several (issue 29, item 5)."""

from __future__ import annotations

from harn_ls.render.markdown import file_link, link
from harn_ls.render.uri import links_with_root, parse_uri, with_root

EVIL_ROOT = "/work/proj-evil)](file:///etc/passwd) &root=/x#y"


def test_with_root_round_trips_any_root():
    for uri in ("harn-state:/index.md", "harn-state:/recall.md?q=a%20b&ns=agent/notes", "harn-state:/facts/f1.md#claim"):
        named = with_root(uri, EVIL_ROOT)
        target = parse_uri(named)
        assert target.query["root"] == EVIL_ROOT  # percent-encoded: nothing of it leaks into the URI's structure
        assert parse_uri(uri).kind == target.kind and parse_uri(uri).name == target.name
        assert all(target.query[k] == v for k, v in parse_uri(uri).query.items())
    assert with_root("harn-state:/facts/f1.md#claim", "/r") == "harn-state:/facts/f1.md?root=%2Fr#claim"
    # a URI naming a project already keeps it; other schemes are left alone
    assert with_root("harn-state:/index.md?root=%2Fa", "/b") == "harn-state:/index.md?root=%2Fa"
    assert with_root("file:///p/a.py#L3", "/b") == "file:///p/a.py#L3"


def test_links_with_root_rewrites_only_harn_state_link_targets():
    doc = "\n".join([
        "# Harn state — " + "proj",
        link("ingest", "harn-state:/checkpoints/ingest.md"),
        link("label with ](harn-state:/x.md) inside", "harn-state:/recall.md?q=a)b"),
        file_link("invoice.py", "/p/src/invoice.py", 28),
        "`harn-state:/index.md` in a code span stays as written",
    ])
    out = links_with_root(doc, "/r")
    assert "[ingest](harn-state:/checkpoints/ingest.md?root=%2Fr)" in out
    assert "(harn-state:/recall.md?q=a%29b&root=%2Fr)" in out
    assert "(file:///p/src/invoice.py#L28)" in out
    assert "`harn-state:/index.md` in a code span stays as written" in out
    # the label is escaped by `link`: its text is not a link target and is not rewritten
    assert out.count("root=%2Fr") == 2
