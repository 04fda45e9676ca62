"""The VSIX bundler's rules (vscode-extension/scripts/bundle_server.py) and the bootstrap that runs
the bundle (bundled/tool/serve.py): the lock read and judged for another platform, the platform
floors, the trim, the vendored libraries kept once and put back on first start."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "vscode-extension" / "scripts"
sys.path.insert(0, str(SCRIPTS))
spec = importlib.util.spec_from_file_location("bundle_server", SCRIPTS / "bundle_server.py")
bs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bs)
LOCK = REPO / "requirements" / "runtime.lock"


def test_the_lock_pins_every_runtime_dependency_within_pyproject_ranges():
    lock = bs.read_lock(LOCK)
    pins = {}
    for e in lock:
        assert len(e["hashes"]) >= 1 and all(len(h) == 64 for h in e["hashes"])
        pins.setdefault(bs.normalise(e["name"]), []).append(e["version"])
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in map(Requirement, deps):
        versions = pins.get(bs.normalise(dep.name))
        assert versions, f"{dep.name} is not in requirements/runtime.lock (make lock)"
        assert all(dep.specifier.contains(v, prereleases=True) for v in versions), (dep, versions)


def test_the_test_lock_holds_the_runtime_pins():
    runtime = {(bs.normalise(e["name"]), e["version"]) for e in bs.read_lock(LOCK)}
    test = {(bs.normalise(e["name"]), e["version"]) for e in bs.read_lock(REPO / "requirements" / "test.lock")}
    assert runtime <= test  # make test runs against exactly what the VSIX bundles
    assert {"rank-bm25", "pytest"} <= {name for name, _ in test}
    assert "rank-bm25" not in {name for name, _ in runtime}  # a test reference only


def test_markers_are_judged_for_the_target_not_this_machine(tmp_path):
    lock = tmp_path / "x.lock"
    lock.write_text(
        "numpy==2.4.6 ; python_full_version < '3.12' \\\n    --hash=sha256:" + "a" * 64 + "\n"
        "numpy==2.5.5 ; python_full_version >= '3.12' \\\n    --hash=sha256:" + "b" * 64 + "\n"
        "    # via harn-ls\n"
        "pywin32==311 ; sys_platform == 'win32' \\\n    --hash=sha256:" + "c" * 64 + " \\\n"
        "    --hash=sha256:" + "d" * 64 + "\n"
        "appnope==0.1.4 ; sys_platform == 'darwin' --hash=sha256:" + "e" * 64 + "\n")
    entries = bs.read_lock(lock)
    assert entries[2]["hashes"] == ["c" * 64, "d" * 64]
    pick = lambda target, py: sorted(f"{e['name']}=={e['version']}" for e in bs.for_target(entries, target, py))  # noqa: E731
    assert pick("linux-x64", "3.11") == ["numpy==2.4.6"]
    assert pick("darwin-arm64", "3.13") == ["appnope==0.1.4", "numpy==2.5.5"]


def test_a_lock_line_without_hashes_is_refused(tmp_path):
    lock = tmp_path / "x.lock"
    lock.write_text("orjson==3.13.0\n")
    with pytest.raises(SystemExit, match="without an exact version and hashes"):
        bs.read_lock(lock)


@pytest.mark.parametrize("wheel,target,ok", [
    ("numpy-2.4.6-cp312-cp312-macosx_11_0_arm64.whl", "darwin-arm64", True),
    ("numpy-2.4.6-cp312-cp312-macosx_14_0_arm64.whl", "darwin-arm64", False),  # newer than the macOS 11 floor
    ("numpy-2.4.6-cp312-cp312-macosx_10_13_x86_64.whl", "darwin-x64", True),
    ("numpy-2.4.6-cp312-cp312-macosx_10_13_x86_64.whl", "darwin-arm64", False),  # the other CPU
    ("cryptography-51.0.1-cp311-abi3-macosx_10_9_universal2.whl", "darwin-arm64", True),
    ("cryptography-51.0.1-cp311-abi3-macosx_10_9_universal2.whl", "darwin-x64", True),
    ("numpy-2.4.6-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", "linux-x64", True),
    ("orjson-3.13.0-cp312-cp312-manylinux_2_34_x86_64.whl", "linux-x64", False),  # needs glibc 2.34
    ("pyyaml-6.0.4-cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.whl", "linux-arm64", True),
    ("pyyaml-6.0.4-cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.whl", "linux-x64", False),
    ("pyyaml-6.0.4-cp312-cp312-musllinux_1_2_x86_64.whl", "linux-x64", False),
    ("attrs-26.1.0-py3-none-any.whl", "darwin-x64", True),
])
def test_wheel_tags_are_held_to_the_platform_floor(wheel, target, ok):
    assert bs.wheel_within_floor(wheel, target) is ok


def test_trim_keeps_what_numpy_imports_and_drops_the_rest(tmp_path):
    out = tmp_path / "libs"
    keep = ["cp312/numpy/__init__.py", "cp312/numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so",
            "cp312/numpy/linalg/__init__.py", "cp312/numpy/lib/stride_tricks.py", "cp312/numpy/matrixlib/defmatrix.py",
            "common/attr/__init__.py", "common/pygls-2.1.1.dist-info/licenses/LICENSE.txt"]
    drop = ["cp312/numpy/random/mtrand.so", "cp312/numpy/_core/tests/test_api.py", "cp312/numpy/__init__.pyi",
            "cp312/numpy/_core/include/numpy/ndarraytypes.h", "cp312/numpy/_core/lib/libnpymath.a",
            "cp312/numpy/_core/_simd.cpython-312-x86_64-linux-gnu.so", "cp312/numpy/f2py/__init__.py",
            "cp312/numpy/testing/__init__.py", "cp312/bin/f2py", "common/lsprotocol/types.pyi"]
    for rel in keep + drop:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(b"x" * 10)
    assert bs.trim(out) == 10 * len(drop)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(keep)


def test_vendored_libraries_kept_once_only_when_identical(tmp_path):
    out = tmp_path / "libs"
    for tag in ("cp311", "cp312", "cp313"):
        (out / tag / "numpy.libs").mkdir(parents=True)
        (out / tag / "numpy.libs" / "libscipy_openblas64_-1.so").write_bytes(b"same")
        (out / tag / "numpy.libs" / "libgfortran.so.5").write_bytes(tag.encode())  # differs: stays
        (out / tag / "numpy" / "_core").mkdir(parents=True)
        (out / tag / "numpy" / "_core" / "_multiarray_umath.so").write_bytes(b"same")  # not vendored: stays
    restore = bs.share_vendored_libs(out, ["cp311", "cp312", "cp313"])
    assert restore == {t: ["numpy.libs/libscipy_openblas64_-1.so"] for t in ("cp311", "cp312", "cp313")}
    assert (out / "native" / "numpy.libs" / "libscipy_openblas64_-1.so").read_bytes() == b"same"
    for tag in ("cp311", "cp312", "cp313"):
        assert not (out / tag / "numpy.libs" / "libscipy_openblas64_-1.so").exists()
        assert (out / tag / "numpy.libs" / "libgfortran.so.5").read_bytes() == tag.encode()
        assert (out / tag / "numpy" / "_core" / "_multiarray_umath.so").exists()


def _fake_bundle(tmp_path: Path, restore: list[str]) -> Path:
    """An extension folder whose bundled harn_ls reports what serve.py put in place."""
    ext = tmp_path / "ext"
    tool = ext / "bundled" / "tool"
    tool.mkdir(parents=True)
    (tool / "serve.py").write_bytes((REPO / "vscode-extension" / "bundled" / "tool" / "serve.py").read_bytes())
    libs = ext / "bundled" / "libs"
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    (libs / tag).mkdir(parents=True)
    pkg = libs / "common" / "harn_ls"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        "import os, sys\n"
        "here = os.path.join(sys.path[0], 'numpy.libs', 'libopenblas.so')\n"
        "print(open(here, 'rb').read().decode(), sys.argv[1:])\n")
    for rel in restore:
        (libs / "native" / rel).parent.mkdir(parents=True, exist_ok=True)
        (libs / "native" / rel).write_bytes(b"blas")
    (libs / "manifest.json").write_text(json.dumps({"restore": {tag: restore}}))
    return ext


def _serve(ext: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(ext / "bundled" / "tool" / "serve.py"), *args],
                          capture_output=True, text=True, timeout=60)


def test_serve_puts_the_shared_libraries_back_before_the_server_starts(tmp_path):
    ext = _fake_bundle(tmp_path, ["numpy.libs/libopenblas.so"])
    done = _serve(ext, "serve")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "blas ['serve']"
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    placed = ext / "bundled" / "libs" / tag / "numpy.libs" / "libopenblas.so"
    assert placed.read_bytes() == b"blas"
    assert (ext / "bundled" / "libs" / tag / ".native-restored").exists()
    assert not [p for p in placed.parent.iterdir() if p.name.endswith(".tmp")]
    assert _serve(ext, "again").stdout.strip() == "blas ['again']"  # second start: nothing to do


def test_serve_refuses_a_manifest_path_that_leaves_the_bundle(tmp_path):
    ext = _fake_bundle(tmp_path, [])
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    (ext / "bundled" / "libs" / "manifest.json").write_text(json.dumps({"restore": {tag: ["../../evil.so"]}}))
    done = _serve(ext, "serve")
    assert done.returncode == 2
    assert "unexpected path in manifest.json" in done.stderr
    assert not (tmp_path / "evil.so").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_serve_says_why_when_the_extension_folder_is_read_only(tmp_path):
    ext = _fake_bundle(tmp_path, ["numpy.libs/libopenblas.so"])
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    (ext / "bundled" / "libs" / tag).chmod(0o555)
    try:
        done = _serve(ext, "serve")
    finally:
        (ext / "bundled" / "libs" / tag).chmod(0o755)
    assert done.returncode == 2 and "must be writable" in done.stderr
