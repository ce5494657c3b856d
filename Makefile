# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Each creates .venv when missing and installs the pinned dependencies first;
# `make test` also installs the pinned Node tools (npm ci, into ignored folders);
# both install the graph explorer's library, and those of the API's /docs and
# /redoc pages, the same way.

PYTHON ?= python3
NPM ?= npm
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CYPHER_LINT := tools/cypher-lint
COMPOSE_SCHEMA := tools/compose-schema
EXPLORER := api/explore
API_DOCS := api/openapi
NODE_STAMP := node_modules/.installed-stamp
NEO4J := tools/neo4j-server
NEO4J_STATE := .neo4j/dev

.PHONY: install run test lint typecheck unit cypher-lint workflow-check docs node-tools explorer api-docs bench-ingest bench-recall \
	bench-load bench-crashloop bench-soak bench-maintenance neo4j neo4j-stop clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet "pip>=24"

# Reinstall only when the dependency list changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Node tools, each from its committed lockfile: Neo4j's Cypher language support
# for the lint, and the Compose Specification's JSON schema.
$(CYPHER_LINT)/$(NODE_STAMP): $(CYPHER_LINT)/package.json $(CYPHER_LINT)/package-lock.json
	cd $(CYPHER_LINT) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

$(COMPOSE_SCHEMA)/$(NODE_STAMP): $(COMPOSE_SCHEMA)/package.json $(COMPOSE_SCHEMA)/package-lock.json
	cd $(COMPOSE_SCHEMA) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

# The graph explorer's one library (cytoscape), served by the API from node_modules.
$(EXPLORER)/$(NODE_STAMP): $(EXPLORER)/package.json $(EXPLORER)/package-lock.json
	cd $(EXPLORER) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

explorer: $(EXPLORER)/$(NODE_STAMP)

# The libraries of /docs (Swagger UI) and /redoc (ReDoc), served by the API from
# node_modules. No install scripts: the two bundles are all the pages need.
$(API_DOCS)/$(NODE_STAMP): $(API_DOCS)/package.json $(API_DOCS)/package-lock.json
	cd $(API_DOCS) && $(NPM) ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

api-docs: $(API_DOCS)/$(NODE_STAMP)

node-tools: $(CYPHER_LINT)/$(NODE_STAMP) $(COMPOSE_SCHEMA)/$(NODE_STAMP) explorer api-docs

run: install explorer api-docs
	$(BIN)/hippo serve

lint: install
	$(BIN)/ruff check engine api bench tests tools

# mypy and import-linter read folders, not the package-dir mapping: they check a
# tree of links laid out as the installed `hippocampus` (tools/package_tree.py, in
# ignored build/). The layers' contracts are [tool.importlinter] in pyproject.toml.
typecheck: install
	$(BIN)/python tools/package_tree.py build/package
	$(BIN)/mypy
	PYTHONPATH=build/package $(BIN)/lint-imports --no-cache

# Every test, on the embedded store and on a live Neo4j: with-neo4j.sh starts
# tools/neo4j-server's Neo4j where java and mvn are (or uses NEO4J_URI), and
# stops it when the run ends, passed or failed.
unit: install node-tools
	$(NEO4J)/with-neo4j.sh $(BIN)/python -m pytest -q

# A Neo4j Community 5.26 on loopback, no Docker: built from Maven Central's jars
# (cached in ~/.m2) the first time, data and log in $(NEO4J_STATE). The last
# three lines printed are NEO4J_URI=, NEO4J_USER= and NEO4J_PASSWORD=.
neo4j:
	@$(NEO4J)/neo4j.sh start $(NEO4J_STATE)

neo4j-stop:
	@$(NEO4J)/neo4j.sh stop $(NEO4J_STATE)

# Every .cypher file (the store's statements and the Browser guide's queries)
# against Neo4j's grammar, semantic analysis, procedure catalog and the graph
# schema derived from the models.
cypher-lint: install node-tools
	$(BIN)/python $(CYPHER_LINT)/lint.py

# The CI workflows against GitHub's workflow schema (vendored in check-jsonschema:
# no network); tests/unit/test_workflows.py checks what the schema cannot.
workflow-check: install
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

# The documentation site: every page in the nav, every link and anchor resolved.
docs: install
	$(BIN)/mkdocs build --strict --quiet --site-dir build/site

test: install lint typecheck unit cypher-lint workflow-check docs

bench-ingest: install
	$(BIN)/python bench/ingest.py --n 10000

bench-recall: install
	$(BIN)/python bench/recall.py --n 100000

bench-load: install
	$(BIN)/python bench/load.py

bench-crashloop: install
	$(BIN)/python bench/crashloop.py --trials 20

bench-soak: install
	$(BIN)/python bench/soak.py --minutes 10

bench-maintenance: install
	$(BIN)/python bench/maintenance.py --n 100000

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
	rm -rf $(CYPHER_LINT)/node_modules $(COMPOSE_SCHEMA)/node_modules $(EXPLORER)/node_modules
	rm -rf $(API_DOCS)/node_modules
	rm -rf $(NEO4J)/target
