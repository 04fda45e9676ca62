"""render/tree_items.py without a server: the items of each sidebar view, paging and totals."""

from __future__ import annotations

import orjson
import pytest

from harn_ls import contract as P
from harn_ls.lsp.tree import ITEM_BYTES, tree_options
from harn_ls.model.workspace import Workspace
from harn_ls.render.limits import MAX_RESPONSE_BYTES
from harn_ls.render.tree_items import TreeOptions, display_time, tree_items, tree_result
from tests.helpers.views import INVOICE, INVOICE_FACT, append_events, copy_sample, fact_event

OPTS = TreeOptions(open_command="test.open", page_size=200)
SUPPRESSED = "prompt-0e59f51d1e7d"  # rejected until 2099 in the fixture


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    return Workspace.load(str(copy_sample(tmp_path_factory.mktemp("tree"))))


def ids(items) -> list[str]:
    return [it["id"] for it in items]


def test_runs_view_newest_run_first_after_the_groups(ws):
    items = tree_items(ws, "runs", None, OPTS)
    assert ids(items)[:2] == ["hitl", "events"]  # issue-16 groups on top
    runs = [it for it in items if it["id"].startswith("run:")]
    assert [it["label"] for it in runs] == ["release", "review", "ingest"]
    assert runs[0]["description"] == "running · 2026-05-12 16:40:00"
    assert runs[0]["command"] == {"title": "Open", "command": "test.open", "arguments": [runs[0]["uri"]]}
    assert runs[0]["uri"] == f"harn-state:/runs/{runs[0]['data']['id']}.md"


def test_checkpoints_view_files_then_stages(ws):
    assert [(it["label"], it["description"]) for it in tree_items(ws, "checkpoints", None, OPTS)] == [
        ("ingest", "5 stage(s)"), ("review", "4 stage(s)")]
    stages = tree_items(ws, "checkpoints", "ckpt:ingest", OPTS)
    assert [(it["label"], it["description"]) for it in stages] == [
        ("clean", "plain"), ("fetch", "plain"), ("prepare", "keyed sha256:28234a10…"), ("processed_ids", "plain"),
        ("upload", "completed (nil)")]
    assert all(it["contextValue"] == "checkpointStage" and it["data"]["pipeline"] == "ingest" for it in stages)
    assert tree_items(ws, "checkpoints", "ckpt:nope", OPTS) == []


def test_memory_view_kinds_facts_and_confidence_filter(ws):
    top = tree_items(ws, "memory", None, OPTS)
    assert top[0]["id"] == "facts" and top[0]["description"] == "7"
    assert "ns:project/facts" in ids(top)
    kinds = tree_items(ws, "memory", "facts", OPTS)
    assert [(it["label"], it["description"]) for it in kinds][-1] == ("observation", "3")
    facts = tree_items(ws, "memory", "fk:observation", OPTS)
    assert [it["description"] for it in facts] == ["0.9", "0.9", "0.6"]  # most confident first
    assert f"fact:{INVOICE_FACT}" in ids(facts)
    high = tree_items(ws, "memory", "fk:observation", TreeOptions("test.open", 200, min_conf=0.7))
    assert [it["description"] for it in high] == ["0.9", "0.9"]


def test_skills_view_and_suppressed_proposals(ws):
    top = tree_items(ws, "skills", None, OPTS)
    assert top[0]["label"] == "Pending proposals" and top[0]["description"] == "3"
    assert ids(top)[1:] == ["layer:project", "layer:claude", "layer:burin", "layer:package"]
    shown = ids(tree_items(ws, "skills", "proposals", OPTS))
    assert f"proposal:{SUPPRESSED}" not in shown and len(shown) == 3
    every = tree_items(ws, "skills", "proposals", TreeOptions("test.open", 200, show_suppressed=True))
    suppressed = [it for it in every if it["id"] == f"proposal:{SUPPRESSED}"]
    assert len(every) == 4 and suppressed[0]["contextValue"] == "proposal.suppressed"
    assert suppressed[0]["description"].endswith(" · suppressed")
    project = tree_items(ws, "skills", "layer:project", OPTS)
    assert ("tampered", "invalid signature") in [(it["label"], it["description"]) for it in project]


