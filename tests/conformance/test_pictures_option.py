"""Picture lines (inline SVG in `harn-state:` documents) go to a client that says it shows documents
rendered, `initializationOptions.pictures: true` (our VS Code extension does), never by the client's
name: an editor the server does not know, whatever it calls itself, gets the plain-text reader's
document unless it asks; a value that is not a boolean is named in a warning and ignored.

The document is the memory namespace page whose first section is a growth chart.
"""

from __future__ import annotations

import pytest

from harn_ls.render.svg import PICTURE_PREFIX, strip_pictures
from tests.conformance.bare_client import BareClient
from tests.lsp.conftest import HARN_DOUBLE, copy_sample

DOC = "harn-state:/memory/agent/notes.md"
CAPS = {"workspace": {"textDocumentContent": {"dynamicRegistration": False}}}


@pytest.mark.parametrize(("name", "pictures", "shown"), [
    ("Visual Studio Code", True, True),  # our VS Code extension
    ("Neovim", True, True),  # any client that renders the documents and says so
    ("my-markdown-editor", True, True),
    ("Visual Studio Code", None, False),  # a name is no declaration (a generic LSP client in VS Code)
    ("vscode-neovim", None, False),  # (it matched `code` and got SVG in a plain-text buffer)
    ("Code - OSS", False, False),
    (None, None, False),
    ("Cursor", "yes", False),  # not a boolean: ignored, with a warning
], ids=["vscode-asks", "neovim-asks", "unknown-asks", "vscode-name-only", "vscode-neovim", "declines", "no-info",
        "not-a-bool"])
def test_pictures_only_for_a_client_that_asks(tmp_path, name, pictures, shown):
    project = copy_sample(tmp_path)
    options: dict = {"settings": {"harnState": {"harnPath": str(HARN_DOUBLE)}}, "workspaceTrusted": True}
    if pictures is not None:
        options["pictures"] = pictures
    c = BareClient.stdio()
    try:
        params = {"processId": None, "capabilities": CAPS, "initializationOptions": options,
                  "rootUri": project.as_uri(), "workspaceFolders": [{"uri": project.as_uri(), "name": "sample"}]}
        if name is not None:
            params["clientInfo"] = {"name": name}
        c.request("initialize", params)
        c.notify("initialized", {})
        c.wait_notification("harn/status")
        text = c.request("workspace/textDocumentContent", {"uri": DOC})["result"]["text"]
        lines = [line for line in text.split("\n") if line.startswith(PICTURE_PREFIX)]
        if shown:
            assert lines and "<svg" in lines[0]
        else:
            assert lines == [] and text == strip_pictures(text)
            assert "## At a glance" in text  # the section stays, its table carries the numbers
        warned = [n["params"]["message"] for n in c.notifications if n["method"] == "window/logMessage"
                  and "initializationOptions.pictures" in n["params"]["message"]]
        assert bool(warned) == (pictures == "yes"), warned
        c.request("shutdown")
        c.notify("exit")
        assert c.exit_status() == 0
    finally:
        c.close()
