"""The Neovim plugin (editors/neovim) driven in headless Neovim (Debian's 0.7.2 and a current release)
against the real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.editor_driver import driver_env, run_driver
from tests.clients.neovims import NEOVIMS, neovim_command, with_runtime

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PLUGIN = REPO / "editors" / "neovim"



def run_plugin_driver(tmp_path: Path, nvim) -> tuple[Path, dict]:
    project, out, env = driver_env(tmp_path, PLUGIN)
    env.update({"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"),
                "XDG_DATA_HOME": str(tmp_path / "data")})
    argv, extra = neovim_command(nvim, "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_plugin_driver.lua'}")
    return project, run_driver(argv, tmp_path, with_runtime(env, extra), out, "headless Neovim")


@pytest.fixture(scope="module", params=NEOVIMS)
def driven(request, tmp_path_factory) -> tuple[Path, dict]:
    """One run of the driver per Neovim, shared by the tests that check its results."""
    return run_plugin_driver(tmp_path_factory.mktemp("nvim"), request.param)


def test_neovim_plugin_end_to_end(driven):
    project, r = driven
    # no deprecated API (soft deprecations included), nothing deprecated said
    assert r["deprecated"] == [] and "deprecated" not in r["all_messages"], (r["deprecated"], r["all_messages"])
    # 0.11+: the plugin is the `harn_ls` configuration of vim.lsp.config (the user's cmd came through it),
    # enabled with vim.lsp.enable; one client for the project either way
    modern = tuple(int(x) for x in r["nvim"].split(".")) >= (0, 11)
    assert (r["uses_lsp_config"], r["client_name"]) == ((True, "harn_ls") if modern else (False, "harn-ls"))
    assert r["clients"] == 1
    assert r["root"] == str(project)

    # harn-state:/index.md through workspace/textDocumentContent, read-only markdown
    assert r["index_name"] == "harn-state:///index.md"
    assert r["index_text"].startswith("# Harn state — sample-project")
    for name in ("[ingest](harn-state:/checkpoints/ingest.md)", "Reconcile Stripe Payouts Ledger", "agent/notes"):
        assert name in r["index_text"]
    assert (r["index_buftype"], r["index_filetype"], r["index_modifiable"]) == ("nofile", "markdown", False)
    assert r["index_set_lines_ok"] is False and r["index_first_line"].startswith("# Harn state")

    assert r["statusline"] == r["statusline_expr"] == "harn 7 facts · 3 proposals · 3 runs · 7 problems"

    # issue 33: answering from Neovim (:HarnHitl and the lens command), refused once it is decided
    assert r["hitl_approve"]["ok"] is True and r["hitl_approve"]["outcome"] == "pending (1 of 2)"
    assert r["hitl_approve"]["reviewer"] == "alice"
    assert r["hitl_lens_prompt"] == "Reason (optional): "
    assert "`alice` already approved" in r["hitl_messages"]

    # refreshed after workspace/textDocumentContent/refresh (a memory event was appended)
    assert r["refetched"] is True

    # links: harn-state -> harn-state, harn-state -> file with a line
    assert r["checkpoint_text"].startswith("# ") and "ingest" in r["checkpoint_text"]
    assert r["file_link_line"] == 28

    # code lenses shown (resolved) and runnable
    assert r["lens_title"] == "1 fact · observation 0.9"
    assert r["lens_count"] >= 1
    assert r["lens_opened"].startswith("harn-state:/facts/fact_")

    # recall with a URL-encoded query
    assert r["recall_uri"] == "harn-state:/recall.md?q=money%20Decimal"
    assert "style/money" in r["recall_text"]

    # proposals: accept wrote the skill, reject hid the other; lists reflect both
    lists = [s["items"] for s in r["selects"] if s["prompt"] == "Harn proposals"]
    first, second, third = lists[0], lists[1], lists[-1]
    assert len(first) == 3 and any(i.startswith("Reconcile Stripe Payouts Ledger") for i in first)
    assert len(second) == 2 and not any(i.startswith("Reconcile Stripe") for i in second)
    assert len(third) == 1 and not any(i.startswith("Month-end close") for i in third)
    assert r["show_document_ms"] < 15000  # Accept showed the written skill (window/showDocument)
    skill = project / ".claude" / "skills" / "learned-reconcile-stripe-payouts-ledger" / "SKILL.md"
    assert "name: learned-reconcile-stripe-payouts-ledger" in skill.read_text(encoding="utf-8")

    # a proposal document has Compare / Reject lenses; Compare diffs the file on disk with the proposed one
    assert r["proposal_lenses"] == ["Compare with existing", "Reject for 14 days"]
    by_name = {d["name"]: d for d in r["diff"]}
    existing = str(project / ".claude" / "skills" / "learned-grep-read-file-edit-file-run-tests" / "SKILL.md")
    proposed = "harn-proposed://tools-7742da9fd499/SKILL.md"
    assert set(by_name) == {existing, proposed} and all(d["diff"] for d in r["diff"])
    assert "Mine." in by_name[existing]["text"]
    assert by_name[proposed]["text"].startswith("---\nname: learned-grep-read-file-edit-file-run-tests\n")
    assert "# Repeated grep -> read-file -> edit-file -> run-tests workflow" in by_name[proposed]["text"]

    assert r["run_doc_modifiable"] is False  # `:edit harn-state:///runs/<id>.md` went through BufReadCmd

    # a linewise probe of the clean line 3 passes and replaces the diagnostics
    events = (project / ".harn" / "memory" / "project" / "facts" / "events.jsonl").read_text(encoding="utf-8")
    fact = json.loads(events.splitlines()[-1])["value"]
    assert fact["claim"] == "probe typecheck `let y: int = 2` → pass"
    assert {"kind": "file_range", "ref": "pipelines/probe_target.harn:3-3"} in fact["evidence"]
    assert r["probe_diags_after"] == 0


def test_neovim_plugin_probe_columns(driven, request):
    """A probe on a charwise selection after multi-byte text (é, an emoji): the diagnostic lands on "oops",
    in whatever position encoding the client and the server agreed on (Neovim >= 0.10 offers utf-8 first)."""
    project, r = driven
    line = r["probe_line"]
    oops = line.encode("utf-8").index(b'"oops"')
    assert [(d["lnum"], d["col"], d["end_col"]) for d in r["probe_diags"]] == [(1, oops, oops + len(b'"oops"'))]
    # ... and the probe stored a fact about exactly the selected text
    events = (project / ".harn" / "memory" / "project" / "facts" / "events.jsonl").read_text(encoding="utf-8")
    fact = json.loads(events.splitlines()[-2])["value"]
    assert fact["claim"] == 'probe typecheck `let x: int = "oops"` → fail'
    assert {"kind": "file_range", "ref": "pipelines/probe_target.harn:2-2"} in fact["evidence"]


@pytest.mark.parametrize("nvim", NEOVIMS)
def test_neovim_plugin_helpers_and_hostile_links(tmp_path, nvim):
    home = tmp_path / "home"
    (home / ".harn").mkdir(parents=True)  # Harn's user-level folder: not a project marker
    (home / "notes").mkdir()
    (home / "work" / "proj" / ".harn").mkdir(parents=True)
    (home / "work" / "proj" / "src").mkdir()
    (home / "work" / "proj-evil").mkdir()
    (home / "work" / "tomlproj" / "deep" / "er").mkdir(parents=True)
    (home / "work" / "tomlproj" / "harn.toml").write_text("")
    out = tmp_path / "units.json"
    env = {**os.environ, "PROBE_OUT": str(out), "BASE": str(tmp_path), "PLUGIN_DIR": str(PLUGIN), "HOME": str(home),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    argv, extra = neovim_command(nvim, "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_plugin_units.lua'}")
    proc = subprocess.run(["timeout", "60", *argv], cwd=tmp_path, env=with_runtime(env, extra),
                          capture_output=True, text=True, timeout=90)
    r = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (r.get("error"), proc.stderr[-2000:])
    assert r["roots"] == {"home_harn_only": None, "project": str(home / "work" / "proj"),
                          "toml": str(home / "work" / "tomlproj"), "evil": None}
    assert r["urlencode"] == "a%20b%26c%3Dd%2F%C3%A9"
    assert r["normalize"] == ["harn-state:/index.md?q=a%20b", "harn-state:/x.md", None]
    assert r["links"] == ["harn-state:/facts/f1.md", "harn-state:/runs/r2.md", "harn-state:/skills/s.md", None,
                          "file:///p/a.py#L3"]
    assert r["utf16"] == [1, 2, 4, 5]
    # a column in each position encoding: after "aé", after the emoji, after "b"
    assert r["encoded"] == {"utf-8": [3, 7, 8], "utf-16": [2, 4, 5], "utf-32": [2, 3, 4]}
    assert r["evil_name"] == str(home / 'evil|call writefile([], "') + str(tmp_path / 'marker') + '")'
    assert r["evil_nl"] is None and r["marker"] is False
    assert r["dead_server"].startswith("# harn-ls\n\nharn-ls for " + str(home / "work" / "proj") + " exited (code 3")


@pytest.mark.parametrize("nvim", NEOVIMS)
def test_neovim_shows_the_load_progress(tmp_path, nvim):
    """Issue 36: a big project's cold load, shown by the plugin from Neovim's progress events
    (LspProgress on the current Neovim, User LspProgressUpdate on 0.7.2)."""
    from tests.lsp.test_progress import _write_project

    project = _write_project(tmp_path / "big-project")
    out = tmp_path / "result.json"
    env = {**os.environ, "PROBE_OUT": str(out), "PROJECT": str(project), "PLUGIN_DIR": str(PLUGIN),
           "HARN_LS_CMD": "\t".join([sys.executable, "-m", "harn_ls", "serve"]), "PYTHONPATH": str(REPO),
           "HARN_LS_CACHE_DIR": str(tmp_path / "cache"), "HARN_LS_PROGRESS_AFTER": "0",
           "HARN_LS_PROGRESS_EVERY": "0.05", "HOME": str(tmp_path)}
    argv, extra = neovim_command(nvim, "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_progress_driver.lua'}")
    proc = subprocess.run(["timeout", "120", *argv], cwd=tmp_path, env=with_runtime(env, extra),
                          capture_output=True, text=True, timeout=150)
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (result.get("error"), proc.stderr[-3000:])
    seen = result["seen"]
    loading = [line for line in seen if line.startswith("Harn: loading big-project")]
    assert any("%" in line and "memory logs" in line for line in loading), seen
    assert loading[-1].endswith(")") and "100,000 records in 1 namespaces" in loading[-1], seen


@pytest.mark.parametrize("nvim", NEOVIMS)
def test_modeline_in_data_sets_no_option(tmp_path, nvim):
    """Issue 27 item 10: a fact claim that is a modeline is the first line of its document; with the
    user's modelines on, opening, `:edit`ing, leaving and `:edit`ing it again, and splitting it set no
    option. Before the fix, entering the loaded buffer again applied the window-local ones (`list`,
    `foldcolumn=5`) on Neovim 0.7.2; buffer-local ones (`textwidth`) were not, since the text arrives
    after the read."""
    project, out, env = driver_env(tmp_path, PLUGIN)
    modeline = "vim: set textwidth=13 foldcolumn=5 list :"
    facts = project / ".harn/memory/project/facts/events.jsonl"
    rec = json.loads(facts.read_text().splitlines()[0])
    fid = "fact_" + "7" * 32
    rec["value"].update({"id": fid, "claim": modeline})
    rec.update({"id": fid, "key": f"fact:observation:{fid}",
                "text": json.dumps(rec["value"], ensure_ascii=False, separators=(",", ":"), sort_keys=True)})
    with facts.open("a") as fh:
        fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    (project / "modeline-control.md").write_text(f"# note {modeline}\n")
    env.update({"FACT_URI": f"harn-state:/facts/{fid}.md", "XDG_CACHE_HOME": str(tmp_path / "cache"),
                "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")})
    argv, extra = neovim_command(nvim, "--headless", "--clean", "-c", f"luafile {HERE / 'nvim_modeline_driver.lua'}")
    r = run_driver(argv, tmp_path, with_runtime(env, extra), out, "headless Neovim")
    assert r["control_textwidth"] == 13  # modelines are on in this Neovim: a plain file's is applied
    assert r["name"] == f"harn-state:///facts/{fid}.md" and modeline in r["first_line"]
    shown = {"tw": 0, "fdc": "0", "list": False}
    for moment in ("after_open", "after_edit", "after_back", "after_split"):
        assert {k: r[moment][k] for k in shown} == shown, (moment, r[moment])
    assert r["after_back"]["same"] is True  # the loaded buffer entered again (before the fix: list, foldcolumn 5)
    assert r["buffer_modeline"] is False and r["global_modeline"] is True  # only our buffer; the user's setting kept
    assert r["modelineexpr"] is False  # global, the user's (off by default): not touched
