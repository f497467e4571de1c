"""Two objectives (`tuner.samplers.ehvi`): when EHVI is used, which trials each objective's GP
fits, the denoised front's starting points, and suggestions that gather on the Pareto set."""

from __future__ import annotations

import warnings

import numpy as np
import optuna
import pytest
import torch
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.samplers import ehvi, make_sampler

optuna.logging.set_verbosity(optuna.logging.WARNING)
X = {"x": FloatDistribution(0.0, 1.0)}


def _complete(x: float, values: list[float], **kw: object) -> optuna.trial.FrozenTrial:
    return create_trial(values=values, params={"x": x}, distributions=X, **kw)  # type: ignore[arg-type]


def _pruned(x: float, attrs: dict) -> optuna.trial.FrozenTrial:
    return create_trial(
        state=TrialState.PRUNED,
        params={"x": x},
        distributions=X,
        intermediate_values={5: x},
        user_attrs=attrs,
    )


def test_applies_to_two_unconstrained_objectives_with_a_front() -> None:
    four = [_complete(x, [x, 1 - x]) for x in (0.1, 0.2, 0.3, 0.4)]
    assert ehvi.applies(2, four, enough=4)
    assert not ehvi.applies(2, [*four[:3], _pruned(0.5, {})], enough=4)  # 3 COMPLETE: ParEGO still
    assert not ehvi.applies(3, four, enough=4)  # three objectives: ParEGO
    constrained = [*four[:3], _complete(0.4, [0.4, 0.6], system_attrs={"constraints": [0.5]})]
    assert not ehvi.applies(2, constrained, enough=4)  # constraints: ParEGO's constrained q-logEI


def test_measured_reads_complete_values_and_recorded_measures() -> None:
    trials = [
        _complete(0.1, [1.0, 300.0]),
        _pruned(0.2, {"tokens_per_s": 250.0}),
        _pruned(0.3, {"tokens_per_s": float("nan")}),  # not a value: left out
        _pruned(0.4, {"tokens_per_s": True}),  # a flag, not a measure
        _pruned(0.5, {}),
    ]
    got = ehvi.measured(trials, ["val_loss", "tokens_per_s"], 1)
    assert [(t.params["x"], v) for t, v in got] == [(0.1, 300.0), (0.2, 250.0)]
    assert [t.params["x"] for t, _ in ehvi.measured(trials, [], 1)] == [0.1]  # no names: COMPLETE only


def test_first_objective_copies_keep_the_stored_trials() -> None:
    trials = [_complete(0.1, [1.0, 300.0]), _pruned(0.2, {})]
    proxies = ehvi.first_objective(trials)
    assert proxies[0].values == [1.0] and proxies[0].value == 1.0 and proxies[1].values is None
    assert trials[0].values == [1.0, 300.0]


def test_targets_make_the_better_value_larger() -> None:
    assert np.argmax(ehvi.targets([3.0, 1.0, 2.0], sign=1.0)) == 1  # minimised: the smallest
    maximised = ehvi.targets([3.0, 1.0, 2.0], sign=-1.0)
    assert np.argmax(maximised) == 0 and maximised.mean() == pytest.approx(0.0)


def test_warm_starts_lie_on_the_front() -> None:
    x = np.array([[0.0], [0.1], [0.2], [0.3]])
    front = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [0.5, 0.5]], dtype=torch.float64)
    starts = ehvi.warm_starts(x, front, np.random.RandomState(0))
    assert sorted(starts[:, 0].tolist()) == [0.0, 0.1, 0.3]  # row 2 is dominated (larger is better)


def test_two_objectives_gather_on_the_pareto_set_with_trials_in_flight() -> None:
    """f1 = |p - (0, 0)|², f2 = |p - (1, 0)|²: the Pareto set is y = 0, 0 <= x <= 1 (a 6% strip of
    the box within 0.25 of it, where 6% of random suggestions land). After 6 random trials, at least
    half land near it (seeds 0-5 gave 0.53-0.87 with the dependencies of 2026-11-29)."""
    study = optuna.create_study(
        directions=["minimize", "minimize"], sampler=make_sampler("gp_fidelity", seed=0, n_startup_trials=6)
    )
    pending: list[optuna.Trial] = []
    for _ in range(24):
        while len(pending) < 3:
            trial = study.ask()
            trial.suggest_float("x", -2.0, 2.0)
            trial.suggest_float("y", -2.0, 2.0)
            pending.append(trial)
        trial = pending.pop(0)
        x, y = trial.params["x"], trial.params["y"]
        study.tell(trial, [x**2 + y**2, (x - 1) ** 2 + y**2])
    later = [t.params for t in study.trials[9:24]]
    near = [abs(p["y"]) < 0.25 and -0.25 < p["x"] < 1.25 for p in later]
    assert np.mean(near) >= 0.5, f"{np.mean(near):.2f} of the model's suggestions near the Pareto set"


