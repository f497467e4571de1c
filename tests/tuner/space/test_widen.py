"""Widening one range of a space: half the span on the parameter's scale, clipped to the trainer."""

from __future__ import annotations

import math

import pytest

from trainer import make_config
from tuner.space import SearchSpace, SpaceError, load_space
from tuner.space.widen import trainer_limits, widen

FIXED = {"cell": "mogrifier_lstm", "dataset": "builtin", "device": "cpu"}


def _space(**params) -> SearchSpace:
    return SearchSpace.from_dict({"name": "w", "fixed": FIXED, "params": params})


def test_log_range_widens_by_half_its_log_span():
    space = load_space("tiny")  # learning_rate [0.001, 0.004], log
    low, change = widen(space, "learning_rate", "low")
    assert change["old"] == [0.001, 0.004] and change["new"] == [0.0005, 0.004]
    assert low.params["learning_rate"].low == pytest.approx(0.001 / math.sqrt(4))
    high, change = widen(space, "learning_rate", "high")
    assert high.params["learning_rate"].high == pytest.approx(0.008)
    both, change = widen(space, "learning_rate", "both")
    assert change["new"] == [0.0005, 0.008] and change["edge"] == "both"
    # the other parameters and the fixed settings are untouched
    assert {k: v for k, v in both.to_dict()["params"].items() if k != "learning_rate"} == {
        k: v for k, v in space.to_dict()["params"].items() if k != "learning_rate"
    }
    assert both.fixed == space.fixed


def test_linear_range_widens_by_half_its_span():
    space = _space(input_embedding_ratio={"low": 0.5, "high": 1.5})
    _, change = widen(space, "input_embedding_ratio", "both")
    assert change["new"] == [0.0, 2.0]  # 0.5 - 0.5 and 1.5 + 0.5


def test_integer_range_widens_by_a_whole_half_span():
    space = _space(mogrifier_rank={"low": -20, "high": 100, "scale": "int"})
    widened, change = widen(space, "mogrifier_rank", "both")
    assert change["new"] == [-80, 160]
    assert isinstance(widened.params["mogrifier_rank"].low, int)
    odd = _space(mogrifier_rounds={"low": 1, "high": 4, "scale": "int"})
    assert widen(odd, "mogrifier_rounds", "high")[1]["new"] == [1, 6]  # ceil(3 / 2) = 2


def test_edges_stop_at_the_trainers_limits():
    # dropouts must stay below 1 (an exclusive limit): the edge stays 1% of the old span inside it
    space = load_space("tiny")  # input_dropout [0, 0.9]
    widened, change = widen(space, "input_dropout", "high")
    assert change["new"] == [0.0, pytest.approx(1 - 0.01 * 0.9)]
    make_config({"input_dropout": widened.params["input_dropout"].high})
    # mogrifier_rounds <= 12 (inclusive): 4..10 widens to 4..12, not 4..13
    rounds = _space(mogrifier_rounds={"low": 4, "high": 10, "scale": "int"})
    assert widen(rounds, "mogrifier_rounds", "high")[1]["new"] == [4, 12]
    # learning_rate > 0 never binds on a log scale; <= 1 does
    lr = _space(learning_rate={"low": 0.01, "high": 0.5, "scale": "log"})
    assert widen(lr, "learning_rate", "high")[1]["new"] == [0.01, 1.0]
    assert trainer_limits("learning_rate") == ((0.0, False), (1.0, True))


def test_an_edge_at_the_trainers_limit_is_refused_or_kept_with_both():
    space = load_space("tiny")  # input_dropout starts at 0, the trainer's lower limit
    with pytest.raises(SpaceError, match=r"input_dropout: its low bound 0 is already at the trainer's limit"):
        widen(space, "input_dropout", "low")
    _, change = widen(space, "input_dropout", "both")  # the high edge moves, the low one stays
    assert change["new"][0] == 0.0 and change["new"][1] > 0.9
    stuck = _space(mogrifier_rounds={"low": 0, "high": 12, "scale": "int"})
    with pytest.raises(SpaceError, match="both bounds of"):
        widen(stuck, "mogrifier_rounds", "both")


def test_conditions_listing_the_old_edge_gain_the_new_values():
    space = _space(
        mogrifier_rounds={"low": 0, "high": 6, "scale": "int"},
        mogrifier_rank={
            "low": -20,
            "high": 100,
            "scale": "int",
            "when": {"mogrifier_rounds": [1, 2, 3, 4, 5, 6]},
        },
    )
    widened, change = widen(space, "mogrifier_rounds", "high")
    assert change["new"] == [0, 9]
    assert widened.params["mogrifier_rank"].when == {"mogrifier_rounds": (1, 2, 3, 4, 5, 6, 7, 8, 9)}
    # a list without the old edge (rank only at 2 rounds) is a choice the user made: kept as is
    narrow = _space(
        mogrifier_rounds={"low": 0, "high": 6, "scale": "int"},
        mogrifier_rank={"low": -20, "high": 100, "scale": "int", "when": {"mogrifier_rounds": [2]}},
    )
    assert widen(narrow, "mogrifier_rounds", "high")[0].params["mogrifier_rank"].when == {
        "mogrifier_rounds": (2,)
    }


def test_errors_name_the_parameter():
    space = load_space("tiny")
    with pytest.raises(
        SpaceError, match="parameter hidden_size: not tuned by space tiny; tuned: learning_rate"
    ):
        widen(space, "hidden_size", "high")
    cat = SearchSpace.from_dict({"name": "c", "params": {"cell": {"choices": ["lstm", "mogrifier_lstm"]}}})
    with pytest.raises(SpaceError, match=r"parameter cell: categorical \(choices \{lstm, mogrifier_lstm\}\)"):
        widen(cat, "cell", "high")
    with pytest.raises(
        SpaceError, match="parameter learning_rate: edge must be one of low, high, both, not 'up'"
    ):
        widen(space, "learning_rate", "up")


def test_the_shipped_rank_condition_follows_the_widened_rounds():
    widened, change = widen(load_space("tiny"), "mogrifier_rounds", "high")
    assert change["new"] == [0, 9]
    assert widened.params["mogrifier_rank"].when == {
        "cell": ("mogrifier_lstm",),
        "mogrifier_rounds": (1, 2, 3, 4, 5, 6, 7, 8, 9),
    }
