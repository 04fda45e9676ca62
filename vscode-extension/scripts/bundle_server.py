"""Installs harn-ls and its locked dependencies into vscode-extension/bundled/libs for one VSIX target.

    python scripts/bundle_server.py --target darwin-arm64 --pythons 3.11 3.12 3.13 3.14 \\
        --wheel build/dist/harn_ls-X-py3-none-any.whl --lock requirements/runtime.lock

* What: exactly the versions of requirements/runtime.lock (uv's universal lock of pyproject.toml's
  runtime dependencies, every distribution file's SHA-256 in it), its environment markers judged
  for the target (platform and Python version, not this machine). Wheels only, downloaded for the
  target's platform tags by pip (`--platform`, `--python-version`, `--require-hashes`): nothing is
  built here, and a file whose hash is not in the lock is refused by pip and again by this script.
* Where: pure-Python and abi3 wheels once into libs/common, version-specific ones (cpXY-cpXY)
  into libs/cpXY, each installed with `pip install --target --no-deps`.
* Floors (PLATFORMS): a wheel must carry a platform tag no newer than the target's floor
  (macOS 11.0, glibc 2.28 = manylinux_2_28); checked on every wheel's own tags after download.
* Checked: every file of the bundle is read by its header (native_check.py): each native binary
  must be for the target's format and CPU (a universal Mach-O must hold the target's slice).
* Trimmed: what the server never imports (tests, C headers, static libraries, type stubs, numpy's
  random / fft / polynomial / f2py / testing / typing / ma and its test-only extension modules;
  the console scripts, which name this machine's interpreter). A native library that numpy
  vendors (numpy.libs/, numpy/.dylibs/: OpenBLAS, libgfortran) is the same file for every Python
  version: it is kept once, in libs/native, and bundled/tool/serve.py puts it back in place (a
  hard link, else a copy) the first time a Python version starts, before numpy is imported.
* When the target is this machine's platform, the bundle is run once (`harn-ls recall` on the
  sample project through serve.py) with this interpreter, so a trim that removed something the
  server needs fails the build.

Writes libs/manifest.json (target, floor, pythons, each wheel with its SHA-256, what serve.py
restores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform as host_platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import native_check  # noqa: E402  (beside this script)

MACOS_FLOOR = (11, 0)  # Big Sur: the first macOS on Apple silicon; every wheel we need has a build at or below it
GLIBC_FLOOR = 28  # manylinux_2_28: glibc 2.28 and newer (Debian 10+, Ubuntu 18.10+, RHEL 8+, Amazon Linux 2023)

# VS Code target -> how its wheels are chosen and judged
PLATFORMS = {
    "linux-x64": {"os": "linux", "cpu": "x86_64", "markers": ("linux", "Linux", "x86_64")},
    "linux-arm64": {"os": "linux", "cpu": "aarch64", "markers": ("linux", "Linux", "aarch64")},
    "darwin-x64": {"os": "macos", "cpu": "x86_64", "markers": ("darwin", "Darwin", "x86_64")},
    "darwin-arm64": {"os": "macos", "cpu": "arm64", "markers": ("darwin", "Darwin", "arm64")},
}
# CPU names a macOS wheel tag may carry for a machine of this CPU (universal2 holds both slices)
MAC_TAG_CPUS = {"arm64": {"arm64", "universal2"}, "x86_64": {"x86_64", "universal2", "intel", "universal"}}
LEGACY_MANYLINUX = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}

WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
# never imported by the server (numpy's lazily loaded subpackages included: `import numpy` does not load them)
TRIM_DIRS = {"tests", "testing", "__pycache__", "include", "benchmarks"}
TRIM_NUMPY = ["random", "fft", "polynomial", "f2py", "typing", "ma", "doc", "_pyinstaller", "_core/lib",
              "_core/include"]
TRIM_NUMPY_FILES = re.compile(r"^_core/_(simd|multiarray_tests|umath_tests|rational_tests|struct_ufunc_tests|"
                              r"operand_flag_tests)\.")
TRIM_SUFFIXES = (".pyi", ".h", ".a", ".c", ".pxd", ".pyx")
VENDORED_LIB_DIRS = re.compile(r"(^[^/]+\.libs/|/\.dylibs/)")


# ---------------------------------------------------------------------------------------------- the lock

def read_lock(path: Path) -> list[dict]:
    """Requirements of a `uv pip compile --generate-hashes` file: name, version, marker, hashes."""
    entries, current = [], ""
    for raw in path.read_text().splitlines() + [""]:
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("--hash") else raw.rstrip()
        if current and not current.endswith("\\"):
            entries.append(current)
            current = ""
        if not line.strip():
            continue
        current = (current[:-1] + " " + line.strip()) if current.endswith("\\") else line.strip()
    out = []
    for entry in entries:
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", entry)
        spec = entry.split("--hash", 1)[0].strip().rstrip("\\").strip()
        req, _, marker = spec.partition(";")
        name, _, version = req.strip().partition("==")
        if not version or not hashes:
            raise SystemExit(f"bundle: lock entry without an exact version and hashes: {entry[:80]}")
        out.append({"name": name.strip(), "version": version.strip(), "marker": marker.strip(), "hashes": hashes})
    return out


def marker_env(target: str, python: str) -> dict:
    sys_platform, system, machine = PLATFORMS[target]["markers"]
    return {"sys_platform": sys_platform, "platform_system": system, "platform_machine": machine,
            "os_name": "posix", "python_version": python, "python_full_version": python + ".0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "platform_release": "", "platform_version": "", "extra": ""}


def for_target(lock: list[dict], target: str, python: str) -> list[dict]:
    """The lock's entries whose marker holds on the target (pip would judge them on this machine)."""
    from packaging.markers import Marker

    env = marker_env(target, python)
    return [e for e in lock if not e["marker"] or Marker(e["marker"]).evaluate(env)]


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------------------------- floors

