"""scripts/mutations.py names exact pieces of harn_ls source: each must still occur exactly once in its
module, or `make mutate` reports the mutation stale and that bug is no longer planted. Checked here (every
helper runs tests/arch) so a change that rewrites a mutated line updates the list with it."""

from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(REPO, "scripts"))

from mutations import MODULE_TESTS, MUTATIONS  # noqa: E402


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: f"{m.module}:{m.name}")
def test_each_mutation_finds_its_source_once(mutation):
    with open(os.path.join(REPO, "harn_ls", mutation.module), encoding="utf-8") as fh:
        source = fh.read()
    assert source.count(mutation.before) == 1, f"{mutation.name}: its piece of source is gone or repeated"
    assert mutation.after != mutation.before


def test_the_covering_tests_exist():
    named = {t.split("::")[0] for tests in MODULE_TESTS.values() for t in tests}
    named |= {t.split("::")[0] for m in MUTATIONS for t in m.tests}
    assert sorted(t for t in named if not os.path.exists(os.path.join(REPO, t))) == []
