"""The Appendix 2.B analysis on records read from real SQLite studies: importances find the one
hyperparameter that matters; conditional hyperparameters and categorical ones in the neighbourhood."""

from __future__ import annotations

import math
import random

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState

from tests.tuner.api.fixtures import make_study
from tuner.api import sensitivity
from tuner.api.reads import StudyStore


def _completed(db_url: str, name: str):
    store = StudyStore(db_url)
    snapshot = store.snapshot(store.row(name))
    return [t for t in snapshot.ordered("COMPLETE", "objective") if t.completed]


def test_importances_single_out_the_hyperparameter_that_matters(tmp_path):
    rng = random.Random(0)
    trials = []
    for _ in range(60):
        params = {"learning_rate": math.exp(rng.uniform(math.log(0.001), math.log(0.004))),
                  "input_dropout": rng.uniform(0.0, 0.9), "mogrifier_rounds": rng.randint(0, 10)}
        trials.append((params, TrialState.COMPLETE, 4 + 10 * math.log(params["learning_rate"] / 0.002) ** 2))
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db_url, "lr", tmp_path, trials=trials)
    weights, note = sensitivity.importances(_completed(db_url, "lr"), "minimize")
    assert note is None and weights["learning_rate"] > 0.8
    assert weights["learning_rate"] == max(weights.values())


def test_conditional_and_categorical_hyperparameters(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(study_name="cond", storage=db_url)
    cell = CategoricalDistribution(["lstm", "mogrifier_lstm"])
    rounds = optuna.distributions.IntDistribution(0, 6)
    rate = FloatDistribution(0.001, 0.004, log=True)
    rows = [
        ({"cell": "mogrifier_lstm", "mogrifier_rounds": 3, "learning_rate": 0.002}, 4.0),  # best
        ({"cell": "mogrifier_lstm", "mogrifier_rounds": 3, "learning_rate": 0.0021}, 4.1),  # in
        ({"cell": "lstm", "learning_rate": 0.002}, 4.2),  # other cell, no rounds: out
        ({"cell": "mogrifier_lstm", "mogrifier_rounds": 5, "learning_rate": 0.002}, 4.3),  # 2 > 0.15 * 6: out
    ]
    for params, value in rows:
        dists = {"cell": cell, "learning_rate": rate, **({"mogrifier_rounds": rounds} if "mogrifier_rounds" in params else {})}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
    result = sensitivity.analyse(_completed(db_url, "cond"), "minimize")
    assert [n["number"] for n in result["neighbours"]] == [1]
    assert result["windows"]["cell"]["window_low"] == "mogrifier_lstm"
    assert result["importances"] is not None and set(result["importances"]) >= {"learning_rate"}
    assert sensitivity.analyse([], "minimize") is None
    few = sensitivity.importances(_completed(db_url, "cond")[:3], "minimize")
    assert few[0] is None and "at least 4" in few[1]