def pip_platforms(target: str) -> list[str]:
    info = PLATFORMS[target]
    if info["os"] == "macos":
        # pip widens a macosx tag to every older macOS and the universal builds (packaging's mac_platforms)
        return [f"macosx_{MACOS_FLOOR[0]}_{MACOS_FLOOR[1]}_{info['cpu']}"]
    # pip widens only the legacy manylinux2014 tag itself: list every manylinux_2_N it may use
    cpu = info["cpu"]
    return [f"manylinux_2_{n}_{cpu}" for n in range(GLIBC_FLOOR, 16, -1)] + [f"manylinux2014_{cpu}"]


def tag_within_floor(tag: str, target: str) -> bool:
    info = PLATFORMS[target]
    if tag == "any":
        return True
    if info["os"] == "macos":
        m = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", tag)
        return bool(m) and (int(m[1]), int(m[2])) <= MACOS_FLOOR and m[3] in MAC_TAG_CPUS[info["cpu"]]
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag)
    if m:
        return int(m[1]) == 2 and int(m[2]) <= GLIBC_FLOOR and m[3] == info["cpu"]
    m = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", tag)
    return bool(m) and LEGACY_MANYLINUX[m[1]] <= GLIBC_FLOOR and m[2] == info["cpu"]


def wheel_within_floor(wheel: str, target: str) -> bool:
    """A wheel installs where any one of its platform tags does."""
    return any(tag_within_floor(t, target) for t in WHEEL_RE.match(wheel)["plat"].split("."))


def floor_name(target: str) -> str:
    info = PLATFORMS[target]
    if info["os"] == "macos":
        return f"macOS {MACOS_FLOOR[0]}.{MACOS_FLOOR[1]} ({info['cpu']})"
    return f"manylinux_2_{GLIBC_FLOOR}_{info['cpu']}"


# ---------------------------------------------------------------------------------------------- steps

def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True, stdout=subprocess.DEVNULL)


