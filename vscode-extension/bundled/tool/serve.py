"""Starts the harn-ls that this VSIX carries: `python -I serve.py serve`.

Only the extension's own bundled/libs go on sys.path (in front of the interpreter's
standard library and site-packages); -I keeps the working directory, the script's
folder, PYTHON* variables and the user site-packages out. The libraries are built
per Python version (bundled/libs/cpXY) plus a shared part (bundled/libs/common:
pure-Python and abi3 wheels).

A native library that numpy vendors (OpenBLAS, libgfortran) is the same file for every
Python version, so the VSIX carries it once (bundled/libs/native). The first start with a
Python version puts it back where numpy's extension modules look for it (their loader path
is relative to themselves): a hard link, else a copy, written under a temporary name and
renamed, so two servers starting at once cannot see half a file. manifest.json lists them.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(os.path.dirname(HERE), "libs")
TAG = "cp%d%d" % sys.version_info[:2]
SPECIFIC = os.path.join(LIBS, TAG)
RESTORED = os.path.join(SPECIFIC, ".native-restored")

if not os.path.isdir(SPECIFIC):
    have = sorted(d for d in os.listdir(LIBS) if d.startswith("cp")) if os.path.isdir(LIBS) else []
    sys.stderr.write("harn-ls: the bundled server has no libraries for Python %d.%d (built for: %s)\n"
                     % (sys.version_info[0], sys.version_info[1], ", ".join(have) or "none"))
    raise SystemExit(2)


def restore_native():
    import json
    import shutil

    with open(os.path.join(LIBS, "manifest.json"), encoding="utf-8") as fh:
        wanted = json.load(fh).get("restore", {}).get(TAG, [])
    for rel in wanted:
        parts = rel.split("/")
        if not rel or rel.startswith("/") or ".." in parts:
            raise OSError("unexpected path in manifest.json: %r" % rel)
        src = os.path.join(LIBS, "native", *parts)
        dst = os.path.join(SPECIFIC, *parts)
        if os.path.isfile(dst) and os.path.getsize(dst) == os.path.getsize(src):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = "%s.%d.tmp" % (dst, os.getpid())
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copy2(src, tmp)
        os.replace(tmp, dst)
    with open(RESTORED, "w", encoding="utf-8") as fh:
        fh.write("\n".join(wanted) + "\n")


if not os.path.exists(RESTORED):
    try:
        restore_native()
    except OSError as exc:
        sys.stderr.write("harn-ls: cannot put the bundled native libraries in place under %s (%s); "
                         "the extension's folder must be writable on the first start with Python %d.%d\n"
                         % (SPECIFIC, exc, sys.version_info[0], sys.version_info[1]))
        raise SystemExit(2)

sys.path[0:1] = [SPECIFIC, os.path.join(LIBS, "common")]  # replaces this script's own folder
sys.argv[0] = "harn-ls"

import runpy  # noqa: E402

runpy.run_module("harn_ls", run_name="__main__", alter_sys=True)
