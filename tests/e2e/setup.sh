#!/usr/bin/env bash
# Installs what the VS Code e2e needs, idempotently (fast when already there):
#   - Debian packages: chromium (the browser Playwright drives), and the build
#     prerequisites of code-server's native modules (libkrb5-dev, pkg-config),
#     plus ripgrep (seeds @vscode/ripgrep's download cache; no GitHub here).
#   - code-server 4.100.3 (the newest that runs on Node 20) in a cache dir.
#   - playwright-core (no browser download) in tests/e2e/node_modules.
# Prints the code-server binary path on the last line of stdout.
set -euo pipefail

CS_VERSION=4.100.3
RG_PKG_VERSION=1.15.11              # @vscode/ripgrep version pulled by code-server 4.100.3
RG_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
CACHE=${HARN_E2E_CACHE:-$HOME/.cache/harn-ls-e2e}
HERE=$(cd "$(dirname "$0")" && pwd)

log() { echo "e2e-setup: $*" >&2; }

need_apt=()
for pkg in chromium libkrb5-dev pkg-config ripgrep; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
  log "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
fi

CS_DIR=$CACHE/code-server-$CS_VERSION
CS_BIN=$CS_DIR/node_modules/.bin/code-server
cs_installed() {
  [ -x "$CS_BIN" ] && [ "$(node -p "require('$CS_DIR/node_modules/code-server/package.json').version" 2>/dev/null)" = "$CS_VERSION" ]
}
if ! cs_installed; then
  log "installing code-server@$CS_VERSION into $CS_DIR (takes 1-2 minutes)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  # @vscode/ripgrep's postinstall downloads from GitHub: seed its cache with Debian's rg.
  tmp=${TMPDIR:-/tmp}
  rgcache=$tmp/vscode-ripgrep-cache-$RG_PKG_VERSION
  if ! [ -s "$rgcache/$RG_ASSET" ]; then
    seed=$(mktemp -d)
    cp /usr/bin/rg "$seed/rg"
    mkdir -p "$rgcache"
    tar czf "$rgcache/$RG_ASSET" -C "$seed" rg
    rm -rf "$seed"
  fi
  (
    cd "$CS_DIR"
    echo '{"name":"harn-ls-e2e-code-server","private":true}' > package.json
    # root + npm 11: code-server's preinstall wants unsafe-perm; node-pty's
    # postinstall runs npx, which needs yes=true (~/.npmrc may say no).
    npm_config_unsafe_perm=true npm_config_yes=true timeout 1800 \
      npm install --no-audit --no-fund --foreground-scripts "code-server@$CS_VERSION" > "$CS_DIR/install.log" 2>&1
  ) || { log "code-server install failed; last lines of $CS_DIR/install.log:"; tail -30 "$CS_DIR/install.log" >&2; exit 1; }
  cs_installed || { log "code-server $CS_VERSION not found after install"; exit 1; }
  log "code-server $CS_VERSION installed"
fi

want_pw=$(cd "$HERE" && node -p 'require("./package-lock.json").packages["node_modules/playwright-core"].version' 2>/dev/null || true)
have_pw=$(cd "$HERE" && node -p 'require("./node_modules/playwright-core/package.json").version' 2>/dev/null || true)
if [ -z "$have_pw" ] || [ "$have_pw" != "$want_pw" ]; then
  log "npm ci (playwright-core) in tests/e2e"
  (cd "$HERE" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >&2)
fi

echo "$CS_BIN"
