"""Shared fixtures: a throwaway PostgreSQL server, an embedded Ray cluster, tiny trainer settings."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.optuna_scripts import share_alembic_scripts
from tests.postgres import PostgresUnavailable, postgres_server

share_alembic_scripts()  # Optuna's migration scripts parsed once per test process, not per database

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


# Fixtures that start Ray: a test using one is slow (`make test-fast` starts no Ray).
RAY_FIXTURES = ("ray_cluster", "shared_ray_head")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is None and any(
            f in getattr(item, "fixturenames", ()) for f in RAY_FIXTURES
        ):
            raise pytest.UsageError(f"{item.nodeid} starts Ray: mark it slow")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = two_worker_order(items)


def two_worker_order(items: list) -> list:
    """`make test`'s order on two pytest workers (pytest-xdist's worksteal gives the first worker the
    first half of the items, the second the rest, and lets an idle one take the other's last
    pending tests). The first worker starts with the `exclusive` tests, then half of the other
    end-to-end tests (every other one, longest first), then fast tests from the modules with the most items (parametrised cases of a
    fraction of a second each): many tests of little time, which an idle worker can take over at
    the end. The second worker starts with the rest of the fast tests, which take no lock and hold
    most of the fast tests' time, enough to run beside the exclusive Compose run (about 3.5 minutes
    on a fresh machine, where it builds its images) instead of waiting for it; then the other half
    of the end-to-end tests."""
    exclusive = [i for i in items if i.get_closest_marker("exclusive") is not None]
    slow = longest_first(
        [i for i in items if i.get_closest_marker("slow") is not None and i not in exclusive]
    )
    fast = [i for i in items if i.get_closest_marker("slow") is None and i not in exclusive]
    per_module = collections.Counter(_module(i) for i in fast)
    fast.sort(key=lambda i: -per_module[_module(i)])  # stable: each module's tests stay together, in order
    # The halfway point, where the second worker's tests begin, falls among the fast tests.
    return exclusive + slow[0::2] + fast + slow[1::2]


def longest_first(slow: list) -> list:
    """End-to-end tests, longest first by the seconds tests/slow_durations.json records (`make
    test-durations`; a test it lacks counts as the median): the second worker ends on them, and an
    idle worker can take over only tests not yet started, so a long one last ran alone (a 45 s test
    left one worker idle for 25 s of a run)."""
    recorded = json.loads((Path(__file__).parent / "slow_durations.json").read_text())
    typical = statistics.median(recorded.values())
    return sorted(slow, key=lambda item: -recorded.get(item.nodeid, typical))  # stable among equals


def _module(item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """On several workers an `exclusive` test runs with no other end-to-end test at once (setup and
    teardown included): a reader-writer lock on files shared by the run's workers, writer first.
    Fast tests take no lock: one core of fast tests beside it costs it little, and the other worker
    would otherwise sit idle for its whole length."""
    worker_temp = item.config.option.basetemp  # pytest-xdist gives each worker <run's temp>/popen-gwN
    exclusive = item.get_closest_marker("exclusive")
    end_to_end = exclusive is not None or item.get_closest_marker("slow") is not None
    if not os.environ.get("PYTEST_XDIST_WORKER") or not worker_temp or not end_to_end:
        yield
        return
    with one_at_a_time(Path(worker_temp).parent / "one-at-a-time", exclusive):
        yield


@contextlib.contextmanager
def one_at_a_time(stem: Path, exclusive: object) -> Iterator[None]:
    """Every end-to-end test holds `stem.room` shared, an exclusive one holds it alone; `stem.turn`
    lets an exclusive test waiting for the room in before any other (flock alone favours none)."""
    with open(f"{stem}.turn", "a") as turn, open(f"{stem}.room", "a") as room:
        fcntl.flock(turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(room, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            if not exclusive:
                fcntl.flock(turn, fcntl.LOCK_UN)
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            fcntl.flock(turn, fcntl.LOCK_UN)


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


@pytest.fixture
def joined_ray(ray_cluster) -> dict[str, str]:
    """The environment that makes a `rnntune sweep` process join the session's cluster
    (`ray_cluster`) instead of starting an embedded one (whose daemons cost about 4 s of CPU): for
    end-to-end tests whose subject is not the embedded cluster. Its trials then run in this worker's
    environment, as a joined cluster's trials run in their node's."""
    import ray

    return {"RAY_ADDRESS": ray.get_runtime_context().gcs_address}


if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs the fast tests on both cores, one pytest worker each: one torch thread per
    # worker, or the two workers' intra-op threads take turns on the same two cores.
    import torch

    torch.set_num_threads(1)
