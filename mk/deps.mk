# Pinned dependencies and the two ends of their ranges.
#
#   requirements/runtime.lock   what the VSIX bundles (vscode-extension/scripts/bundle_server.py):
#                               pyproject.toml's runtime dependencies, one version each for every
#                               platform and Python 3.11+ (uv's universal lock), every file's SHA-256
#   requirements/test.lock      the same plus the test extra: what `make venv` installs (--require-hashes)
#   make lock                   writes both again from pyproject.toml (newest versions allowed)
#   make deps-ends              tests/unit and tests/lsp against the oldest versions pyproject.toml
#                               allows for its direct dependencies (uv's lowest-direct resolution)
#                               and against the newest, each in its own venv under build/deps-ends
#
# The wheel's own ranges (pyproject.toml) stay loose: `pip install harn-ls` resolves them itself.

UV          := $(VENV)/bin/uv
LOCK_FLAGS  := -c requirements/lock-constraints.txt --universal --fork-strategy fewest --generate-hashes --python-version 3.11 --no-header -q
ENDS_DIR    := build/deps-ends
ENDS_TESTS  ?= tests/unit tests/lsp

.PHONY: lock deps-ends

lock: $(STAMP)
	$(UV) pip compile pyproject.toml $(LOCK_FLAGS) -o requirements/runtime.lock
	$(UV) pip compile pyproject.toml --extra test $(LOCK_FLAGS) -o requirements/test.lock

# One end: $(1) is lowest or highest. The runtime dependencies are resolved at that end; the test
# tools (pytest, pytest-lsp, ...) are then the newest that fit those pins.
define deps_end
	rm -rf $(ENDS_DIR)/$(1) && mkdir -p $(ENDS_DIR)/$(1)
	$(UV) pip compile pyproject.toml --resolution $(2) --python-version 3.11 --no-header -q -o $(ENDS_DIR)/$(1)/runtime.txt
	$(UV) pip compile pyproject.toml --extra test -c $(ENDS_DIR)/$(1)/runtime.txt --python-version 3.11 --no-header -q \
	  -o $(ENDS_DIR)/$(1)/all.txt
	$(PYTHON) -m venv $(ENDS_DIR)/$(1)/venv
	$(UV) pip sync -q --python $(ENDS_DIR)/$(1)/venv/bin/python $(ENDS_DIR)/$(1)/all.txt
	$(UV) pip install -q --python $(ENDS_DIR)/$(1)/venv/bin/python --no-deps -e .
	@echo "deps-ends: $(1): $$(grep -E '^(pygls|lsprotocol|attrs|cattrs|watchdog|orjson|numpy)==' $(ENDS_DIR)/$(1)/runtime.txt | tr '\n' ' ')"
	$(ENDS_DIR)/$(1)/venv/bin/python -m pytest -q -p no:cacheprovider $(ENDS_TESTS)
endef

deps-ends: $(STAMP)
	$(call deps_end,lowest,lowest-direct)
	$(call deps_end,highest,highest)

# One end alone (the other is the same recipe): `make deps-lowest` / `make deps-highest`.
.PHONY: deps-lowest deps-highest
deps-lowest: $(STAMP)
	$(call deps_end,lowest,lowest-direct)
deps-highest: $(STAMP)
	$(call deps_end,highest,highest)
