# `make run` sets everything up and starts the app; `make test` sets up and
# runs the whole test suite (`make test-fast`: a quicker part of it). Both reuse
# what earlier runs installed.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-fast lint

run: $(VENV)/.runtime
	$(BIN)/python -m digitslike.launch

test: $(VENV)/.dev
	bash scripts/test.sh

# SQLite only, without the slow fault tests: the loop while developing.
test-fast: $(VENV)/.dev
	bash scripts/test.sh --fast

lint: $(VENV)/.dev
	$(BIN)/ruff check .

$(VENV)/bin/python:
	@command -v $(PYTHON) >/dev/null || { echo "digitslike needs $(PYTHON) (set PYTHON=... to use another 3.11+)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt $(VENV)/bin/python
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt $(VENV)/bin/python
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(VENV)/.runtime $@
