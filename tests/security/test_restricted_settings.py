"""Issue 27 item 1: every harnState setting that names a path or a program is restricted in
untrusted workspaces (package.json `capabilities.untrustedWorkspaces.restrictedConfigurations`:
VS Code then ignores a folder's `.vscode/settings.json` value for it in Restricted Mode), and the
extension's own reader (vscode-extension/src/settings.ts) restricts the same list.

Every setting is classified here: a new one that names a path or a program and is not restricted,
or a new one not classified at all, fails."""

from __future__ import annotations

import json
import re
from pathlib import Path

EXT = Path(__file__).resolve().parents[2] / "vscode-extension"

# names a path or a program (or the arguments a program gets): restricted
PATH_OR_PROGRAM = {
    "harnState.server.path": "the program that starts the server",
    "harnState.server.args": "that program's arguments",
    "harnState.harnPath": "the harn binary probes and resume run",
    "harnState.skillRoot": "where Accept writes SKILL.md; its value is shown in the start-up warning",
    "harnState.projectRoots": "the folders served (paths; its values are shown in warnings)",
    "harnState.harnEnv": "the environment the harn program runs with",
}
# names neither: a folder may set them
NEITHER = {
    "harnState.probes.timeoutSeconds", "harnState.probes.storeFacts", "harnState.facts.minConfidence",
    "harnState.codeLens.facts", "harnState.codeLens.checkpoints", "harnState.transcripts.showPrivate",
    "harnState.documents.openAs", "harnState.trace.server", "harnState.hitl.reviewer",
}


def _package() -> dict:
    return json.loads((EXT / "package.json").read_text())


def test_every_setting_is_classified():
    props = set(_package()["contributes"]["configuration"]["properties"])
    assert props == set(PATH_OR_PROGRAM) | NEITHER, "classify the new setting here: does it name a path or a program?"


def test_path_and_program_settings_are_restricted_in_untrusted_workspaces():
    trust = _package()["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited"
    assert set(trust["restrictedConfigurations"]) == set(PATH_OR_PROGRAM)


def test_the_extension_reads_the_same_list_trusted_only():
    src = (EXT / "src" / "settings.ts").read_text()
    m = re.search(r"RESTRICTED_SETTINGS: readonly string\[\] = \[([^\]]*)\]", src)
    assert m, "RESTRICTED_SETTINGS not found in settings.ts"
    listed = {"harnState." + s for s in re.findall(r"'([^']+)'", m.group(1))}
    assert listed == set(PATH_OR_PROGRAM)
    # and the settings sent to the server (initialize, didChangeConfiguration, workspace/configuration)
    # come from that reader, never from a raw getConfiguration copy
    client = (EXT / "src" / "client.ts").read_text()
    assert "from './settings'" in client and "configuration: async" in client
    assert "JSON.stringify(vscode.workspace.getConfiguration" not in client
    for name in ("launch.ts", "extension.ts"):
        text = (EXT / "src" / name).read_text()
        assert not re.search(r"getConfiguration\([^)]*\)\.get<[^>]*>"
                             r"\('(server\.path|server\.args|harnPath|skillRoot)'", text), name
        assert not re.search(r"cfg\.get<[^>]*>\('(server\.path|server\.args|harnPath|skillRoot)'", text), name
