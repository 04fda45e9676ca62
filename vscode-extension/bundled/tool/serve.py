"""Starts the harn-ls that this VSIX carries: `python -I serve.py serve`.

Only the extension's own bundled/libs go on sys.path (in front of the interpreter's
standard library and site-packages); -I keeps the working directory, the script's
folder, PYTHON* variables and the user site-packages out. The libraries are built
per Python version (bundled/libs/cpXY) plus a shared part (bundled/libs/common:
pure-Python and abi3 wheels).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(os.path.dirname(HERE), "libs")
TAG = "cp%d%d" % sys.version_info[:2]
SPECIFIC = os.path.join(LIBS, TAG)

if not os.path.isdir(SPECIFIC):
    have = sorted(d for d in os.listdir(LIBS) if d.startswith("cp")) if os.path.isdir(LIBS) else []
    sys.stderr.write("harn-ls: the bundled server has no libraries for Python %d.%d (built for: %s)\n"
                     % (sys.version_info[0], sys.version_info[1], ", ".join(have) or "none"))
    raise SystemExit(2)

sys.path[0:1] = [SPECIFIC, os.path.join(LIBS, "common")]  # replaces this script's own folder
sys.argv[0] = "harn-ls"

import runpy  # noqa: E402

runpy.run_module("harn_ls", run_name="__main__", alter_sys=True)
