# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Each creates .venv when missing and installs the pinned dependencies first.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint typecheck unit bench-ingest bench-recall clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet "pip>=24"

# Reinstall only when the dependency list changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/hippo serve

lint: install
	$(BIN)/ruff check engine api bench tests

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest -q

test: install lint typecheck unit

bench-ingest: install
	$(BIN)/python bench/ingest.py --n 10000

bench-recall: install
	$(BIN)/python bench/recall.py --n 100000

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
