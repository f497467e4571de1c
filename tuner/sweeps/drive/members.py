"""A population sweep (scheduler pbt/pb2) on Ray Tune: its members, Tune's parameter space and the
events that reach the study.

Ray's population-based schedulers refuse a search algorithm, so the StudySearcher cannot suggest
members as Tune asks: `population_search` asks every member of the population from the study at
once (retried members first, with the settings they had reached) and gives Tune their configs as a
grid over the members; `PopulationEvents` binds each Ray trial to its study trial when Tune starts
it and forwards its results and end to the searcher, which writes them as for any sweep.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ray import tune
from ray.tune import Callback

from tuner.policies.kinds import SchedulerInputs
from tuner.policies.population_rules import MEMBER, first_sync
from tuner.space.settings import max_steps_and_eval_every
from tuner.sweeps.drive.plan import SweepPlan
from tuner.sweeps.drive.searcher import StudySearcher, folder_state
from tuner.sweeps.trial.trial_config import Membership, TrialConfig


def member_configs(plan: SweepPlan, searcher: StudySearcher) -> list[dict[str, Any]]:
    """Each member's trial config: the searcher's, with what the trainable needs to be a member."""
    assert plan.population is not None
    member = Membership(plan.population.interval, tuple(sorted(plan.population.ranges)))
    configs = (TrialConfig.from_tune(config) for config in searcher.population(plan.budget))
    return [replace(config, population=member).to_tune() for config in configs]


def population_search(plan: SweepPlan, searcher: StudySearcher) -> dict[str, Any]:
    """Tune's settings for a population sweep: the members as its parameter space, the scheduler."""
    assert plan.population is not None
    configs = member_configs(plan, searcher)
    starts = [start_step(config) for config in configs]
    max_steps = max_steps_and_eval_every(plan.space.fixed)[0]
    keys = sorted({key for config in configs for key in config})
    space: dict[str, Any] = {MEMBER: tune.grid_search(list(range(len(configs))))}
    for key in keys:
        space[key] = tune.sample_from(_member_value(configs, key))
    return dict(
        param_space=space,
        num_samples=1,
        scheduler=plan.kind.build(
            SchedulerInputs(
                plan.space.fixed, population=plan.population, on_copy=searcher.copied, starts=tuple(starts)
            )
        ),
        members=len(configs),
        note=resume_note(starts, plan.population.interval, max_steps),
    )


def resume_note(starts: list[int], interval: int, max_steps: int) -> str | None:
    """What a resumed population's log says: where its members start and first meet."""
    if not any(starts):
        return None
    return (
        f"population resumed: members start from steps {sorted(starts)} (their folders' last.pt); "
        f"the first perturbation is at step {first_sync(starts, interval, max_steps)}"
    )


def start_step(config: dict[str, Any]) -> int:
    """The step a member starts from: its run folder's last.pt (a resumed member's), else 0."""
    return folder_state(Path(config["trainer"]["run_dir"]))[1] or 0


def _member_value(configs: list[dict[str, Any]], key: str) -> Any:
    """What Tune samples for `key`: the value of the member its grid drew."""

    def value(spec: Any) -> Any:
        return configs[spec.config[MEMBER]].get(key)

    return value


class PopulationEvents(Callback):
    """Binds Ray's trials to the study's members and forwards their results and ends (the hooks a
    searcher would get from Tune)."""

    def __init__(self, searcher: StudySearcher) -> None:
        self._searcher = searcher

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._searcher.bind(trial.trial_id, int(trial.config["trial_number"]))

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        self._searcher.on_trial_result(trial.trial_id, result)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._searcher.on_trial_complete(trial.trial_id, trial.last_result)
