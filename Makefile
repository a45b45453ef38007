# Dossier developer entry points. Every target is safe to run again.
#
#   make venv           .venv with the runtime, its test extra and the development harness (re-installs only when a pyproject.toml changes)
#   make test           the everyday tier: every test but the slow end-to-end ones (marked `slow`), two pytest
#                       workers, small Hypothesis runs; it starts the embedded services it needs
#   make test-all       every test, with the full Hypothesis example counts (what CI runs); it also installs Debian's
#                       chromium for the inspector's browser test when /usr/bin/chromium is missing
#   make docs           the documentation site (MkDocs, Material theme) into site/, with --strict
#   make run            start the embedded stack (Postgres, S3, Temporal, worker) and run the demo agent session
#   make bench          every benchmark part into bench-results/ (tables, JSON, plots; takes a while)
#   make services-down  stop the embedded services

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

# tiktoken copies encodings into /tmp/data-gym-cache by default: keep them in the project.
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.dossier/tiktoken-cache

CHROMIUM := /usr/bin/chromium

.PHONY: venv chromium test test-all docs run bench services-down

venv: $(STAMP)

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
		echo "error: Python >= 3.11 is required, but '$(PYTHON)' is $$($(PYTHON) -V 2>&1 || echo missing)." >&2; \
		echo "       Run e.g. 'make PYTHON=python3.11 ...'." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# The stamp is newer than both pyproject.toml files once the install succeeded; a failed install leaves no stamp.
# harness/ (seed scenarios, benchmarks) is a distribution of its own, so the runtime wheel never ships it.
$(STAMP): pyproject.toml harness/pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --quiet -e '.[test]' -e ./harness
	touch $@

DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e '.[docs]'
	touch $@

# --strict: a broken link or a page the docstrings cannot render fails the build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	@echo "docs built into site/ (open site/index.html)"

# The inspector's browser test drives Debian's Chromium through Playwright's executable_path, never a browser
# Playwright downloads. Installed only when missing; without it the test fails (it never skips), so fail here first.
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		command -v apt-get >/dev/null 2>&1 || { \
			echo "error: $(CHROMIUM) is missing and there is no apt-get to install it; install Debian's 'chromium' package" >&2; \
			exit 1; }; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
		echo "installing Debian's chromium for the inspector's browser test ($(CHROMIUM) is missing)"; \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y chromium \
			|| { $$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y chromium; } \
			|| { echo "error: could not install chromium with apt-get; install Debian's 'chromium' package" >&2; exit 1; }; \
	fi
	@test -x $(CHROMIUM) || { echo "error: $(CHROMIUM) is still missing after installing 'chromium'" >&2; exit 1; }

# Each pytest-xdist worker gets its own database, bucket and Temporal server; loadgroup keeps the tests that share
# one expensive fixture (the model server, the hardening stack) on one worker.
PYTEST_WORKERS ?= 2
PYTEST := $(VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: venv
	$(PYTEST) -m "not slow" $(PYTEST_ARGS)

test-all: venv chromium
	HYPOTHESIS_PROFILE=ci $(PYTEST) --durations=25 $(PYTEST_ARGS)

run: venv
	$(VENV)/bin/dossier services up
	$(VENV)/bin/dossier demo

bench: venv
	$(VENV)/bin/dossier services up postgres s3
	$(VENV)/bin/dossier bench all --out bench-results

# Without a venv nothing can have been started from this checkout.
services-down:
	@if [ -x $(VENV)/bin/dossier ]; then $(VENV)/bin/dossier services down; else echo "no $(VENV): nothing to stop"; fi
