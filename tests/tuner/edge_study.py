"""A real `tiny` study whose best trials crowd the low learning-rate bound (a boundary alert)."""

from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution

from tuner.storage.study import set_status
from tuner.sweeps.study.create import create_study

LR = FloatDistribution(0.001, 0.004, log=True)


def edge_study(db: str, name: str, root, n_trials: int = 10, **settings) -> optuna.Study:
    """A finished `tiny` study whose best trials sit at the low learning-rate bound; `settings` fix
    trainer settings (e.g. the tests' small ones, for a study the test then continues)."""
    study = create_study(
        name,
        storage_url=db,
        space="tiny",
        n_trials=n_trials,
        storage_path=root / name,
        overrides={"ranges": {}, "set": settings} if settings else None,
    )
    for i in range(n_trials):
        lr = 0.00101 + 0.00001 * i if i < 3 else 0.001 + 0.0003 * i
        study.add_trial(
            optuna.trial.create_trial(
                params={"learning_rate": lr}, distributions={"learning_rate": LR}, value=4 + i
            )
        )
    set_status(study, "finished")
    return study
