"""rnntune's GP with a fidelity model learns from PRUNED trials, in plain Optuna studies too."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from tuner.samplers import DEFAULT_SAMPLER, BOHBRule, GPSampler, Observations, make_sampler

optuna.logging.set_verbosity(optuna.logging.WARNING)

# The fidelity models: the default's (through the registry) and BOHB's rule alone.
MULTI_FIDELITY = ("gp_fidelity", "bohb_rule")
SPACE = {"x": FloatDistribution(0.0, 10.0), "y": FloatDistribution(0.0, 10.0)}
OPTIMUM = np.array([7.0, 3.0])


def loss(x: float, y: float, step: int) -> float:
    """A learning curve: the distance to the optimum plus a term that shrinks with the steps."""
    return float(np.hypot(x - OPTIMUM[0], y - OPTIMUM[1]) + 5.0 / step)


def pruned_study(sampler: optuna.samplers.BaseSampler, *, with_pruned: bool) -> optuna.Study:
    """3 COMPLETE trials near the optimum and 20 PRUNED ones spread over the space (reported at
    steps 1 and 3, pruned at 3 or 9 as successive halving would), or only the 3 COMPLETE."""
    study = optuna.create_study(sampler=sampler)
    rng = np.random.default_rng(5)
    for x, y in [(6.0, 2.5), (7.8, 3.6), (6.5, 4.0)]:
        study.add_trial(
            optuna.create_trial(
                params={"x": x, "y": y},
                distributions=SPACE,
                value=loss(x, y, 27),
                intermediate_values={s: loss(x, y, s) for s in (1, 3, 9, 27)},
            )
        )
    if with_pruned:
        for i in range(20):
            x, y = rng.uniform(0, 10, size=2)
            last = 9 if i % 4 == 0 else 3
            study.add_trial(
                optuna.create_trial(
                    params={"x": float(x), "y": float(y)},
                    distributions=SPACE,
                    state=TrialState.PRUNED,
                    intermediate_values={s: loss(x, y, s) for s in (1, 3, 9) if s <= last},
                )
            )
    return study


def build(name: str, seed: int, **options: int) -> GPSampler:
    if name == "bohb_rule":
        return GPSampler(fidelity=BOHBRule(), seed=seed, warn_independent_sampling=False, **options)
    sampler = make_sampler(name, seed=seed, **options)
    assert isinstance(sampler, GPSampler)
    return sampler


def observations(sampler: GPSampler, study: optuna.Study) -> Observations:
    """What `sampler` fits in `study` (minimised), before any subset."""
    return sampler.observations(study, study.get_trials(deepcopy=False), 1.0)


def next_point(study: optuna.Study) -> np.ndarray:
    trial = study.ask(SPACE)
    return np.array([trial.params["x"], trial.params["y"]])


@pytest.mark.parametrize("name", MULTI_FIDELITY)
def test_pruned_trials_change_the_suggestion_and_guide_it(name: str) -> None:
    points = []
    for seed in range(3):
        with_pruned = next_point(pruned_study(build(name, seed), with_pruned=True))
        without = next_point(pruned_study(build(name, seed), with_pruned=False))
        assert not np.allclose(with_pruned, without)
        points.append(with_pruned)
    distances = np.linalg.norm(np.array(points) - OPTIMUM, axis=1)
    # Not a random draw: a uniform draw on [0, 10]^2 lands within 3 of the optimum with probability
    # 0.28 (three seeds in a row: 0.02), and three seeds would not agree; the model's optimum does.
    assert distances.max() < 3.0, distances
    assert np.ptp(np.array(points), axis=0).max() < 0.5, points


def test_default_sampler_learns_from_pruned_trials() -> None:
    assert DEFAULT_SAMPLER in MULTI_FIDELITY


PRUNERS = {
    "successive_halving": lambda: optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
    "hyperband": lambda: optuna.pruners.HyperbandPruner(min_resource=1, max_resource=27, reduction_factor=3),
}


def run_with_pruner(sampler: optuna.samplers.BaseSampler, pruner: str) -> optuna.Study:
    # A fixed name: HyperbandPruner assigns trials to brackets by a hash of the study name and the
    # trial number, so a generated name would change what each bracket's sampler sees run to run.
    study = optuna.create_study(study_name="pruned", sampler=sampler, pruner=PRUNERS[pruner]())

    def objective(trial: optuna.Trial) -> float:
        x, y = trial.suggest_float("x", 0, 10), trial.suggest_float("y", 0, 10)
        for step in (1, 3, 9, 27):
            trial.report(loss(x, y, step), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return loss(x, y, 27)

    study.optimize(objective, n_trials=24)
    return study


def points_of(study: optuna.Study) -> np.ndarray:
    return np.array([[t.params["x"], t.params["y"]] for t in study.trials])


@pytest.mark.parametrize("name", MULTI_FIDELITY)
@pytest.mark.parametrize("pruner", PRUNERS)
def test_plain_optuna_study_with_pruner(name: str, pruner: str) -> None:
    study = run_with_pruner(build(name, 0, n_startup_trials=8), pruner)
    states = [t.state for t in study.trials]
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states
    random = points_of(run_with_pruner(optuna.samplers.RandomSampler(seed=0), pruner))
    points = points_of(study)
    # The model takes over after 8 observations, PRUNED ones included: the same 8 random startup
    # points, then different ones, although fewer than 8 trials are COMPLETE by then.
    assert np.allclose(points[:8], random[:8])
    assert not np.allclose(points[8:], random[8:])
    if pruner == "successive_halving" or name != "bohb_rule":
        # ... and the model-made points sit nearer the optimum than the random ones. (Not asserted
        # for BOHB's rule alone under Hyperband: each bracket shows the sampler only its own few trials, too
        # few at any one budget in 24 trials; docs/samplers.md.)
        first, last = points[:8], points[-8:]
        assert np.median(np.linalg.norm(last - OPTIMUM, axis=1)) < np.median(
            np.linalg.norm(first - OPTIMUM, axis=1)
        )


@pytest.mark.parametrize("name", MULTI_FIDELITY)
def test_running_trials_stay_pending(name: str) -> None:
    study = pruned_study(build(name, 0), with_pruned=True)
    pending = [study.ask(SPACE) for _ in range(4)]
    for t in pending[:2]:
        t.report(loss(t.params["x"], t.params["y"], 1), 1)
    nxt = next_point(study)
    for t in pending:
        assert np.linalg.norm(nxt - np.array([t.params["x"], t.params["y"]])) > 1e-3


def test_startup_counts_observations_not_complete_trials() -> None:
    """With 23 observations (3 COMPLETE) the model is used; with 3 it is not: the draw is the
    independent sampler's, identical to a RandomSampler with the same seed."""
    sampler = make_sampler(DEFAULT_SAMPLER, seed=3)
    only_complete = next_point(pruned_study(sampler, with_pruned=False))
    random = next_point(pruned_study(optuna.samplers.RandomSampler(seed=3), with_pruned=False))
    assert np.allclose(only_complete, random)
    assert not np.allclose(
        next_point(pruned_study(make_sampler(DEFAULT_SAMPLER, seed=3), with_pruned=True)), random
    )


