"""Shared pieces of the fuzz tests: budgets, invariants, a canonical workspace summary."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, settings

from harn_ls.formats.problems import Problem

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-project"
LEGACY = REPO / "fixtures" / "legacy-project"

EXAMPLES = int(os.environ.get("HARN_LS_FUZZ_EXAMPLES", "150"))
LONG = EXAMPLES > 1000  # `make fuzz`
CODE_RE = re.compile(r"^(HL|HARN)-")

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,  # the bounded run is reproducible; the long run explores
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture, HealthCheck.large_base_example],
    database=None,
)


def small(n: int) -> settings:
    """A budget for expensive properties: n examples by default, scaled up in the long run."""
    return settings(FUZZ, max_examples=max(1, EXAMPLES * n // 150))


class Counter:
    """Counts inputs fed to each reader (reported by the session hook in conftest)."""

    counts: dict[str, int] = {}

    @classmethod
    def hit(cls, reader: str, n: int = 1) -> None:
        cls.counts[reader] = cls.counts.get(reader, 0) + n


def check_problems(problems, what: str = "") -> None:
    for p in problems:
        assert isinstance(p, Problem), (what, p)
        assert isinstance(p.path, str) and p.path, (what, p)
        assert type(p.line) is int and p.line >= 0, (what, p)
        assert isinstance(p.code, str) and CODE_RE.match(p.code), (what, p)
        assert isinstance(p.message, str) and p.message, (what, p)


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True, default=repr, ensure_ascii=True)


def summary(ws) -> dict:
    """What must agree between an incrementally updated and a cold-loaded workspace."""
    out: dict = {}
    out["memory"] = {
        ns: [(r.seq, r.id, r.key, _canon(r.value), r.text, list(r.tags), r.status, _canon(r.flags))
             for r in space.records()]
        for ns, space in sorted(ws.memory.items())
    }
    out["config"] = {ns: _canon(space.config) for ns, space in ws.memory.items()}
    out["facts"] = sorted(f.id for f in ws.facts.values())
    out["facts_by_id"] = sorted(ws.facts_by_id)
    out["facts_by_file"] = {k: sorted(v) for k, v in sorted(ws.facts_by_file.items())}
    out["proposals"] = sorted(p.id for p in ws.pattern.pending) if ws.pattern else []
    out["observations"] = sorted(getattr(o, "id", repr(o)) for o in ws.pattern.observations) if ws.pattern else []
    out["checkpoints"] = {k: sorted(c.entries) for k, c in sorted(ws.checkpoints.items())}
    out["runs"] = sorted(ws.runs)
    out["transcripts"] = sorted(ws.transcripts)
    out["skills"] = sorted(s.id for s in ws.skills.skills) if ws.skills else []
    probs: dict[str, list] = {}
    for p in ws.problems():
        probs.setdefault(p.path, []).append((p.line, p.code))
    out["problems"] = {k: sorted(v) for k, v in sorted(probs.items())}
    out["recall"] = {ns: (len(ix), _canon(ix.config)) for ns, ix in sorted(ws.recall.indexes.items())}
    out["counts"] = ws.counts()
    return out


def copy_sample(dest: Path, src: Path = SAMPLE) -> Path:
    target = dest / src.name
    shutil.copytree(src, target, symlinks=True)
    return target


def minimal_project(dest: Path) -> Path:
    root = dest / "proj"
    (root / ".harn" / "memory").mkdir(parents=True)
    (root / "harn.toml").write_text('[package]\nname = "fuzz"\n')
    return root
