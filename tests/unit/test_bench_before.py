"""`make bench` prints each budget beside the run before it (issue 32: "before/after for each budget"):
the previous results.json's judged values are read before the run replaces it, and the table shows
them, or says a row is new."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import cli_bench
from bench import run as bench_run


def _verdict(**values: float) -> dict:
    return {k: {"value": v, "budget": 2.0, "met": v <= 2.0} for k, v in values.items()}


def test_previous_verdict_reads_the_values_and_survives_a_missing_or_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    assert bench_run.previous_verdict(path) == {}  # no earlier run
    path.write_text("{not json")
    assert bench_run.previous_verdict(path) == {}
    path.write_text(json.dumps({"verdict": {"a": {"value": 1.5, "budget": 2, "met": True},
                                            "b": {"value": "n/a", "budget": 2, "met": False}}}))
    assert bench_run.previous_verdict(path) == {"a": 1.5}  # a value that is not a number is not a "before"
    path.write_text(json.dumps(["a list"]))
    assert bench_run.previous_verdict(path) == {}


def test_the_budget_lines_show_before_and_new_rows() -> None:
    lines = bench_run.budget_lines(_verdict(**{"cold load / bare orjson": 7.83, "fresh row": 1.0}),
                                   {"cold load / bare orjson": 6.81})
    assert lines[0].startswith("budgets (before =")
    assert "MISS cold load / bare orjson: 7.83 (budget 2; before 6.81)" in lines
    assert "MET  fresh row: 1 (budget 2; new row)" in lines
    # no earlier run: the lines are as they always were
    assert bench_run.budget_lines(_verdict(x=1.0), {}) == ["MET  x: 1 (budget 2)"]


def test_the_floor_children_read_every_line_the_parse_reads() -> None:
    """The floor rows (issue 32: what a reader in C leaves for Python) decode the same memory lines,
    and the same other files, as the two orjson parses they are set against: a floor that found fewer
    logs (a glob that skips `.harn`, a decoder that drops a kind of line) would read low."""
    project = str(Path(__file__).resolve().parents[2] / "fixtures" / "sample-project")

    def count(child: str) -> int:
        return int(subprocess.run([sys.executable, "-c", child, project], capture_output=True, text=True,
                                  check=True).stdout)

    lines = count(cli_bench.ORJSON_CHILD)
    assert lines > 40  # the sample's memory logs, all of them
    assert count(cli_bench.FLOOR_CHILD) == lines
    everything = count(cli_bench.ORJSON_ALL_CHILD)
    assert everything > lines  # run records and checkpoints too
    assert count(cli_bench.FLOOR_ALL_CHILD) == everything
