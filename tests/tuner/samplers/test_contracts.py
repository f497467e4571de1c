"""Optuna's sampler contract suites (`optuna.testing.pytest_samplers`) for every registered sampler.

One fixture, parametrised over `SAMPLERS`, shapes each sampler as Optuna's own tests shape theirs:
no random startup (`n_startup_trials=0` where the sampler takes it), so the model-based path runs
from the first completed trial. Cases that do not apply to a sampler (`NOT_APPLICABLE`, with the
reason) and cases Optuna's own CI runs on the very same sampler (`UPSTREAM_RUNS`) are deselected
at collection (conftest.py).
These replace the copies of Optuna's cases this folder used to carry.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna
import pytest
from optuna.samplers import BaseSampler
from optuna.testing.pytest_samplers import (
    BasicSamplerTestCase,
    MultiObjectiveSamplerTestCase,
    RelativeSamplerTestCase,
)

from tuner.samplers import SAMPLERS, make_sampler, sampler_options

optuna.logging.set_verbosity(optuna.logging.WARNING)

# Suites that do not apply to a sampler, and why (deselected by conftest.py).
NOT_APPLICABLE = {
    ("random", "RelativeSamplerTestCase"): "RandomSampler has no relative model (sample_relative is {})",
    ("tpe", "RelativeSamplerTestCase"): (
        "TPE with group=True samples only over the parameter groups its infer_relative_search_space "
        "found; the suite calls sample_relative with a space it never inferred (returns {})"
    ),
    ("nsga2", "RelativeSamplerTestCase"): (
        "NSGA-II breeds children only from a finished generation (population_size trials); the suite's "
        "studies never have one, so sample_relative returns {} and its independent sampler draws"
    ),
}

# Suites Optuna's own CI runs on the same sampler, shaped the same way: deselected here, where they
# would only re-test Optuna's code. Optuna's tests/samplers_tests/test_samplers.py puts
# `GPSampler(n_startup_trials=0)` in `parametrize_relative_sampler`, so its relative cases run there;
# rnntune's `gp` is that sampler with `warn_independent_sampling=False`, which sample_relative never
# reads. Its Basic and MultiObjective suites still run here (they exercise the registry's factory).
UPSTREAM_RUNS = {
    ("gp", "RelativeSamplerTestCase"): "Optuna's CI runs the relative suite on GPSampler(n_startup_trials=0)",
}


def shaped(name: str) -> Callable[[], BaseSampler]:
    """A factory for sampler `name` without random startup, seeded."""
    options = {"n_startup_trials": 0} if "n_startup_trials" in sampler_options(name) else {}
    return lambda: make_sampler(name, seed=0, **options)


class TestSamplerContracts(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    # Optuna's own GPSampler: its CI runs these cases; slow here (a GP fit per suggestion).
    @pytest.fixture(params=[pytest.param(n, marks=pytest.mark.slow) if n == "gp" else n for n in SAMPLERS])
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return shaped(request.param)
