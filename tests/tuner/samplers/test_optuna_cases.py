"""Optuna's own sampler test cases (tests/samplers_tests/test_samplers.py in optuna/optuna), ported
to rnntune's multi-fidelity samplers and run with PRUNED and RUNNING trials in the study; and the
same checks with conditional (inactive) parameters and with prior trials."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import optuna
import pytest
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState

from tuner.samplers import make_sampler

optuna.logging.set_verbosity(optuna.logging.WARNING)

parametrize_sampler = pytest.mark.parametrize(
    "sampler_class",
    [
        lambda: make_sampler("gp_rungs", seed=0, n_startup_trials=0),
        lambda: make_sampler("gp_bohb", seed=0, n_startup_trials=0),
        lambda: make_sampler("gp_fidelity", seed=0, n_startup_trials=0),
    ],
    ids=["gp_rungs", "gp_bohb", "gp_fidelity"],
)
NUMERICAL = [
    FloatDistribution(-1.0, 1.0),
    FloatDistribution(1e-7, 1.0, log=True),
    FloatDistribution(-10, 10, step=0.5),
    IntDistribution(3, 10),
    IntDistribution(1, 100, log=True),
    IntDistribution(3, 10, step=2),
]


def with_history(study: optuna.Study, search_space: dict[str, BaseDistribution]) -> None:
    """One COMPLETE, two PRUNED (with intermediate values) and one RUNNING trial."""
    trial = study.ask(search_space)
    study.tell(trial, float(sum(_num(v) for v in trial.params.values())))
    for i in range(2):
        trial = study.ask(search_space)
        trial.report(float(i + sum(_num(v) for v in trial.params.values())), 1)
        study.tell(trial, state=TrialState.PRUNED)
    study.ask(search_space)  # left RUNNING


def _num(v: object) -> float:
    return float(v) if isinstance(v, (int, float)) else 0.0


def _new_trial(study: optuna.Study) -> optuna.trial.FrozenTrial:
    trial_id = study._storage.create_new_trial(study._study_id)
    return study._storage.get_trial(trial_id)


@parametrize_sampler
@pytest.mark.parametrize(
    "distribution",
    [
        FloatDistribution(-1.0, 1.0),
        FloatDistribution(1e-7, 1.0, log=True),
        FloatDistribution(-10, 10, step=0.1),
        IntDistribution(-10, 10),
        IntDistribution(1, 100, log=True),
        IntDistribution(0, 10, step=2),
    ],
)
def test_sample_independent_in_range(sampler_class: Callable, distribution: BaseDistribution) -> None:
    study = optuna.create_study(sampler=sampler_class())
    points = np.array(
        [study.sampler.sample_independent(study, _new_trial(study), "x", distribution) for _ in range(50)]
    )
    assert np.all(points >= distribution.low) and np.all(points <= distribution.high)
    if distribution.step is not None:
        steps = (points - distribution.low) / distribution.step
        np.testing.assert_almost_equal(np.round(steps), steps)


@parametrize_sampler
@pytest.mark.parametrize("x_distribution", NUMERICAL)
@pytest.mark.parametrize("y_distribution", NUMERICAL[:3])
def test_sample_relative_numerical(
    sampler_class: Callable, x_distribution: BaseDistribution, y_distribution: BaseDistribution
) -> None:
    search_space: dict[str, BaseDistribution] = OrderedDict(x=x_distribution, y=y_distribution)
    study = optuna.create_study(sampler=sampler_class())
    with_history(study, search_space)
    for _ in range(3):
        params = study.sampler.sample_relative(study, _new_trial(study), search_space)
        assert set(params) == set(search_space)
        for name, distribution in search_space.items():
            value = params[name]
            assert distribution.low <= value <= distribution.high
            assert not isinstance(value, (np.floating, np.integer))
            assert isinstance(value, int if isinstance(distribution, IntDistribution) else float)


@parametrize_sampler
def test_sample_relative_mixed_with_categorical(sampler_class: Callable) -> None:
    search_space: dict[str, BaseDistribution] = OrderedDict(
        x=FloatDistribution(-1.0, 1.0), y=CategoricalDistribution([-1, -10, -100])
    )
    study = optuna.create_study(sampler=sampler_class())
    with_history(study, search_space)
    params = study.sampler.sample_relative(study, _new_trial(study), search_space)
    assert -1.0 <= params["x"] <= 1.0 and isinstance(params["x"], float)
    assert params["y"] in (-1, -10, -100) and isinstance(params["y"], int)


@parametrize_sampler
def test_nan_objective_value(sampler_class: Callable) -> None:
    """Optuna's case: NaN values (FAIL trials) must not break later suggestions."""
    study = optuna.create_study(sampler=sampler_class())

    def objective(trial: optuna.Trial, base: float) -> float:
        return trial.suggest_float("x", 0.1, 0.2) + base

    study.optimize(lambda t: objective(t, 0), n_trials=4)
    study.optimize(lambda t: objective(t, math.nan), n_trials=2, catch=(Exception,))
    study.optimize(lambda t: objective(t, 0), n_trials=2)
    states = [t.state for t in study.trials]
    assert states.count(TrialState.COMPLETE) == 6 and states.count(TrialState.FAIL) == 2
    assert all(0.1 <= t.params["x"] <= 0.2 for t in study.trials)


