"""Installs harn-ls and its dependencies into vscode-extension/bundled/libs for one VSIX target.

    python scripts/bundle_server.py --target linux-x64 --pythons 3.11 3.12 3.13 --wheel dist/harn_ls-X.whl

For every Python version: `pip download` the wheels for the target platform (binary only), then
sort them: pure-Python and abi3 wheels go once into libs/common, version-specific ones
(cpXY-cpXY) into libs/cpXY. Installed with `pip install --target --platform --python-version
--only-binary=:all: --no-deps`, so no wheel for another platform can get in; every compiled file
is then checked against the target's machine type. Writes libs/manifest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# VS Code target -> (CPU name in wheel platform tags, ELF machine number of its compiled files)
TARGETS = {
    "linux-x64": ("x86_64", 62),
    "linux-arm64": ("aarch64", 183),
}
GLIBC_MAX = 28  # manylinux_2_28: glibc 2.28 and newer (Debian 10+, Ubuntu 18.10+, RHEL 8+)


def platform_args(arch: str) -> list[str]:
    """pip expands only the legacy manylinux2014 tag itself: list every manylinux_2_N it may use."""
    tags = [f"manylinux_2_{n}_{arch}" for n in range(GLIBC_MAX, 16, -1)] + [f"manylinux2014_{arch}"]
    return [a for t in tags for a in ("--platform", t)]
WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", *args]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def is_shared(wheel: str) -> bool:
    m = WHEEL_RE.match(wheel)
    if not m:
        raise SystemExit(f"bundle: unexpected wheel name {wheel}")
    return m["abi"] == "abi3" or (m["abi"] == "none" and m["plat"] == "any")


def elf_machine(path: Path) -> int | None:
    with open(path, "rb") as fh:
        head = fh.read(20)
    if head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True, choices=sorted(TARGETS))
    ap.add_argument("--pythons", nargs="+", required=True)
    ap.add_argument("--wheel", required=True, help="the harn_ls wheel")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "bundled" / "libs"))
    args = ap.parse_args()
    arch, machine = TARGETS[args.target]
    platform = platform_args(arch)
    out = Path(args.out)
    wheel_sha = hashlib.sha256(Path(args.wheel).read_bytes()).hexdigest()
    try:
        old = json.loads((out / "manifest.json").read_text())
        if (old.get("target"), old.get("pythons"), old.get("harnLsWheelSha256")) == (args.target, args.pythons, wheel_sha):
            print(f"bundle: {out} is up to date ({args.target}, Python {', '.join(args.pythons)})")
            return 0
    except (OSError, ValueError):
        pass
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shared: dict[str, str] = {}  # wheel file name -> its downloaded path
    per_version: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="harn-bundle-") as tmp:
        for py in args.pythons:
            dl = Path(tmp) / py
            pip("download", "-q", "--only-binary=:all:", *platform, "--implementation", "cp",
                "--python-version", py, "-d", str(dl), args.wheel)
            specific = []
            for whl in sorted(os.listdir(dl)):
                if is_shared(whl):
                    shared.setdefault(whl, str(dl / whl))
                else:
                    specific.append(str(dl / whl))
            tag = "cp" + py.replace(".", "")
            per_version[tag] = sorted(os.path.basename(w) for w in specific)
            if specific:
                pip("install", "-q", "--no-deps", "--no-compile", "--only-binary=:all:", *platform,
                    "--implementation", "cp", "--python-version", py, "--target", str(out / tag), *specific)
            else:
                (out / tag).mkdir()
        names: dict[str, str] = {}
        for whl in shared:
            m = WHEEL_RE.match(whl)
            if m["name"].lower() in names and names[m["name"].lower()] != whl:
                raise SystemExit(f"bundle: two shared wheels of {m['name']}: {names[m['name'].lower()]} and {whl}")
            names[m["name"].lower()] = whl
        pip("install", "-q", "--no-deps", "--no-compile", "--only-binary=:all:", *platform,
            "--implementation", "cp", "--python-version", args.pythons[0], "--target", str(out / "common"),
            *shared.values())
    # console scripts carry this machine's interpreter path: the extension never uses them
    for d in out.iterdir():
        shutil.rmtree(d / "bin", ignore_errors=True)
    compiled = 0
    for f in out.rglob("*"):
        if f.is_file() and (f.suffix == ".so" or ".so." in f.name):
            got = elf_machine(f)
            if got != machine:
                raise SystemExit(f"bundle: {f} is not a {args.target} binary (ELF machine {got})")
            compiled += 1
    # numpy's own test suites (~8 MB per Python version) are never imported
    for tests in [t for t in out.glob("cp*/numpy/**/tests") if t.is_dir()]:
        shutil.rmtree(tests, ignore_errors=True)
    for pyc in out.rglob("__pycache__"):
        shutil.rmtree(pyc, ignore_errors=True)
    manifest = {
        "target": args.target,
        "platform": f"manylinux_2_{GLIBC_MAX}_{arch}",
        "pythons": args.pythons,
        "shared": sorted(shared),
        "perVersion": per_version,
        "compiledFiles": compiled,
        "harnLsWheelSha256": wheel_sha,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"bundle: {args.target} for Python {', '.join(args.pythons)}: {size / 1e6:.1f} MB, "
          f"{compiled} compiled files, {len(shared)} shared wheels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
