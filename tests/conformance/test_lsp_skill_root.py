"""A skillRoot outside Harn's pattern-learning roots is warned about at start, in harn/status and in the
Accept preview, over the real server on stdio (harn-formats §E.3: Harn reads learned skills only from
.claude/skills and .burin/skills)."""

from __future__ import annotations

from lsprotocol import types

from tests.lsp.conftest import HARN_DOUBLE, make_client_fixture, project  # noqa: F401  (fixture)

WARNING = "Harn will not see skills here and may propose this one again"

client = make_client_fixture({"settings": {"harnState": {"harnPath": str(HARN_DOUBLE), "skillRoot": ".harn/skills"}},
                              "workspaceTrusted": True})


async def test_custom_skill_root_warned_at_start_status_and_preview(client):
    await client.rec.wait_for(lambda: any(WARNING in m for m in client.rec.shown), 20)
    shown = [m for m in client.rec.shown if WARNING in m]
    assert len(shown) == 1 and "`.harn/skills`" in shown[0]  # the value quoted as inert text (issue 27)
    await client.rec.wait_for(lambda: any(s.get("warnings") for s in client.rec.status), 20)
    assert any(WARNING in w for s in client.rec.status for w in s.get("warnings", []))
    doc = (await client.workspace_text_document_content_async(
        types.TextDocumentContentParams(uri="harn-state:/proposals/prompt-2629ccc60808.md"))).text
    assert "**Warning:**" in doc and WARNING in doc
    assert ".harn/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md" in doc  # the preview shows the real target
