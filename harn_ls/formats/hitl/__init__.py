"""Requests waiting for a human (harn-formats §N, §P): reading them and the rows an answer appends."""