def test_bohb_rule_reads_the_rungs_of_the_study_policy() -> None:
    """In an rnntune study the budgets are the policy's rungs: values at other steps are ignored."""
    from tuner.policies.early_stopping import EarlyStopping
    from tuner.storage import study_attrs

    policy = EarlyStopping(grace_steps=50, reduction_factor=3)
    assert policy.rungs(200, 25) == [50, 150]
    study = optuna.create_study(sampler=build("bohb_rule", 0, n_startup_trials=5))
    study.set_user_attr("task", {"max_steps": 200, "eval_every": 25})
    study.set_user_attr(study_attrs.EARLY_STOPPING, policy.model_dump())
    rng = np.random.default_rng(0)
    for _ in range(8):
        x, y = rng.uniform(0, 10, size=2)
        study.add_trial(
            optuna.create_trial(
                params={"x": float(x), "y": float(y)},
                distributions=SPACE,
                state=TrialState.PRUNED,
                intermediate_values={s: loss(x, y, s) for s in (25, 50)},
            )
        )
    trials, targets = observations(study.sampler, study).trials, observations(study.sampler, study).minimised
    assert len(trials) == 8 and len(targets) == 8
    # Ordered like the values at the rung (step 50), whatever the values at step 25.
    at_rung = [t.intermediate_values[50] for t in trials]
    assert list(np.argsort(targets)) == list(np.argsort(at_rung))
    study.set_user_attr(
        study_attrs.EARLY_STOPPING, EarlyStopping(grace_steps=100, reduction_factor=2).model_dump()
    )
    assert observations(study.sampler, study).trials == []


