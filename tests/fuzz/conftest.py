"""Print how many inputs each reader was fed (the counts quoted in docs/guarantees.md)."""

from __future__ import annotations

from tests.fuzz.common import EXAMPLES, Counter


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not Counter.counts:
        return
    terminalreporter.write_sep("-", f"fuzz inputs per reader (HARN_LS_FUZZ_EXAMPLES={EXAMPLES})")
    for name, n in sorted(Counter.counts.items()):
        terminalreporter.write_line(f"{name:>22}: {n}")
    terminalreporter.write_line(f"{'total':>22}: {sum(Counter.counts.values())}")
