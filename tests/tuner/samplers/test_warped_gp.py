"""`WarpedGPSampler` (and its half-rank warping) through Optuna 5.0's GPSampler hook."""

from __future__ import annotations

import math

import numpy as np
import optuna

from tuner.samplers import HalfRankGPSampler, make_sampler
from tuner.samplers.warped_gp import check_optuna_hook

optuna.logging.set_verbosity(optuna.logging.WARNING)


def suggest_point(trial: optuna.Trial) -> tuple[float, float, int]:
    lr = trial.suggest_float("learning_rate", 1e-3, 4e-3, log=True)
    dropout = trial.suggest_float("state_dropout", 0.0, 0.8)
    rounds = trial.suggest_int("mogrifier_rounds", 0, 6)
    return math.log(lr / 1e-3) / math.log(4.0), dropout / 0.8, rounds


def test_installed_optuna_has_the_hook() -> None:
    check_optuna_hook()  # raises RuntimeError naming the Optuna version otherwise


def test_warped_gp_fits_the_warped_values() -> None:
    # Fails if Optuna stops calling the hook WarpedGPSampler overrides (gp_warped would become gp).
    def history(name: str) -> list[dict]:
        study = optuna.create_study(sampler=make_sampler(name, seed=3, n_startup_trials=4))
        for _ in range(7):
            trial = study.ask()
            lr, dropout, rounds = suggest_point(trial)
            study.tell(trial, math.exp(10 * (lr + dropout)) + rounds)  # a few huge values
        return [t.params for t in study.trials]

    plain, warped = history("gp"), history("gp_warped")
    assert plain[:4] == warped[:4]  # the same random startup trials
    assert plain[4:] != warped[4:]


def test_half_rank_warping_keeps_order_and_tames_outliers() -> None:
    values = np.array([0.3, 0.1, 0.2, 0.25, 1e9, 0.5, 0.15, 40.0])
    warped = HalfRankGPSampler.warp(values)
    assert list(np.argsort(warped)) == list(np.argsort(values))
    better = values <= np.median(values)
    assert np.array_equal(warped[better], values[better])
    assert warped.max() < 1.0  # the 1e9 outlier lands a few spreads above the median
