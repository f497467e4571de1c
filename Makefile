# One command sets up and runs the main job; one sets up and runs the tests (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast lint system-deps bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: the embedded default sweep with the web view served while it runs.
run: setup
	$(VENV)/bin/rnntune up

# System packages the end-to-end tests drive: PostgreSQL and headless Chromium (Debian).
system-deps:
	scripts/install-system-deps

# Lint and format check (ruff) and type check (mypy on trainer/ and tuner/), configured in pyproject.toml.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Everything, end-to-end tests included (what CI runs): lint, then every test.
test: setup system-deps lint
	RNNTUNE_REQUIRE_E2E=1 $(PY) -m pytest -m "" -q

# The fast suite only (no Ray sweeps, PostgreSQL or Chromium).
test-fast: setup
	$(PY) -m pytest -m "not slow" -q

clean:
	rm -rf $(VENV) runs studies test-artifacts .pytest_cache