def is_shared(wheel: str) -> bool:
    m = WHEEL_RE.match(wheel)
    if not m:
        raise SystemExit(f"bundle: unexpected wheel name {wheel}")
    return m["abi"] == "abi3" or (m["abi"] == "none" and m["plat"] == "any")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(entries: list[dict], target: str, python: str, dest: Path) -> list[Path]:
    """The target's wheels of exactly these entries, each checked against the lock's hashes."""
    req = dest.parent / f"req-{python}.txt"
    req.write_text("".join(f"{e['name']}=={e['version']} " + " ".join(f"--hash=sha256:{h}" for h in e["hashes"]) + "\n"
                           for e in entries))
    platforms = [a for t in pip_platforms(target) for a in ("--platform", t)]
    pip("download", "-q", "--require-hashes", "--no-deps", "--only-binary=:all:", *platforms,
        "--implementation", "cp", "--python-version", python, "-d", str(dest), "-r", str(req))
    by_name = {normalise(e["name"]): e for e in entries}
    wheels = sorted(dest.glob("*.whl"))
    for whl in wheels:
        entry = by_name.get(normalise(WHEEL_RE.match(whl.name)["name"]))
        if entry is None or sha256_file(whl) not in entry["hashes"]:
            raise SystemExit(f"bundle: {whl.name} is not in the lock with this hash")
        if not wheel_within_floor(whl.name, target):
            raise SystemExit(f"bundle: {whl.name} needs a newer platform than {floor_name(target)}")
    if len(wheels) != len(entries):
        raise SystemExit(f"bundle: {len(entries)} locked packages but {len(wheels)} wheels for {target} {python}")
    return wheels


def install(wheels: list[Path], target: str, python: str, dest: Path) -> None:
    platforms = [a for t in pip_platforms(target) for a in ("--platform", t)]
    pip("install", "-q", "--no-deps", "--no-compile", "--only-binary=:all:", *platforms, "--implementation", "cp",
        "--python-version", python, "--target", str(dest), *map(str, wheels))


