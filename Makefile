# One command sets up and runs the main job; one sets up and runs the tests (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Azurite, Azure Blob Storage's emulator, which the tests of `--storage abfs://...` run (npm registry);
# 3.35.0 is the last release whose engines admit Node.js 20 (3.36 asks for 21, 3.37 for 22).
AZURITE := $(VENV)/azurite/node_modules/.bin/azurite-blob
AZURITE_VERSION := 3.35.0

.PHONY: setup run test test-fast test-durations test-gpu fuzz lint system-deps bench clean

# uv installs the packages (a third of pip's time), from the sources pip is set up with (scripts/install-venv).
$(STAMP): pyproject.toml scripts/install-venv
	$(PYTHON) -m venv $(VENV)
	$(PYTHON) scripts/install-venv $(VENV) -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

$(AZURITE):
	npm install --silent --no-audit --no-fund --prefix $(VENV)/azurite azurite@$(AZURITE_VERSION)

# The main job: the embedded default sweep with the web view served while it runs.
run: setup
	$(VENV)/bin/rnntune up

# System packages the end-to-end tests drive: PostgreSQL, headless Chromium, npm (for Azurite), and
# the Docker engine, docker-compose and mmdebstrap for `docker-compose up` (Debian); the Compose
# test starts dockerd.
system-deps:
	scripts/install-system-deps

# Lint and format check (ruff), type check (mypy on trainer/ and tuner/) and the one-way import
# contracts (import-linter), configured in pyproject.toml. mypy checks on two processes and keeps
# its incremental cache per user, not per checkout: a fresh clone rechecks only what differs from
# the last one checked here (its entries are keyed by each file's hash; 3 s instead of 21).
MYPY_CACHE_DIR ?= $(HOME)/.cache/rnntune-mypy
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --num-workers 2 --cache-dir $(MYPY_CACHE_DIR)
	$(VENV)/bin/lint-imports

# Everything, end-to-end tests included (what CI runs): lint, then every test but the GPU ones, on
# two pytest workers (pytest-xdist; tests/conftest.py orders them): the first starts with the test
# marked `exclusive` (the Compose run, whose image builds take every core), which no other
# end-to-end test runs beside, while the second runs fast tests; then both run end-to-end tests,
# with fast ones filling their waits for Ray, servers and polls. Lint runs beside Azurite's install,
# which mostly waits on the npm registry.
test: setup system-deps
	$(MAKE) --no-print-directory -j2 lint $(AZURITE)
	RNNTUNE_REQUIRE_E2E=1 $(PY) -m pytest -m "not gpu" -q -n 2 --dist worksteal --durations=30

# Writes tests/slow_durations.json again, the seconds each end-to-end test takes, which `make test`
# runs them in the order of, longest first (tests/conftest.py): after adding or renaming some.
# Every end-to-end test on one worker, about 20 minutes.
test-durations: setup system-deps $(AZURITE)
	RNNTUNE_REQUIRE_E2E=1 $(PY) -m pytest -m "slow and not gpu" -q --junitxml=.pytest_cache/slow.xml
	$(PY) scripts/slow-durations .pytest_cache/slow.xml > tests/slow_durations.json

# The fast suite only (no Ray sweeps, PostgreSQL, Chromium or Docker engine).
test-fast: setup $(AZURITE)
	$(PY) -m pytest -m "not slow and not gpu" -q -n 2 --dist worksteal

# The API fuzz with fresh seeds and more cases (make test runs it with fixed seeds): a case it finds
# goes into FOUND in tests/tuner/api/test_schema_fuzz.py.
fuzz: setup
	RNNTUNE_FUZZ_EXPLORE=1 $(PY) -m pytest tests/tuner/api/test_schema_fuzz.py -q -s

# The tests that need CUDA (the fast cell path, docs/gpu.md); they fail on a machine without it.
test-gpu: setup
	$(PY) -m pytest -m gpu -q

clean:
	rm -rf $(VENV) runs studies test-artifacts .pytest_cache
