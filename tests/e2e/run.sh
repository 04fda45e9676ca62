#!/usr/bin/env bash
# VS Code end-to-end test: the harn-state VSIX in code-server 4.100.3, driven by
# Playwright (playwright-core) + Debian Chromium, against the real harn-ls server
# on a copy of fixtures/sample-project.
#
#   tests/e2e/run.sh            (what `make e2e` runs after `make vsix`)
#
# Environment (all optional):
#   VSIX            the extension package      (vscode-extension/harn-state.vsix)
#   E2E_PYTHON      Python with harn_ls's deps  (.venv/bin/python)
#   E2E_FIXTURE     project to copy             (fixtures/sample-project)
#   E2E_HARN        harn test double            (tests/harn_test_double.py)
#   E2E_SERVER_ARGS JSON array for harnState.server.args (default: none = -m harn_ls serve)
#   E2E_KEEP=1      keep the temp dir (workspace copy, logs) for inspection
#   E2E_DRIVER      another Playwright script to run instead of tests/e2e/e2e.js (development)
#   HARN_E2E_CACHE  where code-server is cached (~/.cache/harn-ls-e2e)
# Screenshots go to tests/e2e/screenshots/. Exit status: 0 only if every check passed.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VSIX=${VSIX:-$REPO/vscode-extension/harn-state.vsix}
PY=${E2E_PYTHON:-$REPO/.venv/bin/python}
FIXTURE=${E2E_FIXTURE:-$REPO/fixtures/sample-project}
HARN_DOUBLE=${E2E_HARN:-$REPO/tests/harn_test_double.py}
SERVER_ARGS=${E2E_SERVER_ARGS:-[]}
t0=$(date +%s)

fail() { echo "e2e: setup failed: $*" >&2; echo "e2e: 0 passed, 1 failed"; exit 1; }
[ -f "$VSIX" ] || fail "no VSIX at $VSIX (run make vsix)"
[ -x "$PY" ] || fail "no Python at $PY"
[ -d "$FIXTURE/.harn" ] || fail "no fixture project at $FIXTURE"
[ -f "$HARN_DOUBLE" ] || fail "no harn test double at $HARN_DOUBLE"

CS=$(bash "$HERE/setup.sh" | tail -1) || fail "installing code-server / chromium / playwright-core"
t_setup=$(date +%s)

D=$(mktemp -d "${TMPDIR:-/tmp}/harn-ls-e2e.XXXXXX")
CS_PGID=""
DRIVER_PGID=""
cleanup() {
  local rc=$?
  for pg in "$DRIVER_PGID" "$CS_PGID"; do
    [ -n "$pg" ] || continue
    kill -TERM -- "-$pg" 2>/dev/null || true
  done
  for pg in "$DRIVER_PGID" "$CS_PGID"; do
    [ -n "$pg" ] || continue
    for _ in $(seq 1 20); do kill -0 -- "-$pg" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$pg" 2>/dev/null || true
  done
  if [ "${E2E_KEEP:-}" = 1 ]; then echo "e2e: kept $D" >&2; else rm -rf "$D"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The project: a fresh copy, with the workspace settings a user would have.
WS=$D/ws
cp -a "$FIXTURE" "$WS"
mkdir -p "$WS/.vscode"
"$PY" - "$WS/.vscode/settings.json" "$HARN_DOUBLE" <<'EOF'
import json, os, sys
path, harn = sys.argv[1], sys.argv[2]
settings = json.load(open(path)) if os.path.exists(path) else {}
settings["harnState.harnPath"] = harn
json.dump(settings, open(path, "w"), indent=2)
EOF
chmod +x "$HARN_DOUBLE" 2>/dev/null || true

# code-server's own state: fresh user data and extensions dirs, quiet settings.
# harnState.server.* is machine-scoped: in code-server (a remote window) it lives in
# the Remote ("Machine") settings, next to the machine it names.
mkdir -p "$D/user/User" "$D/user/Machine" "$D/ext"
"$PY" - "$D/user" "$PY" "$SERVER_ARGS" <<'EOF'
import json, sys
root, python, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
json.dump({
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": False,
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
}, open(f"{root}/User/settings.json", "w"), indent=2)
json.dump({
    "harnState.server.path": python,
    "harnState.server.args": args,
}, open(f"{root}/Machine/settings.json", "w"), indent=2)
EOF
echo "bind-addr: 127.0.0.1:0
auth: none
cert: false" > "$D/config.yaml"
CSARGS=(--config "$D/config.yaml" --user-data-dir "$D/user" --extensions-dir "$D/ext")

timeout 120 "$CS" "${CSARGS[@]}" --install-extension "$VSIX" > "$D/install.log" 2>&1 \
  || { cat "$D/install.log" >&2; fail "installing the VSIX"; }
grep -q "successfully installed" "$D/install.log" || { cat "$D/install.log" >&2; fail "installing the VSIX"; }

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# PYTHONPATH: the server runs from this checkout even where .venv has only the dependencies.
PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" setsid timeout 900 "$CS" "${CSARGS[@]}" \
  --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --disable-getting-started-override "$WS" > "$D/code-server.log" 2>&1 &
CS_PGID=$!
for _ in $(seq 1 240); do
  curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" && break
  kill -0 "$CS_PGID" 2>/dev/null || { cat "$D/code-server.log" >&2; fail "code-server exited"; }
  sleep 0.25
done
curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" || fail "code-server did not listen on $PORT"
t_boot=$(date +%s)

mkdir -p "$HERE/screenshots"
rc=0
CS_URL="http://127.0.0.1:$PORT/?folder=$WS" WS="$WS" TMP_DIR="$D" SHOTS="$HERE/screenshots" \
  EXT_LOG_ROOT="$D/user/logs" setsid timeout 420 node "${E2E_DRIVER:-$HERE/e2e.js}" &
DRIVER_PGID=$!
wait "$DRIVER_PGID" || rc=$?
DRIVER_PGID=""
t_end=$(date +%s)
echo "e2e: timings: setup $((t_setup - t0))s, code-server boot $((t_boot - t_setup))s, checks $((t_end - t_boot))s, total $((t_end - t0))s" >&2
if [ "$rc" != 0 ]; then
  # Logs that explain most failures: the extension's own log and code-server's.
  log=$(find "$D/user/logs" -name '*Harn State*.log' 2>/dev/null | head -1)
  if [ -n "$log" ]; then echo "---- Harn State log (last 60 lines) ----" >&2; tail -60 "$log" >&2; fi
  echo "---- code-server log (last 20 lines) ----" >&2; tail -20 "$D/code-server.log" >&2
fi
exit "$rc"
