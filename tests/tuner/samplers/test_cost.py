"""Cost-aware search (`tuner.samplers.cost`): the measured cost a trial records, the log-cost GP, and
the sampler that divides expected improvement by expected cost."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from tuner.samplers import make_sampler
from tuner.samplers.cost import COST_ATTR, fit_log_cost, measured_cost, step_cost
from tuner.space import load_space
from tuner.spec.sweep_spec import validate

optuna.logging.set_verbosity(optuna.logging.WARNING)
ROOT = Path(__file__).resolve().parents[3]
STEP_COSTS = ROOT / "bench" / "data" / "tiny_step_costs.json"


def test_a_report_gives_seconds_per_step_when_it_moved():
    assert step_cost({"elapsed_s": 3.0, "step": 100}, None) == 0.03
    assert step_cost({"elapsed_s": 3.1, "step": 100}, 0.03) is None  # within 5%: nothing to write
    assert step_cost({"elapsed_s": 4.0, "step": 100}, 0.03) == 0.04
    for result in ({}, {"elapsed_s": 1.0}, {"elapsed_s": 1.0, "step": 0}, {"elapsed_s": math.nan, "step": 5}):
        assert step_cost(result, None) is None


def test_only_positive_finite_costs_are_measured():
    def trial(value):
        return create_trial(value=1.0, user_attrs={} if value is None else {COST_ATTR: value})

    assert [measured_cost(trial(v)) for v in (0.5, 0, -1, "x", math.inf, None)] == [
        0.5,
        None,
        None,
        None,
        None,
        None,
    ]


def test_cost_aware_is_refused_for_samplers_without_a_cost_model():
    with pytest.raises(ValueError, match="cannot be cost-aware; choose one of: gp_fidelity"):
        make_sampler("tpe", cost_aware=True)
    with pytest.raises(Exception, match="cost_aware: Value error, only with sampler gp_fidelity, not 'tpe'"):
        validate({"sampler": "tpe", "cost_aware": True})


def test_the_log_cost_gp_needs_a_few_distinct_costs():
    x = np.array([[0.1], [0.5], [0.9]])
    assert fit_log_cost(x[:2], [1.0, 2.0], np.array([False])) is None
    assert fit_log_cost(x, [1.0, 1.0, 1.0], np.array([False])) is None
    model = fit_log_cost(x, [1.0, 2.0, 4.0], np.array([False]))
    assert model is not None and model.n == 3
    cheap, dear = model.seconds_per_step(np.array([[0.1], [0.9]]))
    assert cheap < 2.0 < dear


def _study_with(costs, values, xs) -> optuna.Study:
    study = optuna.create_study()
    dist = {"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)}
    for (x, y), cost, value in zip(xs, costs, values):
        study.add_trial(
            create_trial(
                params={"x": x, "y": y}, distributions=dist, value=value, user_attrs={COST_ATTR: cost}
            )
        )
    return study


def _next_points(cost_aware: bool, n: int = 6) -> np.ndarray:
    """Points the sampler asks for next on a task whose value does not depend on `x` but whose cost
    grows 20-fold along it (and counts the trials in flight: each stays RUNNING with its cost)."""
    rng = np.random.default_rng(3)
    xs = rng.uniform(size=(12, 2))
    study = _study_with(np.exp(3 * xs[:, 0]), (xs[:, 1] - 0.5) ** 2 + rng.normal(0, 0.01, 12), xs)
    study.sampler = make_sampler("gp_fidelity", seed=1, cost_aware=cost_aware, n_startup_trials=5)
    dist = {"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)}
    asked = []
    for _ in range(n):
        trial = study.ask(dist)
        trial.set_user_attr(COST_ATTR, float(np.exp(3 * trial.params["x"])))
        asked.append([trial.params["x"], trial.params["y"]])
    return np.array(asked)


def test_cost_aware_search_asks_for_cheaper_points_where_improvement_is_alike():
    plain, costed = _next_points(False), _next_points(True)
    assert costed[:, 0].mean() < 0.25 < plain[:, 0].mean()
    assert np.abs(costed[:, 1] - 0.5).mean() < 0.25  # still where the value is good


def test_the_cost_model_ranks_six_rounds_full_rank_costlier_than_zero_rounds():
    """On seconds per step measured with the trainer at the tiny space's sizes (bench/step_costs.py):
    after 8 trials of the tiny space, the default sampler's cost model expects a 6-round, full-rank
    Mogrifier to cost more per step than one with 0 rounds."""
    recorded = json.loads(STEP_COSTS.read_text())["configs"]
    space = load_space("tiny")
    study = optuna.create_study()
    for config in recorded[:8]:
        study.enqueue_trial(config["params"])
        trial = study.ask()
        space.suggest(trial)  # the space's own distributions, conditional ones included
        trial.set_user_attr(COST_ATTR, config["train_step_s"])
        study.tell(trial, 4.0 + 0.1 * config["params"]["input_dropout"])
    assert {c["params"]["mogrifier_rounds"] for c in recorded[:8]} >= {0}  # a 0-round one among them
    base = {k: v for k, v in recorded[0]["params"].items() if k not in ("mogrifier_rounds", "mogrifier_rank")}
    sampler = make_sampler("gp_fidelity", seed=0)  # the default: it learns the cost model too
    cheap, dear = sampler.expected_cost(
        study, [{**base, "mogrifier_rounds": 0}, {**base, "mogrifier_rounds": 6, "mogrifier_rank": 100}]
    )
    assert dear > 1.3 * cheap, (cheap, dear)