def trim(out: Path) -> int:
    """Remove what the server never imports; bytes removed."""
    removed = 0

    def drop(p: Path) -> None:
        nonlocal removed
        if p.is_dir() and not p.is_symlink():
            removed += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
            shutil.rmtree(p)
        elif p.exists():
            removed += p.stat().st_size
            p.unlink()

    for d in out.iterdir():
        drop(d / "bin")  # console scripts carry this machine's interpreter path: the extension never uses them
        numpy = d / "numpy"
        if numpy.is_dir():
            for sub in TRIM_NUMPY:
                drop(numpy / sub)
            for f in list(numpy.rglob("*")):
                if f.is_file() and TRIM_NUMPY_FILES.match(f.relative_to(numpy).as_posix()):
                    drop(f)
    for p in sorted(out.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if p.is_dir() and p.name in TRIM_DIRS and ".dist-info" not in p.parent.name:
            drop(p)
        elif p.is_file() and p.name.endswith(TRIM_SUFFIXES):
            drop(p)
    return removed


def share_vendored_libs(out: Path, tags: list[str]) -> dict[str, list[str]]:
    """Identical vendored native libraries of several Python versions: one copy in libs/native."""
    seen: dict[str, dict[str, str]] = {}  # relative path -> {tag: sha256}
    for tag in tags:
        base = out / tag
        for f in base.rglob("*"):
            rel = f.relative_to(base).as_posix()
            if f.is_file() and not f.is_symlink() and VENDORED_LIB_DIRS.search(rel):
                seen.setdefault(rel, {})[tag] = sha256_file(f)
    restore: dict[str, list[str]] = {}
    for rel, by_tag in sorted(seen.items()):
        if len(by_tag) < 2 or len(set(by_tag.values())) != 1:
            continue
        keep = out / "native" / rel
        keep.parent.mkdir(parents=True, exist_ok=True)
        first = sorted(by_tag)[0]
        shutil.move(str(out / first / rel), keep)
        for tag in by_tag:
            (out / tag / rel).unlink(missing_ok=True)
            restore.setdefault(tag, []).append(rel)
    return restore


def host_target() -> str | None:
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(host_platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform)
    return f"{system}-{machine}" if machine and system else None


def smoke_run(ext_dir: Path, tag: str) -> None:
    """The bundle as the extension runs it, on this machine: serve.py -> harn-ls recall on the sample."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    sample = REPO / "fixtures" / "sample-project"
    done = subprocess.run([sys.executable, "-I", str(ext_dir / "bundled" / "tool" / "serve.py"), "recall", str(sample),
                           "invoice rounding", "-k", "1", "--json"], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tempfile.gettempdir())
    try:
        answer = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        answer = None
    if not (isinstance(answer, list) and answer and "score" in answer[0]):
        raise SystemExit(f"bundle: the bundled server failed its smoke run on {tag}:\n{done.stderr[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True, choices=sorted(PLATFORMS))
    ap.add_argument("--pythons", nargs="+", required=True)
    ap.add_argument("--wheel", required=True, help="the harn_ls wheel")
    ap.add_argument("--lock", default=str(REPO / "requirements" / "runtime.lock"))
    ap.add_argument("--out", default=str(HERE.parent / "bundled" / "libs"))
    args = ap.parse_args()
    out = Path(args.out)
    lock_path = Path(args.lock)
    wheel_sha = sha256_file(Path(args.wheel))
    lock_sha = sha256_file(lock_path)
    key = {"target": args.target, "pythons": args.pythons, "harnLsWheelSha256": wheel_sha, "lockSha256": lock_sha,
           "bundler": sha256_file(Path(__file__))}
    try:
        old = json.loads((out / "manifest.json").read_text())
        if all(old.get(k) == v for k, v in key.items()):
            print(f"bundle: {out} is up to date ({args.target}, Python {', '.join(args.pythons)})")
            return 0
    except (OSError, ValueError):
        pass
    lock = read_lock(lock_path)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shared: dict[str, Path] = {}
    per_version: dict[str, list[str]] = {}
    hashes: dict[str, str] = {}
    tags = []
    with tempfile.TemporaryDirectory(prefix="harn-bundle-") as tmp:
        for py in args.pythons:
            wheels = download(for_target(lock, args.target, py), args.target, py, Path(tmp) / py)
            specific = [w for w in wheels if not is_shared(w.name)]
            for w in wheels:
                hashes[w.name] = sha256_file(w)
                if is_shared(w.name):
                    shared.setdefault(w.name, w)
            tag = "cp" + py.replace(".", "")
            tags.append(tag)
            per_version[tag] = sorted(w.name for w in specific)
            (out / tag).mkdir()
            if specific:
                install(specific, args.target, py, out / tag)
        names: dict[str, str] = {}
        for whl in shared:
            project = normalise(WHEEL_RE.match(whl)["name"])
            if names.get(project, whl) != whl:
                raise SystemExit(f"bundle: two shared wheels of {project}: {names[project]} and {whl}")
            names[project] = whl
        install(list(shared.values()), args.target, args.pythons[0], out / "common")
        # our own wheel: built from this checkout a moment ago (its hash goes into the manifest)
        pip("install", "-q", "--no-deps", "--no-compile", "--target", str(out / "common"), args.wheel)
    trimmed = trim(out)
    restore = share_vendored_libs(out, tags)
    found, wrong = native_check.check_tree(out, args.target)
    if wrong or not found:
        raise SystemExit("bundle: native files not for " + args.target + ":\n" + "\n".join(wrong or ["(none found)"]))
    manifest = {
        **key,
        "floor": floor_name(args.target),
        "shared": sorted(shared),
        "perVersion": per_version,
        "wheelSha256": dict(sorted(hashes.items())),
        "nativeFiles": found,
        "restore": restore,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    tag = "cp%d%d" % sys.version_info[:2]
    if host_target() == args.target and tag in tags and sysconfig.get_config_var("Py_GIL_DISABLED") != 1:
        smoke_run(HERE.parent, tag)
        # what serve.py put back for this run stays out of the VSIX (a user's first start does it again)
        (out / tag / ".native-restored").unlink()
        for rel in restore.get(tag, []):
            (out / tag / rel).unlink()
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"bundle: {args.target} for Python {', '.join(args.pythons)}: {size / 1e6:.1f} MB unpacked, "
          f"{found} native files checked, {len(shared)} shared wheels, {trimmed / 1e6:.1f} MB trimmed, "
          f"{sum(len(v) for v in restore.values())} vendored libraries kept once")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
