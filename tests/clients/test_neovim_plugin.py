"""The Neovim plugin (editors/neovim) driven in headless Neovim (Debian's 0.7.2) against the real server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SAMPLE = REPO / "fixtures" / "sample-project"
PLUGIN = REPO / "editors" / "neovim"
HARN_DOUBLE = REPO / "tests" / "harn_test_double.py"

# In CI (`make test` installs Debian's neovim) a missing nvim is a failure, not a skip.
pytestmark = pytest.mark.skipif(shutil.which("nvim") is None and not os.environ.get("CI"),
                                reason="neovim is not installed (make test installs it)")


def run_driver(tmp_path: Path) -> tuple[Path, dict]:
    project = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, project, symlinks=True)
    out = tmp_path / "result.json"
    env = {**os.environ, "PROBE_OUT": str(out), "PROJECT": str(project), "PLUGIN_DIR": str(PLUGIN),
           "HARN_LS_CMD": "\t".join([sys.executable, "-m", "harn_ls", "serve"]), "HARN_DOUBLE": str(HARN_DOUBLE),
           "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    (tmp_path / "home").mkdir()
    try:
        proc = subprocess.run(["timeout", "150", "nvim", "--headless", "--clean", "-c",
                               f"luafile {HERE / 'nvim_plugin_driver.lua'}"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"headless Neovim did not finish: {exc}")
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (f"driver failed in step {result.get('steps', ['?'])[-1]!r}: {result.get('error')}\n"
                                  f"buffer {result.get('current_buffer')}:\n{result.get('current_text')}\n"
                                  f"messages: {result.get('messages')}\nstderr: {proc.stderr[-2000:]}")
    return project, result


def test_neovim_plugin_end_to_end(tmp_path):
    project, r = run_driver(tmp_path)
    assert r["root"] == str(project)

    # harn-state:/index.md through workspace/textDocumentContent, read-only markdown
    assert r["index_name"] == "harn-state:///index.md"
    assert r["index_text"].startswith("# Harn state — sample-project")
    for name in ("[ingest](harn-state:/checkpoints/ingest.md)", "Reconcile Stripe Payouts Ledger", "agent/notes"):
        assert name in r["index_text"]
    assert (r["index_buftype"], r["index_filetype"], r["index_modifiable"]) == ("nofile", "markdown", False)
    assert r["index_set_lines_ok"] is False and r["index_first_line"].startswith("# Harn state")

    assert r["statusline"] == r["statusline_expr"] == "harn 7 facts · 3 proposals · 3 runs · 7 problems"

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

    # probe on a charwise selection after multi-byte text: the diagnostic lands on "oops"
    line = r["probe_line"]
    oops = line.encode("utf-8").index(b'"oops"')
    assert [(d["lnum"], d["col"], d["end_col"]) for d in r["probe_diags"]] == [(1, oops, oops + len(b'"oops"'))]
    # ... and the probe stored a fact about exactly the selected text
    events = (project / ".harn" / "memory" / "project" / "facts" / "events.jsonl").read_text(encoding="utf-8")
    fact = json.loads(events.splitlines()[-2])["value"]
    assert fact["claim"] == 'probe typecheck `let x: int = "oops"` → fail'
    assert {"kind": "file_range", "ref": "pipelines/probe_target.harn:2-2"} in fact["evidence"]
    # a linewise probe of the clean line 3 passes and replaces the diagnostics
    fact = json.loads(events.splitlines()[-1])["value"]
    assert fact["claim"] == "probe typecheck `let y: int = 2` → pass"
    assert {"kind": "file_range", "ref": "pipelines/probe_target.harn:3-3"} in fact["evidence"]
    assert r["probe_diags_after"] == 0


def test_neovim_plugin_helpers_and_hostile_links(tmp_path):
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
    proc = subprocess.run(["timeout", "60", "nvim", "--headless", "--clean", "-c",
                           f"luafile {HERE / 'nvim_plugin_units.lua'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    r = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (r.get("error"), proc.stderr[-2000:])
    assert r["roots"] == {"home_harn_only": None, "project": str(home / "work" / "proj"),
                          "toml": str(home / "work" / "tomlproj"), "evil": None}
    assert r["urlencode"] == "a%20b%26c%3Dd%2F%C3%A9"
    assert r["normalize"] == ["harn-state:/index.md?q=a%20b", "harn-state:/x.md", None]
    assert r["links"] == ["harn-state:/facts/f1.md", "harn-state:/runs/r2.md", "harn-state:/skills/s.md", None,
                          "file:///p/a.py#L3"]
    assert r["utf16"] == [1, 2, 4, 5]
    assert r["evil_name"] == str(home / 'evil|call writefile([], "') + str(tmp_path / 'marker') + '")'
    assert r["evil_nl"] is None and r["marker"] is False
    assert r["dead_server"].startswith("# harn-ls\n\nharn-ls for " + str(home / "work" / "proj") + " exited (code 3")


def test_modeline_in_data_sets_no_option(tmp_path):
    """Issue 27 item 10: a fact claim that is a modeline is the first line of its document; with the
    user's modelines on, opening, `:edit`ing, leaving and `:edit`ing it again, and splitting it set no
    option. Before the fix, entering the loaded buffer again applied the window-local ones (`list`,
    `foldcolumn=5`); buffer-local ones (`textwidth`) were not, since the text arrives after the read."""
    project = tmp_path / "sample-project"
    shutil.copytree(SAMPLE, project, symlinks=True)
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
    out = tmp_path / "modeline.json"
    env = {**os.environ, "PROBE_OUT": str(out), "PROJECT": str(project), "PLUGIN_DIR": str(PLUGIN),
           "FACT_URI": f"harn-state:/facts/{fid}.md", "HARN_LS_CMD": "\t".join([sys.executable, "-m", "harn_ls", "serve"]),
           "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    (tmp_path / "home").mkdir()
    proc = subprocess.run(["timeout", "90", "nvim", "--headless", "--clean", "-c",
                           f"luafile {HERE / 'nvim_modeline_driver.lua'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    r = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0, (r.get("error"), proc.stderr[-2000:])
    assert r["control_textwidth"] == 13  # modelines are on in this Neovim: a plain file's is applied
    assert r["name"] == f"harn-state:///facts/{fid}.md" and modeline in r["first_line"]
    shown = {"tw": 0, "fdc": "0", "list": False}
    for moment in ("after_open", "after_edit", "after_back", "after_split"):
        assert {k: r[moment][k] for k in shown} == shown, (moment, r[moment])
    assert r["after_back"]["same"] is True  # the loaded buffer entered again (before the fix: list, foldcolumn 5)
    assert r["buffer_modeline"] is False and r["global_modeline"] is True  # only our buffer; the user's setting kept
    assert r["modelineexpr"] is False  # global, the user's (off by default): not touched
