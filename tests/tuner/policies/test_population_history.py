"""A member's `pbt_history` with plain values: segments merged whatever order Ray delivers the
events in, the settings and params in force, and a stored history read with care."""

from __future__ import annotations

import pytest

from tuner.policies.population_history import (
    HistoryError,
    add_segment,
    copy_segment,
    history_problem,
    params_in_force,
    parse_history,
    settings_in_force,
)

OWN = {"learning_rate": 1e-3}
OTHER = {"learning_rate": 2e-3}


def _copy(step: int, settings: dict, **params) -> dict:
    return {"step": step, "from_trial": 0, "from_value": 4.5, "settings": settings, "params": params}


def test_history_records_starts_copies_and_changes_only() -> None:
    first = add_segment(None, {"step": 0, "settings": OWN})
    assert first == [{"step": 0, "from_trial": None, "from_value": None, "settings": OWN}]
    # A restart from its own checkpoint with the same settings (synchronous PBT pauses everyone).
    assert add_segment(first, {"step": 50, "settings": OWN}) is None
    copied = add_segment(first, {"step": 50, "from_trial": 4, "from_value": 5.25, "settings": OTHER})
    assert copied is not None and copied[-1]["from_trial"] == 4 and copied[-1]["from_value"] == 5.25
    assert settings_in_force(copied) == OTHER
    # The same copy told twice replaces, never repeats.
    again = add_segment(copied, {"step": 50, "from_trial": 4, "from_value": 5.25, "settings": OTHER})
    assert again == copied
    # The member's restart after the copy, with the copy's settings, confirms it: nothing to add.
    assert add_segment(copied, {"step": 50, "settings": OTHER}) is None
    assert settings_in_force(None) == {}


def test_a_copy_heard_before_the_members_first_start_is_kept() -> None:
    """Today's losing order, as Ray delivers it: the scheduler decides the copy on the member's
    first result (at step 25) before the callbacks forward that result, which carries the
    member's step-0 start; then the member restarts at 25 with the copy's settings."""
    history = add_segment(None, _copy(25, OTHER, learning_rate=2e-3, hidden_size=64))
    history = add_segment(history, {"step": 0, "settings": OWN})
    assert history is not None
    assert [(s["step"], s["from_trial"]) for s in history] == [(0, None), (25, 0)]
    assert add_segment(history, {"step": 25, "settings": OTHER}) is None
    assert settings_in_force(history) == {"learning_rate": 2e-3, "hidden_size": 64}


def test_a_start_corrects_the_settings_of_the_copy_at_its_step_and_keeps_the_source() -> None:
    history = add_segment(
        [{"step": 0, "from_trial": None, "from_value": None, "settings": OWN}], _copy(25, OTHER)
    )
    corrected = add_segment(history, {"step": 25, "settings": {"learning_rate": 3e-3}})
    assert corrected is not None and corrected[-1]["from_trial"] == 0
    assert corrected[-1]["settings"] == {"learning_rate": 3e-3}


def test_a_start_names_the_model_its_trainer_built_where_the_record_says_otherwise() -> None:
    """The folder decides a member's model (member.py): a start whose params differ from those in
    force (a copy recorded with a shape its checkpoint did not hold, a retry whose folder holds
    another model) stores them, and the params in force follow; a start with the model in force
    adds nothing, its mutable settings aside."""
    initial = {"learning_rate": 1e-3, "mogrifier_rank": 40}
    first = add_segment(None, {"step": 0, "settings": OWN, "params": initial}, initial)
    assert first == [{"step": 0, "from_trial": None, "from_value": None, "settings": OWN}]
    copied = add_segment(first, _copy(20, OTHER, learning_rate=2e-3, mogrifier_rank=15), initial)
    assert params_in_force(initial, copied) == {"learning_rate": 2e-3, "mogrifier_rank": 15}
    # A start at the copy's step with the model the trainer really built corrects the copy's.
    built = {"learning_rate": 2e-3, "mogrifier_rank": 40}
    at_copy = add_segment(copied, {"step": 20, "settings": OTHER, "params": built}, initial)
    assert at_copy is not None and at_copy[-1]["from_trial"] == 0
    assert params_in_force(initial, at_copy) == built
    # A later start (a retry from the folder) with another model than the record stores it.
    later = add_segment(copied, {"step": 40, "settings": OTHER, "params": built}, initial)
    assert later is not None and later[-1] == {
        "step": 40,
        "from_trial": None,
        "from_value": None,
        "settings": OTHER,
        "params": built,
    }
    assert params_in_force(initial, later) == built and settings_in_force(later)["mogrifier_rank"] == 40
    # The model in force again, with other mutable settings only: a settings change, no params.
    same = add_segment(
        later, {"step": 60, "settings": {"learning_rate": 4e-3}, "params": {**built, "learning_rate": 4e-3}}
    )
    assert same is not None and "params" not in same[-1]
    assert params_in_force(initial, same) == {"learning_rate": 4e-3, "mogrifier_rank": 40}
    # A restart with the model and the settings in force adds nothing.
    assert add_segment(same, {"step": 80, "settings": {"learning_rate": 4e-3}, "params": built}) is None


