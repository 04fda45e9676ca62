"""A server started on the state cache an earlier server left answers everything exactly as a server
that read the project cold: the same sweep (tests/lsp/sweep.py: hover, lenses, code actions, workspace symbols,
documents, tree, diagnostics, counts) run once on each, compared answer by answer.

Every other LSP test starts on a fresh cache; users restart their editor on a warm one."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from harn_ls.cache.dirs import project_cache_dir
from harn_ls.cache.store import MANIFEST, STATE_DIR
from harn_ls.model.workspace import Workspace
from tests.lsp.conftest import SERVER_COMMAND, copy_sample, start_session
from tests.lsp.sweep import sweep

pytestmark = pytest.mark.timeout(300)


async def _session(project: Path, env: dict[str, str], ask):
    client = await ClientServerConfig(server_command=SERVER_COMMAND, server_env=env).start()
    try:
        await start_session(client, project)
        return await ask(client)
    finally:
        await client.shutdown_session()
        await client.stop()


def _manifest(project: Path, env: dict[str, str]) -> dict | None:
    path = Path(project_cache_dir(str(project), env)) / STATE_DIR / MANIFEST
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


async def _cold_then_warm(tmp_path: Path, ask):
    """(what `ask(client)` got from a server on a fresh cache, from a second one on the cache the
    first left). The second must really start from it: the manifest names the pattern projection."""
    project = copy_sample(tmp_path)
    env = {**os.environ, "HARN_LS_CACHE_DIR": str(tmp_path / "cache")}

    async def ask_then_wait_for_save(client):
        answer = await ask(client)
        await client.rec.wait_for(lambda: (_manifest(project, env) or {}).get("pattern"), 30)
        return answer

    cold = await _session(project, env, ask_then_wait_for_save)
    saved = _manifest(project, env)
    assert saved and saved.get("pattern") and saved.get("namespaces")
    warm = await _session(project, env, ask)
    return cold, warm


def _differences(cold: dict, warm: dict) -> list[str]:
    """One entry per answer that differs: the question, then a diff of the two answers."""
    out = []
    for key in sorted(cold.keys() | warm.keys()):
        a, b = cold.get(key, "<not asked>"), warm.get(key, "<not asked>")
        if a != b:
            a, b = (v if isinstance(v, str) else json.dumps(v, indent=1, sort_keys=True) for v in (a, b))
            diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "cold", "warm", lineterm="", n=1)
            out.append(f"{key}:\n" + "\n".join(list(diff)[2:40]))
    return out


async def test_every_answer_from_a_restored_cache_equals_a_cold_load(tmp_path):
    cold, warm = await _cold_then_warm(tmp_path, lambda client: sweep(client, client.project))
    # the sweep asked about everything there is: it means something when both agree
    kinds = {k.split(" ")[0] for k in cold}
    assert {"hover", "lenses", "actions", "symbols", "document", "tree", "diagnostics"} <= kinds
    assert sum(1 for k in cold if k.startswith("document ")) >= 10
    assert any(k.startswith("actions") and "pattern-learning/events.jsonl" in k and v for k, v in cold.items())
    diffs = _differences(cold, warm)
    assert not diffs, f"{len(diffs)} of {len(cold)} answers differ after a restart:\n" + "\n".join(diffs[:20])


async def test_accept_and_reject_on_the_pending_line_after_a_restart(tmp_path):
    """The first of issue 34's defects alone: restored proposals kept no link to their store event,
    so the proposal-at-line lookup (its line number) found nothing on a warm start."""
    async def ask(client):
        events = client.project / ".harn/memory/project/pattern-learning/events.jsonl"
        prop = next(p for p in Workspace.load(str(client.project)).pending_proposals() if p.kind != "harn_workflow")
        line = prop.record.line_no - 1
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=events.as_uri(), language_id="jsonl", version=1, text=events.read_text())))
        at = types.Position(line=line, character=0)
        acts = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=events.as_uri()), range=types.Range(start=at, end=at),
            context=types.CodeActionContext(diagnostics=[])))
        return [(a.kind, a.title) for a in acts or []], prop.name

    (cold, name), (warm, _) = await _cold_then_warm(tmp_path, ask)
    assert cold == [("source.harnState.accept", f"Accept skill {name}"),
                    ("source.harnState.reject", "Reject for 14 days")]
    assert warm == cold
