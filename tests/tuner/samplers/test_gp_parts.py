"""rnntune's composed GPSampler: its parts (warping, subset), no state kept between steps, and one
sampler shared by Optuna's `n_jobs` threads."""

from __future__ import annotations

import math
import pickle

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from tuner.samplers import DEFAULT_SAMPLER, GPSampler, HalfRank, Subset, make_sampler
from tuner.upstream.optuna_private import check

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_installed_optuna_has_the_gp_internals() -> None:
    check()  # raises RuntimeError naming the Optuna version otherwise


def test_half_rank_warping_keeps_order_and_tames_outliers() -> None:
    values = np.array([0.3, 0.1, 0.2, 0.25, 1e9, 0.5, 0.15, 40.0])
    warped = HalfRank()(values)
    assert list(np.argsort(warped)) == list(np.argsort(values))
    better = values <= np.median(values)
    assert np.array_equal(warped[better], values[better])
    assert warped.max() < 1.0  # the 1e9 outlier lands a few spreads above the median


def test_subset_keeps_everything_below_the_cap() -> None:
    numbers = np.arange(50)
    assert list(Subset(cap=50, best=10, recent=10).select(numbers, np.ones(50), seed=0)) == list(range(50))


def test_subset_keeps_the_best_and_the_most_recent_and_fills_at_random() -> None:
    rng = np.random.default_rng(0)
    n = 1000
    numbers = rng.permutation(n)  # trial numbers in any order
    values = rng.normal(size=n)
    values[7] = np.nan  # a NaN target counts as the worst
    subset = Subset(cap=100, best=20, recent=30)
    kept = subset.select(numbers, values, seed=5)
    assert len(kept) == 100 and len(set(kept)) == 100 and list(kept) == sorted(kept)
    best = np.argsort(np.where(np.isnan(values), np.inf, values))[:20]
    recent = np.argsort(-numbers)[:30]
    assert set(best) <= set(kept) and set(recent) <= set(kept)
    assert 7 not in best
    # Deterministic given the seed; another seed draws another random part.
    assert list(subset.select(numbers, values, seed=5)) == list(kept)
    other = subset.select(numbers, values, seed=6)
    assert set(best) | set(recent) <= set(other) and set(other) != set(kept)


def test_subset_rejects_impossible_shares() -> None:
    with pytest.raises(ValueError, match="best \\+ recent <= cap"):
        Subset(cap=10, best=8, recent=8)


def objective(trial: optuna.Trial) -> float:
    """A conditional space with pruning: the shapes the default sampler's per-call data takes."""
    x = trial.suggest_float("x", 0.0, 10.0)
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    kind = trial.suggest_categorical("kind", ["lstm", "mogrifier"])
    rounds = trial.suggest_int("rounds", 1, 6) if kind == "mogrifier" else 0
    final = (x - 7.0) ** 2 + math.log10(lr / 1e-2) ** 2 + 0.1 * rounds
    for step in (1, 3, 9):
        trial.report(final + 5.0 / step, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return final


def test_one_sampler_shared_by_four_threads_gives_valid_suggestions() -> None:
    """Optuna calls one sampler from every `n_jobs` thread at once; with per-call state on the
    sampler a thread would score its candidates with another's data (another dimension when the
    step input comes and goes) and fail or return corrupt params. (Two threads asking at the same
    moment see the same history, so equal suggestions are allowed: that is not corruption.)"""
    sampler = make_sampler(DEFAULT_SAMPLER, seed=0, n_startup_trials=4)
    pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    study = optuna.create_study(sampler=sampler, pruner=pruner)
    study.optimize(objective, n_trials=28, n_jobs=4, catch=())
    trials = study.get_trials()
    assert len(trials) == 28
    assert {t.state for t in trials} <= {TrialState.COMPLETE, TrialState.PRUNED}
    assert sum(t.state == TrialState.PRUNED for t in trials) > 0
    for t in trials:
        assert 0.0 <= t.params["x"] <= 10.0 and 1e-4 <= t.params["lr"] <= 1e-1
        assert ("rounds" in t.params) == (t.params["kind"] == "mogrifier")
        if "rounds" in t.params:
            assert isinstance(t.params["rounds"], int) and 1 <= t.params["rounds"] <= 6
    # The model ran (the startup is 4 observations): not every trial is the random sampler's draw.
    random = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    random.optimize(objective, n_trials=28)
    assert {t.params["x"] for t in trials} != {t.params["x"] for t in random.trials}


def test_a_suggestion_leaves_nothing_on_the_sampler_but_the_kernel_warm_start() -> None:
    sampler = make_sampler(DEFAULT_SAMPLER, seed=1, n_startup_trials=3)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=4)
    before = dict(vars(sampler))
    study.optimize(objective, n_trials=1)
    changed = {k for k, v in vars(sampler).items() if before.get(k) is not v}
    assert changed <= {"_kernel"}
    assert set(vars(sampler)) == set(before)


