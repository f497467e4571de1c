"""Shared fixtures: a throwaway PostgreSQL server, an embedded Ray cluster, tiny trainer settings."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.postgres import PostgresUnavailable, postgres_server

# Property-based tests draw the same cases on every run of a commit (no seed from the clock, no
# example database); `make fuzz` sets RNNTUNE_FUZZ_EXPLORE=1 to draw fresh ones.
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore", database=None)
settings.load_profile("explore" if os.environ.get("RNNTUNE_FUZZ_EXPLORE") == "1" else "fixed")

# `make test` (and so CI) sets this after installing PostgreSQL and Chromium: there, a test that
# would skip for a missing system part fails instead, so a broken install cannot pass silently.
REQUIRE_E2E = os.environ.get("RNNTUNE_REQUIRE_E2E") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_E2E and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under RNNTUNE_REQUIRE_E2E=1: {report.longrepr}"


# Fixtures that start Ray: a test using one runs alone (`make test`'s second phase), never on the
# two workers of the first, where two Ray clusters would share two cores.
RAY_FIXTURES = ("ray_cluster", "shared_ray_head")


def pytest_collection_modifyitems(config, items):
    for item in items:
        alone = item.get_closest_marker("slow") is not None and item.get_closest_marker("parallel") is None
        if not alone and any(f in getattr(item, "fixturenames", ()) for f in RAY_FIXTURES):
            raise pytest.UsageError(f"{item.nodeid} starts Ray: mark it slow, and not parallel")


def pytest_runtest_call(item):
    """A `gpu` test fails, rather than skips, without CUDA (`make test-gpu` on a GPU machine)."""
    if item.get_closest_marker("gpu") is not None:
        import torch

        if not torch.cuda.is_available():
            pytest.fail("this test is marked gpu and needs CUDA, which is not available here", pytrace=False)


# Trainer settings small enough that a trial takes about a second on one CPU core. Its end-of-run
# figures read the whole validation and test splits (46K characters of the built-in corpus): 64
# streams take a quarter of the sequential steps of the default 16.
TINY_SETTINGS = {
    "hidden_size": 16,
    "max_steps": 30,
    "eval_every": 10,
    "batch_size": 8,
    "bptt": 16,
    "max_eval_tokens": 2000,
    "eval_batch_size": 64,
    "device": "cpu",
}


@pytest.fixture(scope="session")
def postgres_url():
    """SQLAlchemy URL of a PostgreSQL server started for this test session (skips if unavailable).

    Its folder lives in the system temp dir: as root the server runs as `postgres`, which cannot
    enter pytest's private (0700) temp folders.
    """
    try:
        with postgres_server() as url:
            yield url
    except PostgresUnavailable as err:
        pytest.skip(str(err))


@pytest.fixture(scope="session")
def ray_cluster():
    """One embedded Ray cluster (2 CPUs) shared by the in-process sweeps of a test session."""
    import ray

    from tuner.sweeps.cluster.ray_runtime import start_ray

    started = start_ray(None, num_cpus=2, verbose=False)
    yield
    if started:
        ray.shutdown()


if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs the fast tests on both cores, one pytest worker each: one torch thread per
    # worker, or the two workers' intra-op threads take turns on the same two cores.
    import torch

    torch.set_num_threads(1)