@parametrize_sampler
def test_conditional_parameters(sampler_class: Callable) -> None:
    """Optuna's conditional case (here x_a and x_b are in rnntune's union space, imputed when inactive)."""
    study = optuna.create_study(sampler=sampler_class())

    def objective(trial: optuna.Trial) -> float:
        kind = trial.suggest_categorical("kind", ["a", "b"])
        x = trial.suggest_float(f"x_{kind}", 0, 1)
        trial.report(x, 1)
        if x > 0.7:
            raise optuna.TrialPruned()
        return x

    study.optimize(objective, n_trials=8)
    assert {t.state for t in study.trials} <= {TrialState.COMPLETE, TrialState.PRUNED}


@parametrize_sampler
def test_reproducible_with_seed(sampler_class: Callable) -> None:
    def history() -> list[dict]:
        study = optuna.create_study(sampler=sampler_class())
        with_history(study, {"x": FloatDistribution(0, 1), "y": IntDistribution(0, 5)})
        for _ in range(3):
            trial = study.ask({"x": FloatDistribution(0, 1), "y": IntDistribution(0, 5)})
            study.tell(trial, trial.params["x"] + trial.params["y"])
        return [t.params for t in study.trials]

    assert history() == history()


@parametrize_sampler
@pytest.mark.parametrize("x_distribution", NUMERICAL)
def test_sample_relative_with_a_conditional_parameter(
    sampler_class: Callable, x_distribution: BaseDistribution
) -> None:
    """Trials without `x` (inactive) beside trials with it: `x` stays in the relative space and its
    relative value is in range and of the right type."""
    full: dict[str, BaseDistribution] = OrderedDict(x=x_distribution, y=FloatDistribution(-1.0, 1.0))
    study = optuna.create_study(sampler=sampler_class())
    with_history(study, full)
    with_history(study, {"y": full["y"]})
    space = study.sampler.infer_relative_search_space(study, _new_trial(study))
    assert set(space) == {"x", "y"}
    params = study.sampler.sample_relative(study, _new_trial(study), space)
    assert set(params) == {"x", "y"}
    assert x_distribution.low <= params["x"] <= x_distribution.high
    assert isinstance(params["x"], int if isinstance(x_distribution, IntDistribution) else float)


@parametrize_sampler
def test_conditional_categorical_parameter(sampler_class: Callable) -> None:
    space: dict[str, BaseDistribution] = OrderedDict(
        x=FloatDistribution(-1.0, 1.0), kind=CategoricalDistribution(["a", "b", "c"])
    )
    study = optuna.create_study(sampler=sampler_class())
    with_history(study, space)
    with_history(study, {"x": space["x"]})
    params = study.sampler.sample_relative(study, _new_trial(study), space)
    assert params["kind"] in ("a", "b", "c") and -1.0 <= params["x"] <= 1.0


@pytest.mark.parametrize(
    ("name", "x_distribution"),
    [(("gp_warped", "gp_rungs", "gp_bohb", "gp_fidelity")[i % 4], d) for i, d in enumerate(NUMERICAL)],
)
def test_prior_trials_in_an_empty_study(name: str, x_distribution: BaseDistribution) -> None:
    """Prior trials (some without `x`) alone drive the first suggestion: in range, right type."""
    space: dict[str, BaseDistribution] = OrderedDict(x=x_distribution, y=FloatDistribution(-1.0, 1.0))
    source = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for i in range(6):
        trial = source.ask(space if i % 3 else {"y": space["y"]})
        source.tell(trial, float(sum(_num(v) for v in trial.params.values())))
    sampler = make_sampler(name, seed=0, prior_trials=source.trials, n_startup_trials=3)
    study = optuna.create_study(sampler=sampler)
    trial = _new_trial(study)
    relative = sampler.infer_relative_search_space(study, trial)
    assert set(relative) == {"x", "y"}
    params = sampler.sample_relative(study, trial, relative)
    assert set(params) == {"x", "y"}
    assert x_distribution.low <= params["x"] <= x_distribution.high
    assert isinstance(params["x"], int if isinstance(x_distribution, IntDistribution) else float)
