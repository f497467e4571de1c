"""Real rnntune studies for the comparison tests: created by `create_study` (space `tiny`, so they
carry the stored task and space), then given trials with Optuna's own `add_trial`, the way a sweep
writes them (docs/contracts.md): COMPLETE trials with their learning curve to `max_steps`, PRUNED
ones stopped at a rung, start and end times."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path

import optuna
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.sweeps.study.create import create_study

DIST: dict[str, BaseDistribution] = {"learning_rate": FloatDistribution(0.001, 0.004, log=True)}
START = dt.datetime(2026, 11, 1, 12, 0, 0)
MAX_STEPS = 200  # the tiny space's


def make_compared(
    db_url: str,
    name: str,
    root: Path,
    values: Iterable[float],
    *,
    cell: str | None = None,
    pruned: int = 0,
    seconds: float = 10.0,
    overrides: dict | None = None,
) -> optuna.Study:
    """A `tiny` study (optionally of another `cell`, or other fixed `overrides`) with one COMPLETE
    trial per value (`seconds` each, `MAX_STEPS` steps) and `pruned` trials stopped at step 50."""
    values = [float(v) for v in values]
    fixed = dict(overrides or {})
    if cell is not None:
        fixed["cell"] = cell
    study = create_study(
        name,
        storage_url=db_url,
        space="tiny",
        n_trials=len(values) + pruned,
        storage_path=root / name,
        **({"overrides": {"set": fixed}} if fixed else {}),
    )
    trials = []
    for i, value in enumerate(values):
        trial = create_trial(
            params={"learning_rate": 0.001 + 0.0001 * (i % 30)},
            distributions=DIST,
            value=value,
            intermediate_values={step: value + 1.0 / step for step in range(25, MAX_STEPS + 1, 25)},
        )
        trial.datetime_start = START + dt.timedelta(minutes=i)
        trial.datetime_complete = trial.datetime_start + dt.timedelta(seconds=seconds)
        trials.append(trial)
    for i in range(pruned):
        trial = create_trial(
            state=TrialState.PRUNED,
            params={"learning_rate": 0.002},
            distributions=DIST,
            intermediate_values={25: 6.0, 50: 5.9},
        )
        trial.datetime_start = START + dt.timedelta(hours=1, minutes=i)
        trial.datetime_complete = trial.datetime_start + dt.timedelta(seconds=seconds / 4)
        trials.append(trial)
    study.add_trials(trials)
    return study
