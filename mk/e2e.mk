# VS Code extension packaging and the end-to-end test in real VS Code (code-server).
# Included from the top-level Makefile:  include mk/e2e.mk
#
#   make vsix   npm ci + typecheck + esbuild bundle + vsce package -> vscode-extension/harn-state.vsix
#   make e2e    the VSIX in code-server 4.100.3 + Playwright/Chromium against the real harn-ls
#               (installs code-server, chromium and playwright-core itself; cached in ~/.cache/harn-ls-e2e)
#
# E2E_PYTHON: the interpreter that runs harn-ls (needs its dependencies; the checkout is put on
# PYTHONPATH). E2E_VENV_DEPS: the top-level target that bootstraps that venv ($(STAMP) there).

EXT_DIR        := vscode-extension
VSIX           := $(EXT_DIR)/harn-state.vsix
EXT_SOURCES    := $(wildcard $(EXT_DIR)/src/*.ts) $(wildcard $(EXT_DIR)/media/*) \
                  $(EXT_DIR)/package.json $(EXT_DIR)/tsconfig.json $(EXT_DIR)/README.md \
                  $(EXT_DIR)/LICENSE $(EXT_DIR)/.vscodeignore
E2E_PYTHON     ?= $(CURDIR)/.venv/bin/python
E2E_VENV_DEPS  ?= $(STAMP)

.PHONY: vsix e2e e2e-setup

vsix: $(VSIX)

$(EXT_DIR)/node_modules/.ci-stamp: $(EXT_DIR)/package-lock.json $(EXT_DIR)/package.json
	cd $(EXT_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(VSIX): $(EXT_DIR)/node_modules/.ci-stamp $(EXT_SOURCES)
	cd $(EXT_DIR) && npm run --silent typecheck && npm run --silent build && npm run --silent package

e2e-setup:
	bash tests/e2e/setup.sh >/dev/null

e2e: $(VSIX) $(E2E_VENV_DEPS)
	E2E_PYTHON=$(E2E_PYTHON) VSIX=$(CURDIR)/$(VSIX) timeout 1200 bash tests/e2e/run.sh
