"""A small mutation run: plant plausible bugs in one module at a time and see whether its tests fail.

    .venv/bin/python scripts/mutate.py formats/hitl/requests.py cache/store.py    (or: make mutate MODULE=...)
    .venv/bin/python scripts/mutate.py --list                            (the modules and their mutations)
    .venv/bin/python scripts/mutate.py cache/checkpoint_history.py --only evict-newest    (one mutation)
    .venv/bin/python scripts/mutate.py cache/checkpoint_history.py --tests tests/unit/test_surviving_mutants.py

The mutations are a hand list (scripts/mutations.py): each replaces one exact piece of a module's
source, and names the tests that cover that code. Each is applied to a private copy of the checkout
(the working tree is never touched), the tests run there with `pytest -x`, and the mutation is
*killed* when they fail, *survives* when they pass. A mutation whose piece of source no longer
occurs exactly once is *stale* (the code moved on: update the list). The covering tests are first
run once unmutated: they must pass, or nothing is tried. Not part of `make test` (minutes per
module). Exit status 0 only when every mutation tried was killed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from mutations import MODULE_TESTS, MUTATIONS, Mutation  # noqa: E402

_SKIP = shutil.ignore_patterns(".venv", ".git", "node_modules", "__pycache__", "build", "dist", "*.vsix",
                               ".pytest_cache", "*.egg-info")
TIMEOUT_S = 1200  # per pytest run; a run that hangs counts as killed (a test's own timeout fails it first)


def _module(name: str) -> str:
    name = name.strip().removeprefix("./").removeprefix("harn_ls/")
    return name if name.endswith(".py") else name.replace(".", "/") + ".py"


def _samples_env() -> dict[str, str]:
    """The copy lives in a temporary folder: tell its tests where the Harn samples are."""
    env = {}
    if not os.environ.get("HARN_SAMPLES"):
        for c in (REPO.parent / "shared" / "harn-samples", Path("/work/shared/harn-samples")):
            if c.is_dir():
                env["HARN_SAMPLES"] = str(c)
                break
    return env


def _pytest(copy: Path, tests: list[str]) -> tuple[bool, float, str]:
    """(passed, seconds, last lines of output) for `tests` run in `copy` on its own sources."""
    env = {**os.environ, **_samples_env(), "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - start, "timed out"
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
    return proc.returncode == 0, time.monotonic() - start, tail


def _check_imports_from(copy: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    out = subprocess.run([sys.executable, "-c", "import harn_ls; print(harn_ls.__file__)"], env=env, cwd=copy,
                         capture_output=True, text=True, check=True).stdout.strip()
    if not out.startswith(str(copy)):
        raise SystemExit(f"the copy's harn_ls is not the one imported ({out}): cannot mutate safely")


def run(modules: list[str], only: set[str] | None, verbose: bool, tests: list[str] | None = None) -> int:
    chosen = [m for m in MUTATIONS if m.module in modules and (not only or m.name in only)]
    if not chosen:
        raise SystemExit("no mutation for that choice; see --list")
    results: list[tuple[Mutation, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="harn-ls-mutate-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(REPO, copy, ignore=_SKIP, symlinks=True)
        _check_imports_from(copy)
        for module in modules:
            mine = [m for m in chosen if m.module == module]
            if not mine:
                continue
            baseline_tests = tests or list(dict.fromkeys(t for m in mine for t in m.tests or MODULE_TESTS[module]))
            ok, secs, tail = _pytest(copy, baseline_tests)
            print(f"== {module}: {len(mine)} mutation(s); covering tests unmutated: "
                  f"{'pass' if ok else 'FAIL'} ({secs:.0f} s)", flush=True)
            if not ok:
                print(tail)
                return 2
            path = copy / "harn_ls" / module
            original = path.read_text("utf-8")
            for m in mine:
                count = original.count(m.before)
                if count != 1:
                    results.append((m, f"stale ({count} matches)", 0.0))
                    print(f"  {m.name:<28} stale: its source occurs {count} times", flush=True)
                    continue
                path.write_text(original.replace(m.before, m.after), "utf-8")
                try:
                    passed, secs, tail = _pytest(copy, tests or list(m.tests or MODULE_TESTS[module]))
                finally:
                    path.write_text(original, "utf-8")
                verdict = "SURVIVED" if passed else "killed"
                results.append((m, verdict, secs))
                print(f"  {m.name:<28} {verdict:<8} {secs:6.0f} s  {m.what}", flush=True)
                if verbose and not passed:
                    print("    " + tail.replace("\n", "\n    "))
    bad = [(m, v) for m, v, _s in results if v != "killed"]
    killed = sum(1 for _m, v, _s in results if v == "killed")
    print(f"\n{killed} of {len(results)} killed" + ("" if not bad else "; not killed: " +
          ", ".join(f"{m.module}:{m.name} ({v})" for m, v in bad)))
    return 0 if not bad else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="modules under harn_ls/ (formats/hitl/requests.py, cache/store.py, ...)")
    ap.add_argument("--only", action="append", help="only the mutation(s) of this name")
    ap.add_argument("--list", action="store_true", help="list the modules and their mutations")
    ap.add_argument("--tests", nargs="+", help="run these tests instead of the covering ones (does one test kill it?)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show how each killed mutation failed")
    args = ap.parse_args(argv)
    if args.list or not args.modules:
        for module in sorted({m.module for m in MUTATIONS}):
            print(module)
            for m in MUTATIONS:
                if m.module == module:
                    print(f"  {m.name:<28} {m.what}")
        return 0 if args.list else 2
    modules = [_module(m) for m in args.modules]
    unknown = [m for m in modules if m not in MODULE_TESTS]
    if unknown:
        raise SystemExit(f"no mutations for {', '.join(unknown)}; see --list")
    return run(modules, set(args.only) if args.only else None, args.verbose, args.tests)


if __name__ == "__main__":
    sys.exit(main())