def test_nan_and_inf_values_do_not_break_the_fit() -> None:
    study = pruned_study(make_sampler(DEFAULT_SAMPLER, seed=0), with_pruned=True)
    study.add_trial(
        optuna.create_trial(
            params={"x": 1.0, "y": 1.0},
            distributions=SPACE,
            state=TrialState.PRUNED,
            intermediate_values={1: math.inf},
        )
    )
    study.add_trial(
        optuna.create_trial(
            params={"x": 2.0, "y": 9.0},
            distributions=SPACE,
            state=TrialState.PRUNED,
            intermediate_values={1: math.nan},
        )
    )
    point = next_point(study)
    assert np.all((point >= 0) & (point <= 10))


def test_fidelity_gp_fits_every_trial_at_its_step_once_enough_are_complete() -> None:
    """BOHB's rule drops the PRUNED trials once the full budget has enough COMPLETE ones; the
    fidelity GP keeps them, each at the last step it reported, and scores candidates at the end."""
    from tuner.samplers.fidelity_gp import median_drops
    from tuner.samplers.fit_inputs import FIDELITY

    study = pruned_study(build("gp_fidelity", 0, n_startup_trials=3), with_pruned=True)
    assert len(observations(build("bohb_rule", 0, n_startup_trials=3), study).trials) == 3
    fitted = observations(study.sampler, study)
    assert len(fitted.trials) == 23 and np.all(np.isfinite(fitted.minimised))
    assert fitted.steps is not None and sorted(set(fitted.steps)) == [3, 9, 27] and fitted.full == 27
    # The value at step 3 is moved by the COMPLETE trials' median drop from step 3 to the end.
    drops = median_drops(study.trials, 1.0)
    assert drops[3] == pytest.approx(5.0 / 3 - 5.0 / 27)
    trial = study.ask(SPACE)
    assert set(trial.params) == set(SPACE) and FIDELITY not in trial.params
    assert all(FIDELITY not in t.params for t in study.trials)


def test_fidelity_gp_uses_bohb_rule_until_the_full_budget_has_enough() -> None:
    """Early in a sweep few trials are COMPLETE: the fidelity GP then fits what BOHB's rule fits
    (one rung, every trial that reached it), which the benchmark found better at small budgets."""
    study = pruned_study(build("gp_fidelity", 0, n_startup_trials=10), with_pruned=True)
    ours = observations(study.sampler, study)
    theirs = observations(build("bohb_rule", 0, n_startup_trials=10), study)
    assert [t.number for t in ours.trials] == [t.number for t in theirs.trials] and len(ours.trials) == 23
    assert np.allclose(ours.minimised, theirs.minimised) and ours.steps is None


def test_fidelity_gp_takes_reports_at_step_zero() -> None:
    """Optuna allows `report(value, 0)`; the step is a log-scale GP input, so 0 must not break it."""
    study = optuna.create_study(sampler=build("gp_fidelity", 0, n_startup_trials=3))
    rng = np.random.default_rng(1)
    for i in range(8):
        x, y = rng.uniform(0, 10, size=2)
        last = 2 if i < 4 else 0
        study.add_trial(
            optuna.create_trial(
                params={"x": float(x), "y": float(y)},
                distributions=SPACE,
                state=TrialState.COMPLETE if last == 2 else TrialState.PRUNED,
                value=loss(x, y, 3) if last == 2 else None,
                intermediate_values={s: loss(x, y, s + 1) for s in range(last + 1)},
            )
        )
    point = next_point(study)
    assert np.all((point >= 0) & (point <= 10))
