"""A study in the shape ASHA leaves: most trials PRUNED at a rung, each with the validation losses it
reported up to there, and a few COMPLETE; only the learning rate drives the objective."""

from __future__ import annotations

import math
import random

import optuna
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

SPACE = {
    "learning_rate": FloatDistribution(0.001, 0.004, log=True),
    "input_dropout": FloatDistribution(0.0, 0.9),
    "mogrifier_rounds": IntDistribution(0, 10),
}
STEPS = (50, 100, 150, 200)
BEST_PARAMS = {"learning_rate": 0.002, "input_dropout": 0.45, "mogrifier_rounds": 3}


def final_value(params: dict) -> float:
    """The objective: only the learning rate matters."""
    return 4.0 + 10 * math.log(params["learning_rate"] / 0.002) ** 2


def _curve(params: dict, last: int) -> dict[int, float]:
    return {s: final_value(params) + 100.0 / s for s in STEPS if s <= last}


def asha_study(db_url: str, name: str, seed: int = 0, n: int = 60) -> None:
    """`n` trials in ASHA's shape: the worst two thirds stopped at step 50, the next two thirds of
    the rest at 100, the others COMPLETE at 200 (objective = their best value). Trial 0 is the best;
    trial 1, PRUNED at 50 right beside it, reported a value lower than any objective (a noisy
    evaluation), which must not make it the centre of the neighbourhood."""
    rng = random.Random(seed)
    rows = [dict(BEST_PARAMS)]
    rows.append({"learning_rate": 0.00205, "input_dropout": 0.46, "mogrifier_rounds": 3})
    for _ in range(n - 2):
        rows.append(
            {
                "learning_rate": math.exp(rng.uniform(math.log(0.001), math.log(0.004))),
                "input_dropout": rng.uniform(0.0, 0.9),
                "mogrifier_rounds": rng.randint(0, 10),
            }
        )
    order = sorted(range(2, n), key=lambda i: final_value(rows[i]))
    complete = {0, *order[: n // 10 - 1]}
    at_100 = set(order[n // 10 - 1 : n // 3])
    study = optuna.create_study(study_name=name, storage=db_url, direction="minimize")
    trials = []
    for i, params in enumerate(rows):
        if i in complete:
            curve = _curve(params, 200)
            trials.append(
                create_trial(
                    state=TrialState.COMPLETE,
                    params=params,
                    distributions=SPACE,
                    value=min(curve.values()),
                    intermediate_values=curve,
                )
            )
        else:
            curve = {50: 1.0} if i == 1 else _curve(params, 100 if i in at_100 else 50)
            trials.append(
                create_trial(
                    state=TrialState.PRUNED, params=params, distributions=SPACE, intermediate_values=curve
                )
            )
    study.add_trials(trials)
