"""Ray's PBT and PB2 as rnntune builds them: the members' rules on plain values and Ray's objects."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler
from ray.tune.schedulers.pb2 import PB2

from tuner.policies.kinds.population import make_population_scheduler
from tuner.policies.population_rules import Mutable
from tuner.policies.population_schedulers import (
    MemberGenerator,
    MemberPB2,
    MemberPBT,
    ends_training,
    release_point,
)

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


def test_the_members_search_is_over_when_every_member_has_finished_not_when_the_last_is_created() -> None:
    """Tune keeps a paused member's actor only while its search is not over (ray_private)."""
    from ray import tune
    from ray.tune.experiment import Trial

    generator = MemberGenerator(max_concurrent=2)
    generator.add_configurations(
        {"member": {"run": lambda config: None, "config": {"m": tune.grid_search([0, 1])}}}
    )
    members = [generator.next_trial(), generator.next_trial()]
    members[0].set_status(Trial.TERMINATED)
    generator.on_trial_complete(members[0].trial_id)  # as Tune tells it
    assert generator.next_trial() is None and not generator.is_finished()  # the grid is used up
    members[1].set_status(Trial.ERROR)
    assert generator.is_finished()
    assert "_members" not in generator.get_state()  # Tune saves the trials itself


class _Live:
    """What the scheduler reads of Tune's controller when it picks a member to run."""

    def __init__(self, trials: list) -> None:
        self.trials = trials

    def get_trials(self) -> list:
        return self.trials

    def get_live_trials(self) -> list:
        return [t for t in self.trials if t.status not in ("TERMINATED", "ERROR")]


def _paused_at(scheduler, steps: dict[str, tuple[str, int]]) -> list:
    members = []
    for trial_id, (status, _) in steps.items():
        member = _trial({"trial_number": len(members), "trainer": {"run_dir": f"/s/{trial_id}"}}, trial_id)
        member.status = status
        members.append(member)
    scheduler._trial_state = {m: SimpleNamespace(last_train_time=steps[m.trial_id][1]) for m in members}
    return members


def test_members_all_paused_at_the_sync_point_they_wait_for_go_on_past_it() -> None:
    """Ray's round sets the next sync point to the furthest member's step when members were past
    it (`max(next + interval, furthest)`, a resume from an object store): every member then waits
    at it with none to arrive. The next member to run goes on, the sync point past them all."""
    scheduler = make_population_scheduler("pbt", RANGES, 20, 80)
    members = _paused_at(scheduler, {"a": ("PAUSED", 40), "b": ("PAUSED", 40), "c": ("TERMINATED", 0)})
    scheduler._next_perturbation_sync = 40
    assert scheduler.choose_trial_to_run(_Live(members)) is members[0]
    assert scheduler._next_perturbation_sync == 60


def test_paused_members_keep_waiting_for_a_member_still_on_its_way() -> None:
    scheduler = make_population_scheduler("pbt", RANGES, 20, 80)
    members = _paused_at(scheduler, {"a": ("PAUSED", 40), "b": ("RUNNING", 20)})
    scheduler._next_perturbation_sync = 40
    assert scheduler.choose_trial_to_run(_Live(members)) is None
    assert scheduler._next_perturbation_sync == 40