def test_a_copy_replaces_the_starts_of_a_run_it_rolled_back() -> None:
    history = [
        {"step": 0, "from_trial": None, "from_value": None, "settings": OWN},
        {"step": 50, "from_trial": None, "from_value": None, "settings": OTHER},
    ]
    merged = add_segment(history, _copy(50, {"learning_rate": 3e-3}))
    assert merged is not None and [s["from_trial"] for s in merged] == [None, 0]


def test_a_copy_segment_holds_the_sources_shape_and_the_mutable_settings() -> None:
    trainer = {"learning_rate": 3e-3, "hidden_size": 64, "cell": "lstm", "run_dir": "/s/1", "seed": 3}
    segment = copy_segment(
        40, 2, 4.1, trainer, ["learning_rate", "l2_penalty"], ["learning_rate", "hidden_size", "cell"]
    )
    assert segment == {
        "step": 40,
        "from_trial": 2,
        "from_value": 4.1,
        "settings": {"learning_rate": 3e-3},
        "params": {"learning_rate": 3e-3, "hidden_size": 64, "cell": "lstm"},
    }


def test_the_params_in_force_follow_the_last_copy_and_the_last_settings() -> None:
    initial = {"learning_rate": 1e-3, "hidden_size": 8, "cell": "lstm"}
    history = [
        {"step": 0, "from_trial": None, "from_value": None, "settings": OWN},
        _copy(20, OTHER, learning_rate=2e-3, hidden_size=64, cell="mogrifier_lstm"),
        {"step": 40, "from_trial": None, "from_value": None, "settings": {"learning_rate": 5e-3}},
    ]
    assert params_in_force(initial, history) == {
        "learning_rate": 5e-3,
        "hidden_size": 64,
        "cell": "mogrifier_lstm",
    }
    assert params_in_force(initial, history[:1]) == {**initial, **OWN}
    assert params_in_force(initial, None) == initial
    assert params_in_force(initial, "not a history") == initial  # malformed: history_problem says so


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ({"step": 0}, "not a list"),
        ([{"step": {"a": 1}, "settings": {}}], r"pbt_history\[0\].step"),
        ([{"settings": {}}], r"pbt_history\[0\].step"),
        ([{"step": 0, "settings": 3}], r"pbt_history\[0\].settings"),
        ([{"step": 0, "settings": {"learning_rate": "fast"}}], r"pbt_history\[0\].settings"),
        ([{"step": 0, "settings": {}, "from_trial": True}], r"pbt_history\[0\].from_trial"),
        ([{"step": 0, "settings": {}}, {"step": 0, "settings": {}}], r"pbt_history\[1\]: step 0"),
        ([{"step": 0, "settings": {}, "params": [1]}], r"pbt_history\[0\].params"),
        (["segment"], r"pbt_history\[0\] is not an object"),
    ],
)
def test_a_malformed_stored_history_is_named(stored, named) -> None:
    with pytest.raises(HistoryError, match=named):
        parse_history(stored)
    assert history_problem(stored) is not None


def test_a_long_well_formed_history_is_read() -> None:
    stored = [
        {"step": i, "from_trial": None, "from_value": None, "settings": {"lr": 1.0}} for i in range(5000)
    ]
    assert parse_history(stored) == stored and history_problem(stored) is None and parse_history(None) is None
