"""Population-based training's rules with plain values: ranges, interval, explore, identity, copies."""

from __future__ import annotations

import pytest

from tuner.policies.population_rules import (
    PopulationError,
    at_sync,
    copy_took_place,
    explore_into,
    first_sync,
    interval,
    keep_identity,
    mutable_ranges,
    plan_population,
)
from tuner.space.params import CategoricalParam, IntParam, LinearParam, LogParam

MUTABLE = {"learning_rate", "l2_penalty", "input_dropout", "output_dropout"}
PARAMS = {
    "learning_rate": LogParam(low=1e-3, high=4e-3, scale="log"),
    "input_dropout": LinearParam(low=0.0, high=0.9),
    "output_dropout": LinearParam(low=0.0, high=0.9, when={"cell": ("lstm",)}),
    "hidden_size": IntParam(low=8, high=64, scale="int"),
    "cell": CategoricalParam(choices=("lstm", "mogrifier_lstm")),
}


def test_only_unconditional_real_ranges_of_mutable_settings_are_explored() -> None:
    ranges = mutable_ranges(PARAMS, MUTABLE)
    assert set(ranges) == {"learning_rate", "input_dropout"}
    assert ranges["learning_rate"].log and not ranges["input_dropout"].log
    assert (ranges["input_dropout"].low, ranges["input_dropout"].high) == (0.0, 0.9)


def test_a_space_without_mutable_settings_is_refused_naming_them() -> None:
    with pytest.raises(PopulationError, match="learning_rate"):
        plan_population("pbt", {"hidden_size": PARAMS["hidden_size"]}, MUTABLE, None, 200, 25)


@pytest.mark.parametrize(
    ("given", "max_steps", "every", "expected"),
    [(None, 200, 25, 25), (None, 4000, 100, 500), (None, 50, 25, 25), (50, 200, 25, 50)],
)
def test_interval_defaults_to_an_eighth_on_the_grid(given, max_steps, every, expected) -> None:
    assert interval(given, max_steps, every) == expected


@pytest.mark.parametrize("given", [30, 200, 0])
def test_interval_off_the_grid_or_too_long_is_refused(given) -> None:
    with pytest.raises(
        PopulationError, match=r"perturbation_interval must be a multiple of eval_every \(25\)"
    ):
        interval(given, 200, 25)


@pytest.mark.parametrize(
    ("starts", "expected"),
    [
        ([], 20),
        ([0, 0, 0], 20),
        ([40, 50, 10], 60),
        ([40, 40], 60),
        ([0, 19], 20),
        ([79], 80),
        ([80, 30], 40),
    ],
)
def test_a_population_first_meets_past_every_members_start(starts, expected) -> None:
    # A member already at max_steps (80) only reports its end: the others still meet.
    assert first_sync(starts, 20, max_steps=80) == expected


@pytest.mark.parametrize(
    ("step", "sync", "expected"),
    [(40, 40, True), (60, 40, True), (30, 40, False), (20, 40, False), (50, 40, False), (40, 60, False)],
)
def test_the_scheduler_acts_only_at_sync_points(step, sync, expected) -> None:
    assert at_sync(step, sync, 20) is expected


def test_explore_puts_a_perturbed_value_back_in_its_range() -> None:
    ranges = mutable_ranges(PARAMS, MUTABLE)
    config = {"trial_number": 3, "trainer": {"learning_rate": 4e-3 * 1.2, "input_dropout": -0.1, "bptt": 32}}
    out = explore_into(config, ranges)
    assert out["trainer"] == {"learning_rate": 4e-3, "input_dropout": 0.0, "bptt": 32}
    assert config["trainer"]["learning_rate"] == 4e-3 * 1.2  # the input is not changed


def test_a_member_keeps_its_identity_when_it_copies_another() -> None:
    own = {"trial_number": 1, "member": 1, "trainer": {"run_dir": "/s/trial-1", "learning_rate": 1e-3}}
    donor = {"trial_number": 4, "member": 4, "trainer": {"run_dir": "/s/trial-4", "learning_rate": 3e-3}}
    out = keep_identity(donor, own)
    assert out["trial_number"] == 1 and out["trainer"]["run_dir"] == "/s/trial-1"
    assert out["trainer"]["learning_rate"] == 3e-3


def test_a_recorded_copy_took_place_only_if_the_folder_holds_it() -> None:
    copy = {"step": 40, "from_trial": 2, "from_value": 3.7, "settings": {}}
    own = "/s/trial-1"
    assert copy_took_place(copy, own, "/s/trial-2", 40)  # the other's last.pt, not trained on yet
    assert copy_took_place(copy, own, own, 50)  # trained past the copy (only after restoring it)
    assert not copy_took_place(copy, own, own, 40)  # stopped before the restart: its own last.pt
    assert not copy_took_place(copy, own, None, None)
    assert copy_took_place({"step": 40, "from_trial": None, "settings": {}}, own, own, 20)
