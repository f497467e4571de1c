"""`tuner.samplers.tpe`: Optuna's TPE reading early-stopped trials with curves in a study with
several objectives, and unchanged with one."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from tuner.samplers.tpe import CurveDirection, TPESampler
from tuner.sweeps.drive.writer import report

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _pruned_study(sampler: optuna.samplers.BaseSampler, n: int = 12, every: int = 4) -> optuna.Study:
    """Two objectives; every trial but each `every`-th PRUNED after a curve of the first
    objective, low near x = 0.2."""
    study = optuna.create_study(directions=["minimize", "maximize"], sampler=sampler)
    for i in range(n):
        trial = study.ask()
        x = trial.suggest_float("x", 0.0, 1.0)
        report(trial, (x - 0.2) ** 2, 1)
        if i % every == every - 1:
            study.tell(trial, [(x - 0.2) ** 2, x])
        else:
            study.tell(trial, state=TrialState.PRUNED)
    return study


def test_curve_direction_is_the_first_objectives() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    read = CurveDirection(study)
    assert read.direction == optuna.study.StudyDirection.MAXIMIZE
    assert read.directions == study.directions and read.trials == study.trials


def test_optunas_tpe_raises_on_pruned_curves_with_several_objectives() -> None:
    """Why the subclass exists: if a new Optuna stops raising, `tuner.samplers.tpe` can go."""
    with pytest.raises(RuntimeError, match="single direction"):
        _pruned_study(optuna.samplers.TPESampler(seed=0, n_startup_trials=2))


def test_pruned_trials_rank_by_their_curve() -> None:
    """Every trial PRUNED: TPE's good group is made of the pruned trials with the lowest loss,
    so suggestions gather near x = 0.2, where the curves are low (uniform: 40% within 0.2)."""
    study = _pruned_study(TPESampler(seed=0, n_startup_trials=5), n=40, every=10**9)
    later = [t.params["x"] for t in study.trials[20:]]
    assert sum(abs(x - 0.2) < 0.2 for x in later) >= 0.7 * len(later)


def test_one_objective_suggests_as_optuna() -> None:
    def run(sampler: optuna.samplers.BaseSampler) -> list[float]:
        study = optuna.create_study(sampler=sampler)
        study.optimize(lambda t: (t.suggest_float("x", -1.0, 1.0) - 0.3) ** 2, n_trials=15)
        return [t.params["x"] for t in study.trials]

    assert run(TPESampler(seed=3, n_startup_trials=3)) == run(
        optuna.samplers.TPESampler(seed=3, n_startup_trials=3)
    )