def test_early_stopped_trials_inform_the_other_objectives_gp() -> None:
    """A PRUNED trial with its throughput recorded is fitted by the throughput GP: the suggestion
    changes when the pruned trials carry it."""

    def suggestion(speed: float | None) -> dict:
        study = optuna.create_study(directions=["minimize", "maximize"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(["val_loss", "tokens_per_s"])
        for x in (0.1, 0.4, 0.7, 0.9):
            study.add_trial(_complete(x, [1.0 + x, 100.0 + 50 * x], intermediate_values={5: 2.0 + x}))
        for x in (0.2, 0.3, 0.5, 0.6, 0.8):
            study.add_trial(_pruned(x, {} if speed is None else {"tokens_per_s": speed}))
        sampler = make_sampler("gp_fidelity", seed=0, n_startup_trials=4)
        study.ask()
        return sampler.sample_relative(study, study.trials[-1], X)

    with_speed, without = suggestion(500.0), suggestion(None)
    assert with_speed and without and with_speed != without


def test_the_front_is_found_among_the_first_objectives_proxies() -> None:
    """`front_positions` reads every objective from the stored trials (the proxies hold only the
    first) and keeps COMPLETE trials on the front of both, whatever each objective's direction."""
    stored = [
        _complete(0.1, [1.0, 9.0]),
        _complete(0.2, [2.0, 5.0]),
        _complete(0.3, [3.0, 6.0]),  # dominated by the second
        _complete(0.4, [4.0, 1.0]),
        _pruned(0.5, {"num_params": 0.5}),
    ]
    for number, t in enumerate(stored):
        t.number = number
    proxies = ehvi.first_objective(stored)
    assert list(ehvi.front_positions(proxies, stored, np.array([1.0, 1.0]), 10)) == [0, 1, 3]
    # Maximising the second objective: the first trial alone is best in it.
    assert list(ehvi.front_positions(proxies, stored, np.array([1.0, -1.0]), 10)) == [0]
    # A front over the limit keeps its ends and points evenly spaced between them.
    assert list(ehvi.front_positions(proxies, stored, np.array([1.0, 1.0]), 2)) == [0, 3]


def test_a_large_two_objective_study_fits_a_subset_with_its_front() -> None:
    """Past the subset's cap every objective's GP fits the kept trials only (the cost stays flat),
    and the front is among them: the suggestion still comes."""
    from tuner.samplers import GPSampler, Subset

    rng = np.random.default_rng(0)
    study = optuna.create_study(
        directions=["minimize", "minimize"],
        sampler=GPSampler(subset=Subset(cap=30, best=5, recent=5), seed=0, warn_independent_sampling=False),
    )
    xs = rng.uniform(size=120)
    noise = rng.uniform(0.0, 0.3, size=(120, 2))  # most trials off the front
    study.add_trials(
        [
            _complete(float(x), [float(x) + e[0], float((1 - x) ** 2) + e[1]])
            for x, e in zip(xs, noise, strict=True)
        ]
    )
    fitted_sizes = []
    original = GPSampler._fit

    def spy(self, x, y, space, cached=None):
        fitted_sizes.append(len(y))
        return original(self, x, y, space, cached)

    GPSampler._fit = spy  # type: ignore[method-assign]
    try:
        trial = study.ask()
        x = trial.suggest_float("x", 0.0, 1.0)
    finally:
        GPSampler._fit = original  # type: ignore[method-assign]
    assert 0.0 <= x <= 1.0
    # Both objectives' GPs fit the subset: the cap, plus any front points past it (at most cap / 2).
    assert len(fitted_sizes) == 2 and all(30 <= n <= 30 + 15 for n in fitted_sizes)
