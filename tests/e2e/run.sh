#!/usr/bin/env bash
# VS Code end-to-end test: the platform VSIX (harn-ls bundled) in code-server 4.100.3,
# driven by Playwright (playwright-core) + Debian Chromium, on copies of
# fixtures/sample-project. Two code-server runs, each a suite of e2e.js (SUITES there):
#   main       trusted folder; python3 on PATH is a fresh venv WITHOUT harn_ls, so the server
#              is the one the VSIX carries; the folder holds shadow harn_ls/, pygls/ and
#              orjson.py that write a marker file if anything imports them
#   untrusted  the same in Restricted Mode, plus a python3 inside the folder first on PATH
#              (it writes a marker too): it must be skipped, and nothing from the folder may run;
#              and issue 27's command: links (link_attacks.py) in the folder's settings, a proposal
#              name and a HITL prompt: every notification shows them inert, clicking writes no marker
#
#   tests/e2e/run.sh            (what `make e2e` runs after `make vsix`)
#
# Environment (all optional):
#   VSIX            the extension package      (vscode-extension/harn-state-linux-x64.vsix)
#   E2E_PYTHON      Python for this script's helpers (.venv/bin/python)
#   E2E_BASE_PYTHON the python the no-harn_ls venv is made from (/usr/bin/python3)
#   E2E_FIXTURE     project to copy             (fixtures/sample-project)
#   E2E_HARN        harn test double            (tests/harn_test_double.py)
#   E2E_SERVER_PATH harnState.server.path       (default: unset, i.e. the bundled server)
#   E2E_SUITES      which runs, in order        ("main untrusted")
#   E2E_KEEP=1      keep the temp dir (workspace copies, logs) for inspection
#   E2E_DRIVER      another Playwright script to run instead of tests/e2e/e2e.js (development)
#   HARN_E2E_CACHE  where code-server is cached (~/.cache/harn-ls-e2e)
# Screenshots go to tests/e2e/screenshots/<suite>/. Exit status: 0 only if every check passed.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VSIX=${VSIX:-$REPO/vscode-extension/harn-state-linux-x64.vsix}
PY=${E2E_PYTHON:-$REPO/.venv/bin/python}
BASE_PY=${E2E_BASE_PYTHON:-/usr/bin/python3}
FIXTURE=${E2E_FIXTURE:-$REPO/fixtures/sample-project}
HARN_DOUBLE=${E2E_HARN:-$REPO/tests/harn_test_double.py}
SUITES=${E2E_SUITES:-main untrusted}
t0=$(date +%s)

fail() { echo "e2e: setup failed: $*" >&2; echo "e2e: 0 passed, 1 failed"; exit 1; }
[ -f "$VSIX" ] || fail "no VSIX at $VSIX (run make vsix)"
[ -x "$PY" ] || fail "no Python at $PY"
[ -x "$BASE_PY" ] || fail "no Python at $BASE_PY (E2E_BASE_PYTHON)"
[ -d "$FIXTURE/.harn" ] || fail "no fixture project at $FIXTURE"
[ -f "$HARN_DOUBLE" ] || fail "no harn test double at $HARN_DOUBLE"

CS=$(bash "$HERE/setup.sh" | tail -1) || fail "installing code-server / chromium / playwright-core"
t_setup=$(date +%s)

