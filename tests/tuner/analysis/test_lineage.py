"""A population read back with plain values (tuner.analysis.lineage): a member's lineage through
the checkpoints it copied (a copy of a copy, a retried member, a copy of a failed attempt), the
trainer config that replays it, and the members' view."""

from __future__ import annotations

import pytest

from trainer import make_config
from tuner.analysis.lineage import histories, lineage, members, population_spec, replay_config
from tuner.analysis.records import TrialRecord
from tuner.spec.sweep_spec import validate


def seg(step: int, lr: float, drop: float = 0.1, source: int | None = None) -> dict:
    return {
        "step": step,
        "from_trial": source,
        "from_value": None if source is None else 5.0 - step / 1000,
        "settings": {"learning_rate": lr, "input_dropout": drop},
    }


def at(step: int, lr: float, drop: float, trial: int) -> dict:
    return {"step": step, "settings": {"learning_rate": lr, "input_dropout": drop}, "trial": trial}


# #1 copies #0 at 100; #2 copies #1 at 200 (a copy of a copy); #3 copies #0 at 100 and FAILs,
# retried as #4 with its history, which then copies #2 at 300; #5 copies the failed attempt #3 at
# 200 keeping its settings (merged into #3's entry); #0 restarts at 300 with unchanged settings.
HISTORIES = {
    0: [seg(0, 0.002), seg(300, 0.002)],
    1: [seg(0, 0.003), seg(100, 0.0024, 0.2, source=0)],
    2: [seg(0, 0.001), seg(200, 0.0019, 0.25, source=1)],
    3: [seg(0, 0.004), seg(100, 0.0016, 0.05, source=0)],
    4: [seg(0, 0.004), seg(100, 0.0016, 0.05, source=0), seg(300, 0.0023, 0.3, source=2)],
    5: [seg(0, 0.0035), seg(200, 0.0016, 0.05, source=3)],
}


def test_a_member_that_never_copied_has_its_own_settings_merged():
    assert lineage(HISTORIES, 0) == [at(0, 0.002, 0.1, 0)]


def test_a_copy_brings_the_sources_settings_before_its_step():
    assert lineage(HISTORIES, 1) == [at(0, 0.002, 0.1, 0), at(100, 0.0024, 0.2, 1)]


def test_a_copy_of_a_copy_follows_both():
    assert lineage(HISTORIES, 2) == [at(0, 0.002, 0.1, 0), at(100, 0.0024, 0.2, 1), at(200, 0.0019, 0.25, 2)]


def test_a_retried_member_continues_its_copied_history():
    assert lineage(HISTORIES, 4) == [
        at(0, 0.002, 0.1, 0),
        at(100, 0.0024, 0.2, 1),
        at(200, 0.0019, 0.25, 2),
        at(300, 0.0023, 0.3, 4),
    ]


def test_a_copy_of_a_failed_attempt_with_its_settings_is_merged():
    assert lineage(HISTORIES, 5) == [at(0, 0.002, 0.1, 0), at(100, 0.0016, 0.05, 3)]


def test_final_step_leaves_out_what_came_from_it_on():
    # below 300 the retry holds its failed attempt's history: #0's start, then #0's copy at 100
    assert lineage(HISTORIES, 4, final_step=300) == [at(0, 0.002, 0.1, 0), at(100, 0.0016, 0.05, 4)]
    assert lineage(HISTORIES, 2, final_step=150) == [at(0, 0.001, 0.1, 2)]  # before its copy


def test_a_missing_source_or_a_history_without_a_start_is_refused():
    with pytest.raises(ValueError, match="trial 9 has no population history"):
        lineage({1: [seg(0, 0.003), seg(100, 0.002, source=9)]}, 1)
    with pytest.raises(ValueError, match="does not reach back to step 0"):
        lineage({1: [seg(100, 0.003)]}, 1)


BASE = {
    "hidden_size": 16,
    "max_steps": 400,
    "eval_every": 100,
    "learning_rate": 0.0023,
    "input_dropout": 0.3,
    "run_dir": "/store/pbt/trial-4",
}


def test_the_replay_config_starts_with_the_first_settings_and_schedules_the_rest():
    config = replay_config(BASE, lineage(HISTORIES, 4))
    assert config == {
        **BASE,
        "learning_rate": 0.002,
        "input_dropout": 0.1,
        "run_dir": "runs/replay-trial-4",
        "schedule": [
            {"step": 100, "settings": {"learning_rate": 0.0024, "input_dropout": 0.2}},
            {"step": 200, "settings": {"learning_rate": 0.0019, "input_dropout": 0.25}},
            {"step": 300, "settings": {"learning_rate": 0.0023, "input_dropout": 0.3}},
        ],
    }
    trained = make_config(config)  # what `rnntune train --config` reads
    assert [c.step for c in trained.schedule] == [100, 200, 300]
    assert trained.settings_at(250).learning_rate == 0.0019
    assert BASE["run_dir"] == "/store/pbt/trial-4"  # the member's own config is left as it was


def test_a_member_that_never_copied_replays_without_a_schedule():
    config = replay_config(BASE, lineage(HISTORIES, 0))
    assert config["schedule"] == [] and config["learning_rate"] == 0.002
    assert make_config(config).schedule == []


def record(number: int, state: str, value: float | None, attrs: dict) -> TrialRecord:
    curve = ((100, 5.0), (200, float("nan"))) if state != "RUNNING" else ((100, 5.5),)
    return TrialRecord(number, number, state, value, {}, {}, curve, attrs, None, None)


def test_members_are_the_trials_with_a_history():
    trials = [
        record(4, "COMPLETE", 4.2, {"pbt_history": HISTORIES[4], "retry_of": 3}),
        record(3, "FAIL", None, {"pbt_history": HISTORIES[3]}),
        record(1, "RUNNING", None, {"pbt_history": HISTORIES[1]}),
        record(6, "COMPLETE", 4.0, {}),  # no history: not a member
        record(7, "WAITING", None, {"pbt_history": HISTORIES[0]}),  # not trained yet
    ]
    view = members(trials)
    assert [(m["number"], m["state"], m["retry_of"]) for m in view] == [
        (1, "RUNNING", None),
        (3, "FAIL", None),
        (4, "COMPLETE", 3),
    ]
    assert view[2]["value"] == 4.2 and view[2]["curve"] == [[100, 5.0], [200, None]]
    assert view[2]["history"] == HISTORIES[4]
    assert sorted(histories(trials)) == [1, 3, 4, 7]


def test_only_a_pbt_or_pb2_study_is_a_population():
    assert population_spec({"spec": validate({"space": "tiny", "scheduler": "pbt"}).stored()}) is not None
    assert population_spec({"spec": validate({"space": "tiny"}).stored()}) is None
    assert population_spec({}) is None  # not a study rnntune created
