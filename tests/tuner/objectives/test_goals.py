"""Objectives and constraints parsed from the spec's strings and applied to plain measures."""

from __future__ import annotations

import math

import pytest

from tuner.errors import InvalidInput
from tuner.objectives.goals import Constraint, Goals, Objective
from tuner.spec.sweep_spec import validate


def test_objectives_take_each_measures_better_direction_unless_given():
    goals = Goals.parse(["val_loss", "num_params", "tokens_per_s", "wall_time:maximize"])
    assert goals.directions == ["minimize", "minimize", "maximize", "maximize"]
    assert goals.several and not Goals.parse().several
    assert Objective.parse(" peak_memory ") == Objective("peak_memory", "minimize")


@pytest.mark.parametrize(
    ("objectives", "says"),
    [
        (["num_params"], "first objective must be val_loss"),
        (["val_loss:maximize"], "first objective must be val_loss"),
        (["val_loss", "speed"], "unknown measure 'speed'"),
        (["val_loss", "num_params", "num_params"], "each measure at most once"),
        (["val_loss", "num_params:up"], "minimize or maximize"),
    ],
)
def test_bad_objectives_are_refused_saying_why(objectives, says):
    with pytest.raises(ValueError, match=says):
        Goals.parse(objectives)


@pytest.mark.parametrize(
    ("text", "name", "op", "bound"),
    [
        ("num_params<=24e6", "num_params", "<=", 24e6),
        ("num_params <= 24M", "num_params", "<=", 24e6),
        ("peak_memory<=10GiB", "peak_memory", "<=", 10 * 2**30),
        ("tokens_per_s>=1.5k", "tokens_per_s", ">=", 1500.0),
    ],
)
def test_constraints_parse_with_units_and_print_exactly(text, name, op, bound):
    parsed = Constraint.parse(text)
    assert (parsed.name, parsed.op, parsed.bound) == (name, op, bound)
    assert Constraint.parse(str(parsed)) == parsed  # the stored form reads back exactly


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("num_params<24", "NAME<=BOUND"),
        ("size<=3", "unknown measure 'size'"),
        ("num_params<=3Q", "unknown unit 'Q'"),
        ("num_params<=1e999", "finite"),
        ("num_params<=1.2.3", "not a number"),
    ],
)
def test_bad_constraints_are_refused_saying_why(text, says):
    with pytest.raises(ValueError, match=says):
        Constraint.parse(text)


def test_values_excesses_and_the_check_before_training():
    goals = Goals.parse(["val_loss", "num_params", "tokens_per_s"], ["num_params<=100", "tokens_per_s>=50"])
    measures = {"val_loss": 4.0, "num_params": 150.0, "tokens_per_s": 60.0}
    assert goals.values(measures) == [4.0, 150.0, 60.0]
    assert goals.values({**measures, "val_loss": math.nan}) is None
    assert goals.values({"val_loss": 4.0}) is None
    assert goals.excesses(measures) == {"num_params<=100": 50.0, "tokens_per_s>=50": -10.0}
    assert goals.excesses({"num_params": 80.0}) == {"num_params<=100": -20.0}  # throughput not yet known
    assert goals.violated_before_training(measures) == ["num_params=150 (bound num_params<=100)"]
    assert (
        goals.violated_before_training({"num_params": 100.0, "tokens_per_s": 1.0}) == []
    )  # speed: only after
    assert goals.minimised([4.0, 150.0, 60.0]) == [4.0, 150.0, -60.0]


def test_the_spec_takes_comma_separated_strings_or_lists_and_stores_lists():
    spec = validate({"space": "tiny", "objectives": "val_loss, num_params", "constraints": "num_params<=24M"})
    assert spec.objectives == ["val_loss", "num_params"] and spec.constraints == ["num_params<=24000000"]
    same = validate(
        {"space": "tiny", "objectives": ["val_loss", "num_params"], "constraints": ["num_params<=24e6"]}
    )
    assert same.stored() == spec.stored()
    assert (
        validate({"space": "tiny"}).objectives == ["val_loss"]
        and not validate({"space": "tiny"}).goals().several
    )
    with pytest.raises(InvalidInput, match=r"^objectives: .*unknown measure 'speed'"):
        validate({"space": "tiny", "objectives": "val_loss,speed"})
    with pytest.raises(InvalidInput, match=r"^constraints: "):
        validate({"space": "tiny", "constraints": "num_params=3"})


def test_cost_aware_search_is_refused_with_several_objectives():
    with pytest.raises(InvalidInput, match=r"^cost_aware: .*only with one objective"):
        validate({"space": "tiny", "objectives": "val_loss,num_params", "cost_aware": True})
