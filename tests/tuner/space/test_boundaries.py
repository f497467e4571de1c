"""Range-boundary alerts on the best trials' positions in their ranges."""

from __future__ import annotations

import random

from tuner.space.boundaries import crowded_edges

SPACE = {
    "learning_rate": {"scale": "log", "low": 0.001, "high": 0.004},
    "input_dropout": {"scale": "linear", "low": 0.0, "high": 0.9},
    "mogrifier_rounds": {"scale": "int", "low": 0, "high": 6},
    "cell": {"scale": "categorical", "choices": ["lstm", "mogrifier_lstm"]},
}


def _trials(n, lr_fn, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        lr = lr_fn(rng)
        params = {
            "learning_rate": lr,
            "input_dropout": rng.uniform(0, 0.9),
            "mogrifier_rounds": rng.randint(0, 6),
            "cell": "lstm",
        }
        out.append((4.0 + 100 * (lr - 0.001) + rng.uniform(0, 0.01), params))
    return out


def test_best_trials_at_the_low_learning_rate_edge_raise_one_alert():
    # the objective improves as learning_rate falls, and (as a Bayesian optimizer would) the
    # sampling concentrates there: the best trials crowd the low bound.
    alerts = crowded_edges(SPACE, _trials(60, lambda r: 0.001 * 4 ** (r.random() ** 3)))
    assert [(a.param, a.edge, a.bound) for a in alerts] == [("learning_rate", "low", 0.001)]
    assert alerts[0].top == 6 and alerts[0].near >= 3
    assert "learning_rate within 5% of its low bound 0.001" in alerts[0].message


def test_near_is_measured_on_the_log_scale():
    # 0.00106 is 1.5% of the linear width above 0.001 but 4.2% in log space; 0.0011 is 6.9% in log space.
    inside = [(4.0 + i * 0.01, {"learning_rate": 0.00106}) for i in range(3)]
    outside = [(4.0 + i * 0.01, {"learning_rate": 0.0011}) for i in range(3)]
    assert len(crowded_edges({"learning_rate": SPACE["learning_rate"]}, inside)) == 1
    assert crowded_edges({"learning_rate": SPACE["learning_rate"]}, outside) == []


def test_no_alert_for_spread_out_best_trials_or_too_few_trials():
    for seed in range(20):  # objective independent of the other params: no alert for them
        assert crowded_edges(SPACE, _trials(60, lambda r: 0.002, seed=seed)) == []
    assert crowded_edges(SPACE, [(4.0, {"learning_rate": 0.001})] * 2) == []


def test_an_integer_bound_needs_a_wide_range():
    at_max = [(4.0 + i, {"mogrifier_rounds": 6, "mogrifier_rank": 100}) for i in range(5)]
    wide = {**SPACE, "mogrifier_rank": {"scale": "int", "low": -20, "high": 100}}
    assert [(a.param, a.edge) for a in crowded_edges(wide, at_max)] == [("mogrifier_rank", "high")]
