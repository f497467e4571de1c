"""`bench.bounded`: its sizes are the trainer's (what a sweep checks the bound against), and a run
tells each setting past the bound as its arm says."""

from __future__ import annotations

import numpy as np

from bench import bounded
from trainer import make_config, model_size


def test_the_task_sizes_models_as_the_trainer_does() -> None:
    task = bounded.task()
    rng = np.random.default_rng(0)
    for _ in range(3):
        params = task.sur._random_params(rng)
        assert task.size(params) == model_size(make_config(task.config(params)))


def test_a_run_records_which_suggestions_broke_the_bound() -> None:
    told = bounded.run(("optuna_tpe", "told", 0, 12, bounded.BOUND))
    failed = bounded.run(("optuna_tpe", "fail", 0, 12, bounded.BOUND))
    assert len(told["broke"]) == len(failed["broke"]) == 12
    # The random start is the same draw in both arms: only what is told differs.
    assert told["broke"][: bounded.STARTUP] == failed["broke"][: bounded.STARTUP]
    assert any(told["broke"]) and not all(told["broke"]) and np.isfinite(told["best"])
