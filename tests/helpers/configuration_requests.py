"""What the server asks a pytest-lsp client with `workspace/configuration`, recorded."""

from __future__ import annotations

from pytest_lsp import LanguageClient


def record_configuration_requests(client: LanguageClient) -> list[tuple[str | None, str | None]]:
    """Each workspace/configuration item the server asks `client` for, as (scopeUri, section), in
    order; answered as pytest-lsp answers them (from `set_configuration`)."""
    asked: list[tuple[str | None, str | None]] = []
    answer = client.get_configuration

    def recording(*, section=None, scope_uri=None):
        asked.append((scope_uri, section))
        return answer(section=section, scope_uri=scope_uri)

    client.get_configuration = recording  # the double answers through it: swapped to note each item
    return asked
