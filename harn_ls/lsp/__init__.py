"""The pygls layer: thin translation between LSP and the workspace model."""
