# VS Code extension packaging and the end-to-end test in real VS Code (code-server).
# Included from the top-level Makefile:  include mk/e2e.mk
#
#   make vsix   one platform VSIX per VSIX_TARGETS entry: vscode-extension/harn-state-<target>.vsix,
#               carrying harn-ls and its dependencies in bundled/libs: requirements/runtime.lock's
#               versions, hashes checked, wheels for that platform and every BUNDLE_PYTHONS version
#               downloaded from the index by platform tag, never built here
#               (vscode-extension/scripts/bundle_server.py); then every native file of the VSIX is
#               checked for the target's format and CPU and the VSIX for VSIX_MAX_MB
#               (vscode-extension/scripts/native_check.py)
#   make e2e    the linux-x64 VSIX in code-server 4.100.3 + Playwright/Chromium, the server being
#               the bundled one run by a python3 that has no harn_ls; then the shadow-module run
#               (installs code-server, chromium and playwright-core itself; cached in ~/.cache/harn-ls-e2e)
#
# E2E_PYTHON: the interpreter the e2e setup scripts use (not the server's).

EXT_DIR        := vscode-extension
VSIX_TARGETS   := linux-x64 linux-arm64 darwin-x64 darwin-arm64
VSIX_MAX_MB    := 40
BUNDLE_PYTHONS := 3.11 3.12 3.13 3.14
VSIXES         := $(foreach t,$(VSIX_TARGETS),$(EXT_DIR)/harn-state-$(t).vsix)
VSIX           := $(EXT_DIR)/harn-state-linux-x64.vsix
HARN_WHEEL      = build/dist/harn_ls-$(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' harn_ls/__init__.py)-py3-none-any.whl
EXT_SOURCES    := $(wildcard $(EXT_DIR)/src/*.ts) $(wildcard $(EXT_DIR)/media/*) \
                  $(EXT_DIR)/package.json $(EXT_DIR)/tsconfig.json $(EXT_DIR)/README.md \
                  $(EXT_DIR)/LICENSE $(EXT_DIR)/.vscodeignore
E2E_PYTHON     ?= $(CURDIR)/.venv/bin/python
E2E_VENV_DEPS  ?= $(STAMP)

.PHONY: vsix e2e e2e-setup wheel
# One bundled/libs at a time: targets are built one after the other.
.NOTPARALLEL:

vsix: $(VSIXES)

wheel: $(STAMP)
	rm -rf build/dist
	$(PY) -m build --no-isolation --outdir build/dist .

$(EXT_DIR)/node_modules/.ci-stamp: $(EXT_DIR)/package-lock.json $(EXT_DIR)/package.json
	cd $(EXT_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(EXT_DIR)/harn-state-%.vsix: $(EXT_DIR)/node_modules/.ci-stamp $(EXT_SOURCES) $(EXT_DIR)/bundled/tool/serve.py \
		$(EXT_DIR)/scripts/bundle_server.py $(EXT_DIR)/scripts/native_check.py requirements/runtime.lock \
		$(wildcard harn_ls/*.py harn_ls/*/*.py harn_ls/*/*/*.py) pyproject.toml $(STAMP)
	rm -rf build/dist
	$(PY) -m build --wheel --no-isolation --outdir build/dist .
	$(PY) $(EXT_DIR)/scripts/bundle_server.py --target $* --pythons $(BUNDLE_PYTHONS) --wheel $(HARN_WHEEL) \
	  --lock requirements/runtime.lock
	@# --allow-package-all-secrets: vsce's secret scan reads every byte of the ~250 MB of third-party
	@# wheels in bundled/libs (15+ minutes on 2 cores); our own files are the bundle and the manifest.
	cd $(EXT_DIR) && npm run --silent typecheck && npm run --silent build \
	  && npx vsce package --no-yarn --no-dependencies --allow-package-all-secrets --target $* -o harn-state-$*.vsix
	$(PY) $(EXT_DIR)/scripts/native_check.py --target $* --max-mb $(VSIX_MAX_MB) $@
	@ls -l $@ | awk '{printf "vsix: %s %.1f MB\n", $$9, $$5/1e6}'

e2e-setup:
	bash tests/e2e/setup.sh >/dev/null

e2e: $(VSIX) $(E2E_VENV_DEPS)
	E2E_PYTHON=$(E2E_PYTHON) VSIX=$(CURDIR)/$(VSIX) timeout 1200 bash tests/e2e/run.sh
