"""Ray's PBT and PB2 as rnntune builds them: the members' rules on plain values and Ray's objects."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler
from ray.tune.schedulers.pb2 import PB2

from tuner.policies.kinds.population import make_population_scheduler
from tuner.policies.population_rules import Mutable
from tuner.policies.population_schedulers import MemberPB2, MemberPBT, ends_training, release_point

RANGES = {
    "learning_rate": Mutable("learning_rate", 1e-3, 4e-3, log=True),
    "input_dropout": Mutable("input_dropout", 0.0, 0.9, log=False),
}


@pytest.mark.parametrize(
    ("name", "kind", "base"), [("pbt", MemberPBT, PopulationBasedTraining), ("pb2", MemberPB2, PB2)]
)
def test_both_schedulers_are_rays_synchronous_ones_with_the_members_rules(name, kind, base) -> None:
    scheduler = make_population_scheduler(name, RANGES, interval=20, max_steps=80)
    assert isinstance(scheduler, kind) and isinstance(scheduler, base)
    assert scheduler._synch and scheduler._perturbation_interval == 20
    assert scheduler.max_steps == 80


def test_an_unknown_population_scheduler_is_refused() -> None:
    with pytest.raises(ValueError, match="not a population scheduler"):
        make_population_scheduler("asha", RANGES, 20, 80)


class _Trial:
    """What PBT reads of a Ray trial here (hashable: its state is kept by trial)."""

    def __init__(self, config: dict, trial_id: str) -> None:
        self.config, self.trial_id = config, trial_id


def _trial(config: dict, trial_id: str) -> _Trial:
    return _Trial(config, trial_id)


def test_a_copy_keeps_the_members_identity_and_is_told_to_the_driver() -> None:
    told = []
    scheduler = make_population_scheduler("pbt", RANGES, 20, 80, on_copy=lambda *args: told.append(args))
    own = _trial(
        {"trial_number": 1, "trainer": {"run_dir": "/s/1", "learning_rate": 1e-3, "input_dropout": 0.5}}, "a"
    )
    source = _trial(
        {"trial_number": 4, "trainer": {"run_dir": "/s/4", "learning_rate": 3e-3, "input_dropout": 0.2}}, "b"
    )
    scheduler._trial_state = {
        source: SimpleNamespace(last_result={"step": 40, "val_loss": 3.5}, last_train_time=40)
    }
    new, _ = scheduler._get_new_config(own, source)
    assert new["trial_number"] == 1 and new["trainer"]["run_dir"] == "/s/1"
    assert 1e-3 <= new["trainer"]["learning_rate"] <= 4e-3 and 0.0 <= new["trainer"]["input_dropout"] <= 0.9
    assert told == [("a", "b", 40, 3.5, new)]


def test_the_last_evaluation_never_reaches_rays_rules() -> None:
    """A copy at the last step would train nothing: Ray neither decides nor logs one there."""
    scheduler = make_population_scheduler("pbt", RANGES, 20, 80)
    member = _trial({"trial_number": 1, "trainer": {"run_dir": "/s/1"}}, "a")
    scheduler._trial_state = {member: SimpleNamespace(last_train_time=60, last_perturbation_time=60)}
    assert scheduler.on_trial_result(None, member, {"step": 80, "val_loss": 3.0}) == TrialScheduler.CONTINUE
    assert scheduler._trial_state[member].last_train_time == 60


def test_members_waiting_at_a_sync_point_are_released_only_when_none_will_reach_it() -> None:
    assert release_point([60, 40], sync=60, interval=20) == 60  # the member at 40 will trigger it
    assert release_point([60, 60], sync=60, interval=20) == 80  # both wait for one that ended
    assert release_point([70, 60], sync=60, interval=20) == 90
    assert release_point([], sync=60, interval=20) == 60


def test_the_last_evaluation_ends_training() -> None:
    assert ends_training({"step": 80}, 80) and ends_training({"step": 90}, 80)
    assert not ends_training({"step": 60}, 80) and not ends_training({}, 80)


def test_a_resumed_population_first_meets_past_every_members_start() -> None:
    assert make_population_scheduler("pbt", RANGES, 20, 80)._next_perturbation_sync == 20
    resumed = make_population_scheduler("pb2", RANGES, 20, 80, starts=[40, 50, 30])
    assert resumed._next_perturbation_sync == 60


@pytest.mark.parametrize("step", [30, 40, 50])
def test_results_off_the_sync_point_never_reach_rays_rules(step) -> None:
    """A restarted member's first results (its start step again, steps before the others' sync
    point) only train on: Ray's state is untouched, so no round starts among unaligned members."""
    scheduler = make_population_scheduler("pbt", RANGES, 20, 80, starts=[40, 50])
    member = _trial({"trial_number": 1, "trainer": {"run_dir": "/s/1"}}, "a")
    scheduler._trial_state = {member: SimpleNamespace(last_train_time=0, last_perturbation_time=0)}
    result = {"step": step, "val_loss": 3.0}
    assert scheduler.on_trial_result(None, member, result) == TrialScheduler.CONTINUE
    assert scheduler._trial_state[member].last_train_time == 0