def test_the_sampler_pickles_and_suggests_the_same_afterwards() -> None:
    def suggestions(sampler: optuna.samplers.BaseSampler) -> list[dict]:
        study = optuna.create_study(sampler=sampler)
        study.optimize(objective, n_trials=5)
        return [t.params for t in study.trials]

    sampler = make_sampler(DEFAULT_SAMPLER, seed=2, n_startup_trials=3)
    restored = pickle.loads(pickle.dumps(sampler))
    assert suggestions(restored) == suggestions(sampler)


def fill(study: optuna.Study, n: int) -> None:
    rng = np.random.default_rng(3)
    space = {"x": FloatDistribution(0.0, 10.0), "y": FloatDistribution(0.0, 10.0)}
    for _ in range(n):
        x, y = rng.uniform(0, 10, size=2)
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": float(x), "y": float(y)},
                distributions=space,
                value=float(np.hypot(x - 7, y - 3)),
            )
        )


def test_a_subset_sampler_is_reproducible_and_finds_the_region() -> None:
    def first(seed: int) -> tuple[float, float]:
        subset = Subset(cap=20, best=5, recent=5)
        study = optuna.create_study(
            sampler=GPSampler(subset=subset, seed=seed, warn_independent_sampling=False)
        )
        fill(study, 60)
        trial = study.ask()
        return trial.suggest_float("x", 0.0, 10.0), trial.suggest_float("y", 0.0, 10.0)

    point = first(0)
    assert first(0) == point
    assert np.hypot(point[0] - 7, point[1] - 3) < 3.0  # the best five are in the fit


def test_a_subset_keeps_the_positions_it_must_whatever_the_cap() -> None:
    """Several objectives: the Pareto front stays in the fit, and the rest fills up to the cap."""
    numbers, minimised = np.arange(300), np.linspace(0.0, 1.0, 300)
    always = np.array([250, 260, 299])
    chosen = Subset(cap=20, best=5, recent=5).select(numbers, minimised, seed=1, always=always)
    assert set(always) <= set(chosen) and len(chosen) == 20
    assert set(range(5)) <= set(chosen)  # the best by the first objective, as before
    crowded = Subset(cap=20, best=5, recent=5).select(numbers, minimised, seed=1, always=np.arange(100, 130))
    # All of `always`, then the best and the most recent: never fewer than `always`.
    assert set(range(100, 130)) <= set(crowded) and len(crowded) == 40


def test_each_objectives_fit_starts_from_its_own_last_kernel(monkeypatch) -> None:
    """Two objectives: every GP's fit is warm-started from that objective's previous fit (as
    Optuna's GPSampler keeps one cache per objective), never from another objective's."""
    sampler = make_sampler(DEFAULT_SAMPLER, seed=3, n_startup_trials=4)
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    calls: list[tuple[object, object]] = []
    fit = GPSampler._fit

    def spy(self, x, y, space, cached=None):
        gpr = fit(self, x, y, space, cached)
        calls.append((cached, gpr))
        return gpr

    monkeypatch.setattr(GPSampler, "_fit", spy)
    study.optimize(lambda t: (t.suggest_float("x", 0, 1) ** 2, (1 - t.suggest_float("y", 0, 1)) ** 2), 7)
    assert len(calls) == 6  # three EHVI suggestions, two GPs each
    assert calls[0][0] is None and calls[1][0] is None  # the first has nothing to start from
    for previous, now in ((0, 2), (1, 3), (2, 4), (3, 5)):
        assert calls[now][0] is calls[previous][1]


def test_a_suggestion_runs_on_cpu_whatever_the_default_device() -> None:
    """A process whose default torch device is another one (here `meta`, which holds no data: any
    GP tensor made there would fail) still samples on CPU."""
    import torch

    study = optuna.create_study(sampler=make_sampler(DEFAULT_SAMPLER, seed=2, n_startup_trials=3))
    study.optimize(objective, n_trials=3)
    torch.set_default_device("meta")
    try:
        study.optimize(objective, n_trials=2)
    finally:
        torch.set_default_device(None)
    assert len({t.params["x"] for t in study.trials}) == 5
    assert torch.get_default_device().type == "cpu"
