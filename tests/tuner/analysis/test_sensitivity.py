"""The sensitivity neighbourhood is the thesis' window (Appendix 2.B): 15% of each range in all."""

from __future__ import annotations

import itertools
import math

from tuner.analysis import sensitivity
from tuner.analysis.records import ParamSpec, TrialRecord

SPECS = {
    "learning_rate": ParamSpec("learning_rate", "float", 1e-4, 1e-2, log=True),
    "input_dropout": ParamSpec("input_dropout", "float", 0.0, 0.8),
    "mogrifier_rounds": ParamSpec("mogrifier_rounds", "int", 0.0, 20.0),
    "cell": ParamSpec("cell", "categorical", choices=("lstm", "mogrifier_lstm")),
}
BEST = {"learning_rate": 1e-3, "input_dropout": 0.4, "mogrifier_rounds": 10, "cell": "mogrifier_lstm"}
# Offsets from the best as a share of each range, on the search's axis (log for the learning rate):
# inside 7.5%, just outside it, and the 15% a window of 15% either side would still keep.
SHARES = (0.0, 0.05, -0.074, 0.076, 0.149)


def record(number: int, params: dict, value: float) -> TrialRecord:
    return TrialRecord(number, number, "COMPLETE", value, params, SPECS, (), {}, None, None)


def moved(name: str, share: float) -> float:
    """BEST's `name` moved by `share` of its range on the search's axis."""
    spec = SPECS[name]
    assert spec.low is not None and spec.high is not None
    if spec.log:
        return math.exp(math.log(BEST[name]) + share * (math.log(spec.high) - math.log(spec.low)))
    return BEST[name] + share * (spec.high - spec.low)


def test_the_default_window_is_the_thesis_fifteen_percent_in_all():
    assert sensitivity.DEFAULT_FRACTION == 0.075


def test_the_neighbourhood_is_exactly_the_trials_within_7_5_percent_of_every_range():
    """Every combination of offsets on the three numeric parameters (rounds moved by whole steps of
    the 0..20 range: 1 = 5%, 2 = 10%) and both cells; expected membership computed from the shares."""
    best = record(0, BEST, 4.0)
    trials, expected = [best], set()
    rounds_moves = (0, 1, -1, 2)  # 0%, 5%, 5%, 10% of the range
    grid = itertools.product(SHARES, SHARES, rounds_moves, ("mogrifier_lstm", "lstm"))
    for number, (lr_share, dropout_share, rounds_move, cell) in enumerate(grid, start=1):
        params = {
            "learning_rate": moved("learning_rate", lr_share),
            "input_dropout": moved("input_dropout", dropout_share),
            "mogrifier_rounds": BEST["mogrifier_rounds"] + rounds_move,
            "cell": cell,
        }
        trials.append(record(number, params, 4.0 + number / 1000))
        shares = (abs(lr_share), abs(dropout_share), abs(rounds_move) / 20)
        if all(s <= 0.075 for s in shares) and cell == BEST["cell"]:
            expected.add(number)
    got = {t.number for t in sensitivity.neighbourhood(best, trials, sensitivity.DEFAULT_FRACTION)}
    assert got == expected
    assert len(expected) == 3 * 3 * 3  # 3 inside shares per float parameter, 3 rounds moves
    wider = {t.number for t in sensitivity.neighbourhood(best, trials, 2 * sensitivity.DEFAULT_FRACTION)}
    assert wider > got  # a 15%-either-side window (the old default) keeps more


def test_a_trial_lacking_a_parameter_of_the_best_is_outside():
    best = record(0, BEST, 4.0)
    other = record(1, {k: v for k, v in BEST.items() if k != "mogrifier_rounds"}, 4.1)
    assert sensitivity.neighbourhood(best, [best, other], sensitivity.DEFAULT_FRACTION) == []


def test_a_window_at_an_edge_shifts_inside_the_range_and_keeps_its_width():
    """Appendix 2.B's window is 15% of the range wherever the best lies: near an edge it is not
    clipped to 7.5% + the distance to the edge but shifted inside, 15% wide."""
    edge = record(0, {**BEST, "input_dropout": 0.02, "learning_rate": 1e-2}, 4.0)
    bounds = sensitivity.windows(edge, sensitivity.DEFAULT_FRACTION)
    dropout = bounds["input_dropout"]
    assert dropout.low == 0.0 and math.isclose(dropout.high, 0.15 * 0.8)
    assert math.isclose(dropout.scaled_high - dropout.scaled_low, 0.12)
    lr = bounds["learning_rate"]  # at the top of a log range: the window ends there, 15% wide on the log axis
    assert math.isclose(lr.high, 1e-2) and math.isclose(
        lr.low, math.exp(math.log(1e-2) - 0.15 * math.log(100))
    )
    near = {
        **edge.params,
        "input_dropout": 0.11,
        "learning_rate": math.exp(math.log(1e-2) - 0.14 * math.log(100)),
    }
    far = {**near, "input_dropout": 0.13}
    got = sensitivity.neighbourhood(edge, [edge, record(1, near, 4.1), record(2, far, 4.2)], 0.075)
    assert [t.number for t in got] == [1]  # 0.11 is inside the shifted window [0, 0.12], 0.13 is not
    middle = sensitivity.windows(record(0, BEST, 4.0), 0.075)["input_dropout"]
    assert math.isclose(middle.low, 0.4 - 0.06) and math.isclose(middle.high, 0.4 + 0.06)  # centred
