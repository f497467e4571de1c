"""Warm starts: `make_sampler(..., prior_trials=[...])` fits another study's trials."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial

from tuner.samplers import SAMPLERS, WARM_START_SAMPLERS, make_sampler, sampler_options
from tuner.samplers.prior_trials import kept, standardised, usable

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {"x": FloatDistribution(0.0, 10.0), "y": FloatDistribution(0.0, 10.0)}
OPTIMUM = np.array([7.0, 3.0])


def source(n: int = 30, scale: float = 100.0, space: dict = SPACE, seed: int = 0) -> list[FrozenTrial]:
    """A finished study on a related task: another objective scale, the same good region."""
    rng = np.random.default_rng(seed)
    trials = []
    for _ in range(n):
        p = {name: float(rng.uniform(d.low, d.high)) for name, d in space.items()}
        value = scale * float(np.hypot(p["x"] - OPTIMUM[0], p["y"] - OPTIMUM[1])) + 50.0
        trials.append(create_trial(params=p, distributions=space, value=value))
    return trials


def first_point(name: str, seed: int, prior: list[FrozenTrial] | None, tmp_path=None) -> tuple:
    storage = f"sqlite:///{tmp_path / f'{name}-{seed}.db'}" if tmp_path else None
    study = optuna.create_study(storage=storage, sampler=make_sampler(name, seed=seed, prior_trials=prior))
    trial = study.ask()
    point = np.array([trial.suggest_float("x", 0.0, 10.0), trial.suggest_float("y", 0.0, 10.0)])
    return point, trial.relative_params


@pytest.mark.parametrize("name", WARM_START_SAMPLERS)
def test_priors_drive_the_first_suggestion_to_the_prior_optimum(name: str, tmp_path) -> None:
    for seed in (0, 1, 2):
        warm, relative = first_point(name, seed, source(), tmp_path)
        cold, _ = first_point(name, seed, None, tmp_path)
        assert set(relative) == {"x", "y"}  # from the model, not the random startup sampler
        assert not np.allclose(warm, cold)
        assert np.hypot(*(warm - OPTIMUM)) < 2.0, (seed, warm)


def test_priors_outside_the_space_are_ignored() -> None:
    wide = {"x": FloatDistribution(0.0, 30.0), "y": FloatDistribution(0.0, 30.0)}
    outside = [t for t in source(60, space=wide) if max(t.params.values()) > 10.0]
    # Once the study has trials of its own, priors beyond its ranges count for nothing.
    assert usable(outside, SPACE) == []
    inside = source(5)
    assert len(usable(outside + inside, SPACE)) == len(inside)


def test_priors_outside_the_space_do_not_change_suggestions() -> None:
    def history(prior: list[FrozenTrial] | None) -> list[dict]:
        sampler = make_sampler("gp_fidelity", seed=3, prior_trials=prior, n_startup_trials=3)
        study = optuna.create_study(sampler=sampler)
        # The study's own trial defines its space (an empty study takes the priors' space).
        study.add_trial(create_trial(params={"x": 1.0, "y": 1.0}, distributions=SPACE, value=7.1))
        for _ in range(5):
            trial = study.ask()
            x, y = trial.suggest_float("x", 0.0, 10.0), trial.suggest_float("y", 0.0, 10.0)
            study.tell(trial, float(np.hypot(x - 2, y - 8)))
        return [t.params for t in study.trials]

    wide = {"x": FloatDistribution(0.0, 30.0), "y": FloatDistribution(0.0, 30.0)}
    outside = [t for t in source(60, space=wide) if max(t.params.values()) > 10.0]
    assert history(outside) == history(None)


def test_only_warm_start_samplers_take_priors() -> None:
    for name in SAMPLERS:
        if name in WARM_START_SAMPLERS:
            make_sampler(name, seed=0, prior_trials=source(3))
            continue
        with pytest.raises(ValueError, match="cannot take prior trials") as err:
            make_sampler(name, seed=0, prior_trials=source(3))
        for allowed in WARM_START_SAMPLERS:
            assert allowed in str(err.value)
    assert "prior_trials" not in sampler_options("gp_fidelity")


def test_own_observations_push_the_priors_out() -> None:
    assert kept(40, 0, 30) == 40
    assert kept(40, 15, 30) == 20
    assert kept(40, 30, 30) == 0
    z = standardised(np.array([1.0, 2.0, 3.0, np.inf]))
    assert z[-1] == z[-2] and abs(float(np.mean(z[:3]))) < 1.0


def test_pruned_and_failed_priors_do_not_count() -> None:
    pruned = create_trial(params={"x": 1.0, "y": 1.0}, distributions=SPACE, state=TrialState.PRUNED)
    failed = create_trial(params={"x": 2.0, "y": 1.0}, distributions=SPACE, state=TrialState.FAIL)
    assert usable([pruned, failed], SPACE) == []