def test_paging_gives_next_page_and_total(ws):
    small = TreeOptions("test.open", page_size=2)
    all_items = tree_items(ws, "checkpoints", "ckpt:ingest", small)
    assert len(all_items) == 5
    first = P.to_wire(tree_result(ws, "checkpoints", "ckpt:ingest", 0, small))
    assert first == {"items": all_items[:2], "nextPage": 1, "total": 5}
    second = P.to_wire(tree_result(ws, "checkpoints", "ckpt:ingest", 1, small))
    assert second == {"items": all_items[2:4], "nextPage": 2, "total": 5}
    last = P.to_wire(tree_result(ws, "checkpoints", "ckpt:ingest", 2, small))
    assert last == {"items": all_items[4:]}  # no nextPage, no total on the last page
    assert P.to_wire(tree_result(ws, "checkpoints", "ckpt:ingest", 7, small)) == {"items": []}


def test_many_facts_page_at_the_protocol_size(tmp_path):
    project = copy_sample(tmp_path)
    append_events(project, [fact_event(f"fact_many{i:04d}", f"claim {i}", f"{INVOICE}:3", kind="hypothesis",
                                       confidence=0.5) for i in range(450)])
    ws = Workspace.load(str(project))
    opts = tree_options()
    assert opts.page_size == P.TREE_PAGE_SIZE and opts.open_command == P.CMD_OPEN
    pages = [P.to_wire(tree_result(ws, "memory", "fk:hypothesis", n, opts)) for n in range(3)]
    assert [len(p["items"]) for p in pages] == [200, 200, 51]
    assert pages[0]["total"] == 451 and pages[1]["nextPage"] == 2 and "nextPage" not in pages[2]
    assert len(orjson.dumps(pages[0])) <= MAX_RESPONSE_BYTES
    assert all(len(orjson.dumps(it)) <= ITEM_BYTES for p in pages for it in p["items"])


def test_item_too_large_becomes_a_placeholder(ws):
    tiny = TreeOptions("test.open", page_size=MAX_RESPONSE_BYTES // 300)  # items over ~300 bytes do not fit
    items = tree_items(ws, "checkpoints", "ckpt:ingest", tiny)
    assert {it["contextValue"] for it in items} == {"tooLarge"}
    assert all("command" not in it and it["description"].startswith("not shown: ") for it in items)


def test_empty_project_and_unknown_view(tmp_path):
    (tmp_path / "harn.toml").write_text("")
    empty = Workspace.load(str(tmp_path))
    for view in P.TREE_VIEWS:
        assert tree_items(empty, view, None, OPTS) == []  # the client shows its welcome content
    with pytest.raises(ValueError, match="unknown view"):
        tree_items(Workspace.load(str(copy_sample(tmp_path / "x"))), "nope", None, OPTS)


def test_display_time_forms():
    assert display_time("2026-05-06T14:02:00Z") == "2026-05-06 14:02:00"
    assert display_time(1778076120) == display_time("1778076120") == display_time(1778076120000)
    assert display_time(None) == "" and display_time("") == ""


def test_a_run_whose_start_no_clock_can_show_still_lists(tmp_path):
    """A cloned project's run record with `started_at: "1e400"` (or nan) used to raise OverflowError
    in the runs view and in the run document; it is shown as written."""
    assert display_time("1e400") == "1e400" and display_time("nan") == "nan"
    project = copy_sample(tmp_path / "p")
    run_file = sorted((project / ".harn-runs").glob("run_*.json"))[0]
    record = orjson.loads(run_file.read_bytes())
    record["started_at"] = "1e400"
    run_file.write_bytes(orjson.dumps(record))
    ws = Workspace.load(str(project))
    runs = [i for i in tree_items(ws, "runs", None, OPTS) if i["id"] == f"run:{record['id']}"]
    assert runs and runs[0]["description"].endswith("· 1e400")
