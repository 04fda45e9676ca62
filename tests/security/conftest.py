"""The LSP fixtures (a real `harn-ls serve` over stdio on a copy of the sample project) for attack tests."""

from tests.lsp.conftest import project  # noqa: F401  (pytest fixture)
