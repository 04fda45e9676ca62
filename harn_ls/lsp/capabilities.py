"""What the client declared it can take, read once from `initialize`, so every answer is shaped by it.

LSP leaves most of a client's abilities optional; a server that sends what was not declared gets
it shown wrong (Markdown as literal `**text**` in a plain-text hover) or not at all (a CodeAction
literal to a client that only knows `Command`). One record per session, asked by every feature:

* `position_encoding`: the encoding of every `character` sent or read (utf-8, utf-16, utf-32),
  chosen as pygls chooses it (the client's first offered one pygls supports, else utf-16): pygls
  keeps the documents' text in it, so our positions must be in it too.
* `hover_markdown`: `textDocument.hover.contentFormat` names markdown; else hovers are plain text.
* `code_action_literals`: `textDocument.codeAction.codeActionLiteralSupport`; else `Command[]`.
* `show_document`, `text_document_content`: whether `harn-state:` documents can be shown at all.
* refresh supports: `workspace/codeLens/refresh` and `workspace/textDocumentContent/refresh` are
  requests a client must declare it handles.
* `hierarchical_symbols`: DocumentSymbol trees, else flat SymbolInformation.
* `pictures`: whether `harn-state:` documents keep their picture lines (inline SVG), from
  `initializationOptions.pictures: true`: no LSP capability says how a client shows a document
  (rendered, or as text), and a client's name is no declaration (an editor we do not know, or one
  whose name happens to contain "code", would get SVG in a text buffer), so only a client that says
  it renders them gets them (our VS Code extension does); any other gets the plain-text reader's.
* `client_commands`: command ids the client runs itself (our VS Code extension and Neovim plugin
  open `harn-state:` documents and diff proposals), from `initializationOptions.clientCommands`;
  no LSP capability says which commands a client runs, so a client that names none gets only
  commands the server itself executes (see lsp/view_types.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder, get_capability

from harn_ls.util.message_text import quote_json


@dataclass(frozen=True)
class ClientProfile:
    """The client's declared abilities that change what the server sends (defaults: a bare client)."""

    position_encoding: str = "utf-16"
    hover_markdown: bool = False
    code_action_literals: bool = False
    show_document: bool = False
    text_document_content: bool = False
    code_lens_refresh: bool = False
    text_document_content_refresh: bool = False
    work_done_progress: bool = False
    configuration: bool = False
    hierarchical_symbols: bool = False
    pictures: bool = False
    client_commands: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, caps: types.ClientCapabilities | None, init_options: Any = None) -> ClientProfile:
        caps = caps or types.ClientCapabilities()
        formats = get_capability(caps, "text_document.hover.content_format") or []
        declared = init_options.get("clientCommands") if isinstance(init_options, dict) else None
        commands = frozenset(c for c in declared if isinstance(c, str)) if isinstance(declared, list) else frozenset()
        content = get_capability(caps, "workspace.text_document_content")
        return cls(
            position_encoding=str(ServerCapabilitiesBuilder.choose_position_encoding(caps)),
            hover_markdown=types.MarkupKind.Markdown in formats,
            code_action_literals=get_capability(caps, "text_document.code_action.code_action_literal_support") is not None,
            show_document=bool(get_capability(caps, "window.show_document.support")),
            text_document_content=content is not None,
            code_lens_refresh=bool(get_capability(caps, "workspace.code_lens.refresh_support")),
            # LSP 3.18 names no refreshSupport flag for textDocumentContent: declaring the
            # capability is declaring the refresh handler (vscode-languageclient does both)
            text_document_content_refresh=content is not None,
            work_done_progress=bool(get_capability(caps, "window.work_done_progress")),
            configuration=bool(get_capability(caps, "workspace.configuration")),
            hierarchical_symbols=bool(get_capability(caps, "text_document.document_symbol.hierarchical_document_symbol_support")),
            pictures=pictures_option(init_options)[0],
            client_commands=commands,
        )


def pictures_option(init_options: Any) -> tuple[bool, str | None]:
    """(`initializationOptions.pictures`, a warning when it is there but not a boolean)."""
    value = init_options.get("pictures") if isinstance(init_options, dict) else None
    if value is None or isinstance(value, bool):
        return value is True, None
    return False, f"initializationOptions.pictures: ignored invalid value {quote_json(value)} (true or false)"