D=$(mktemp -d "${TMPDIR:-/tmp}/harn-ls-e2e.XXXXXX")
CS_PGID=""
DRIVER_PGID=""
stop_code_server() {
  for pg in "$DRIVER_PGID" "$CS_PGID"; do
    [ -n "$pg" ] || continue
    kill -TERM -- "-$pg" 2>/dev/null || true
  done
  for pg in "$DRIVER_PGID" "$CS_PGID"; do
    [ -n "$pg" ] || continue
    for _ in $(seq 1 20); do kill -0 -- "-$pg" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$pg" 2>/dev/null || true
  done
  CS_PGID=""
  DRIVER_PGID=""
}
cleanup() {
  local rc=$?
  stop_code_server
  if [ "${E2E_KEEP:-}" = 1 ]; then echo "e2e: kept $D" >&2; else rm -rf "$D"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The interpreter the extension finds as python3: a fresh venv with no harn_ls (nor its deps).
PYENV=$D/pyenv
"$BASE_PY" -m venv --without-pip "$PYENV" || fail "making a venv from $BASE_PY"
if "$PYENV/bin/python3" -I -c 'import harn_ls' 2>/dev/null; then fail "$PYENV/bin/python3 can import harn_ls"; fi
if "$PYENV/bin/python3" -I -c 'import pygls' 2>/dev/null; then fail "$PYENV/bin/python3 can import pygls"; fi
echo "e2e: python3 for the extension: $PYENV/bin/python3 ($("$PYENV/bin/python3" -V 2>&1)), without harn_ls and pygls" >&2
MARKERS=$D/markers
mkdir -p "$MARKERS"
chmod +x "$HARN_DOUBLE" 2>/dev/null || true

# A project copy with the workspace settings a user would have, and shadow modules that
# leave a marker in $MARKERS if anything ever imports them.
make_workspace() {
  "$PY" - "$FIXTURE" "$1" "$HARN_DOUBLE" "$MARKERS" "$REPO" <<'PYEOF'
import json, os, shutil, sys
fixture, ws, harn, markers, repo = sys.argv[1:]
shutil.copytree(fixture, ws, symlinks=True)
# issue 33: one more pending approval (quorum 1, reviewer alice), written as Harn writes it, for the
# "approve from Waiting for you" check
sys.path.insert(0, repo)
from tests.helpers import event_log_writer as W
conn = W.open_log(f"{ws}/.harn/events.sqlite")
W.waitpoint_open(conn, "hitl_approval_e2e-approve-1")
env = W.approval_request("hitl_approval_e2e-approve-1", reviewers=("alice",), quorum=1, action="rotate e2e credentials")
W.append(conn, "hitl.approvals", "hitl.approval_requested", env, W.request_headers(env))
conn.close()
sys.path.remove(repo)
os.makedirs(f"{ws}/.vscode", exist_ok=True)
path = f"{ws}/.vscode/settings.json"
settings = json.load(open(path)) if os.path.exists(path) else {}
settings["harnState.harnPath"] = harn
json.dump(settings, open(path, "w"), indent=2)
for module, name in (("harn_ls/__init__.py", "harn_ls"), ("pygls/__init__.py", "pygls"), ("orjson.py", "orjson")):
    os.makedirs(os.path.dirname(f"{ws}/{module}"), exist_ok=True)
    with open(f"{ws}/{module}", "w") as fh:
        fh.write(f"open({os.path.join(markers, name)!r}, 'w').write('imported from the project folder\\n')\n"
                 "raise SystemExit('shadow module')\n")
PYEOF
}

# code-server's state for one run: fresh user data (quiet settings) and HOME (its login shell
# sets PATH for the extension host: what the suite puts first, then the usual PATH).
# harnState.server.* is machine-scoped: in code-server it lives in the Remote ("Machine") settings.
prepare_user() {
  local dir=$1 trust=$2 path_prefix=$3
  mkdir -p "$dir/user/User" "$dir/user/Machine" "$dir/home"
  printf 'export PATH="%s:$PATH"\n' "$path_prefix" > "$dir/home/.profile"
  cp "$dir/home/.profile" "$dir/home/.bash_profile"
  "$PY" - "$dir/user" "$trust" "${E2E_SERVER_PATH:-}" <<'PYEOF'
import json, sys
root, trust, server_path = sys.argv[1], sys.argv[2] == "untrusted", sys.argv[3]
json.dump({
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": trust,
    "security.workspace.trust.startupPrompt": "never",
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "workbench.enableExperiments": False,
    "workbench.tips.enabled": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "git.enabled": False,
    "editor.hover.delay": 150,
    "window.commandCenter": False,
    "chat.commandCenter.enabled": False,
    "typescript.validate.enable": False,
    "javascript.validate.enable": False,
    "harnState.hitl.reviewer": "alice",
}, open(f"{root}/User/settings.json", "w"), indent=2)
json.dump({"harnState.server.path": server_path} if server_path else {}, open(f"{root}/Machine/settings.json", "w"), indent=2)
PYEOF
}

echo "bind-addr: 127.0.0.1:0
auth: none
cert: false" > "$D/config.yaml"
timeout 120 "$CS" --config "$D/config.yaml" --user-data-dir "$D/install-user" --extensions-dir "$D/ext" \
  --install-extension "$VSIX" > "$D/install.log" 2>&1 || { cat "$D/install.log" >&2; fail "installing the VSIX"; }
grep -q "successfully installed" "$D/install.log" || { cat "$D/install.log" >&2; fail "installing the VSIX"; }
t_install=$(date +%s)

# One code-server run: start it on a fresh port, drive it with e2e.js (suite $1), stop it.
run_suite() {
  local suite=$1 ws=$D/ws-$1 dir=$D/run-$1 path_prefix=$PYENV/bin trust=trusted
  local trust_flag=(--disable-workspace-trust)
  make_workspace "$ws"
  if [ "$suite" = untrusted ]; then
    trust=untrusted
    trust_flag=()
    # A python3 inside the folder, first on PATH (as after activating the folder's own venv).
    mkdir -p "$ws/.venv/bin"
    printf '#!/bin/sh\necho "ran $0" > "%s/folder-python3"\nexec "%s" "$@"\n' "$MARKERS" "$PYENV/bin/python3" > "$ws/.venv/bin/python3"
    chmod +x "$ws/.venv/bin/python3"
    path_prefix=$ws/.venv/bin:$PYENV/bin
    # Issue 27: live command: links from the folder's settings and data (link_attacks.py)
    "$PY" "$HERE/link_attacks.py" plant "$ws" "$MARKERS" || fail "planting the link attacks"
  fi
  prepare_user "$dir" "$trust" "$path_prefix"
  if [ "$suite" = untrusted ]; then
    "$PY" "$HERE/link_attacks.py" user-settings "$dir/user/User/settings.json" "$MARKERS" || fail "user settings"
  fi
  local port
  port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  HOME=$dir/home setsid timeout 900 "$CS" --config "$D/config.yaml" --user-data-dir "$dir/user" --extensions-dir "$D/ext" \
    --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry --disable-update-check \
    "${trust_flag[@]}" --disable-getting-started-override "$ws" > "$dir/code-server.log" 2>&1 &
  CS_PGID=$!
  for _ in $(seq 1 240); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break
    kill -0 "$CS_PGID" 2>/dev/null || { cat "$dir/code-server.log" >&2; fail "code-server exited"; }
    sleep 0.25
  done
  curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || fail "code-server did not listen on $port"
  mkdir -p "$HERE/screenshots/$suite"
  echo "e2e: ---- suite $suite ($trust folder; PATH starts with $path_prefix) ----"
  local rc=0
  E2E_MODE=$suite E2E_PYTHON="$PY" CS_URL="http://127.0.0.1:$port/?folder=$ws" WS="$ws" TMP_DIR="$dir" SHOTS="$HERE/screenshots/$suite" \
    MARKERS="$MARKERS" EXT_LOG_ROOT="$dir/user/logs" setsid timeout 420 node "${E2E_DRIVER:-$HERE/e2e.js}" &
  DRIVER_PGID=$!
  wait "$DRIVER_PGID" || rc=$?
  DRIVER_PGID=""
  if [ "$rc" != 0 ]; then
    # Logs that explain most failures: the extension's own log and code-server's.
    local log
    log=$(find "$dir/user/logs" -name '*Harn State*.log' 2>/dev/null | head -1)
    if [ -n "$log" ]; then echo "---- Harn State log (last 60 lines) ----" >&2; tail -60 "$log" >&2; fi
    echo "---- code-server log (last 20 lines) ----" >&2; tail -20 "$dir/code-server.log" >&2
  fi
  stop_code_server
  return "$rc"
}

rc=0
timings=""
for suite in $SUITES; do
  ts=$(date +%s)
  run_suite "$suite" || rc=1
  timings="$timings, suite $suite $(( $(date +%s) - ts ))s"
done
ls "$MARKERS" | grep -q . && { echo "e2e: FAIL code from the folder ran: $(ls "$MARKERS")"; rc=1; }
t_end=$(date +%s)
echo "e2e: timings: setup $((t_setup - t0))s, install $((t_install - t_setup))s$timings, total $((t_end - t0))s" >&2
exit "$rc"
