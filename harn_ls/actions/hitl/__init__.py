"""Answering a request waiting for a human: Harn's resume CLI, and the rows harn-ls appends itself."""
