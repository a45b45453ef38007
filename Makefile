# Dossier developer entry points. Every target is safe to run again.
#
#   make venv           .venv with the runtime, its test extra and the development harness (re-installs only when a pyproject.toml changes)
#   make test           the whole test suite; it starts the embedded services it needs
#   make run            start the embedded stack (Postgres, S3, Temporal, worker) and run the demo agent session
#   make bench          every benchmark part into bench-results/ (tables, JSON, plots; takes a while)
#   make services-down  stop the embedded services

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

# tiktoken copies encodings into /tmp/data-gym-cache by default: keep them in the project.
export TIKTOKEN_CACHE_DIR := $(CURDIR)/.dossier/tiktoken-cache

.PHONY: venv test run bench services-down

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

test: venv
	$(VENV)/bin/python -m pytest

run: venv
	$(VENV)/bin/dossier services up
	$(VENV)/bin/dossier demo

bench: venv
	$(VENV)/bin/dossier services up postgres s3
	$(VENV)/bin/dossier bench all --out bench-results

# Without a venv nothing can have been started from this checkout.
services-down:
	@if [ -x $(VENV)/bin/dossier ]; then $(VENV)/bin/dossier services down; else echo "no $(VENV): nothing to stop"; fi
