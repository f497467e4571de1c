"""Ray Tune's population-based schedulers (PBT, PB2) over a study's members.

Ray's PBT copies the whole config of the member exploited, its identity included (the study trial
it reports to and its run folder), so a member would go on training in the other's folder. No public
hook sees both members, so the subclasses here take every copy through `ray_private.CopyHook`
(the one module that names Ray's private hooks, checked against the Ray installed when a sweep
starts) to keep the member's own identity (`population.keep_identity`) and tell the driver of the
copy, and move the synchronous mode's next sync point to release members a finished member left
waiting; tests/tuner/sweeps/test_population_sweep.py checks the behaviour end to end (own folders,
copies recorded as Ray's `pbt_global.txt` lists them, a resumed population that finishes). Both
run synchronously: every member pauses at each perturbation until all have reached it, which is
what makes a copied checkpoint the same step as the member's (a continuous curve) and bounds the
checkpoints a member may still copy (`population.CHECKPOINTS_KEPT`). The scheduler never acts on
a member's last evaluation: a copy there would train nothing (the member's trainable keeps its own
run, member.py), so Ray neither decides nor logs one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler
from ray.tune.schedulers.pb2 import PB2

from tuner.objectives.measures import PRIMARY
from tuner.policies.early_stopping import TIME_RESULT_KEY
from tuner.policies.population_rules import at_sync, keep_identity
from tuner.upstream import ray_private as private

# Called when a member copies another: (its Ray id, the other's, the step, the other's loss there,
# the member's new trainer settings). The driver writes the copy to the member's history.
OnCopy = Callable[[str, str, int, float | None, dict[str, Any]], None]


class _Members(private.CopyHook):
    """What rnntune changes in Ray's synchronous PBT and PB2 (see the module docstring): a member
    keeps its identity when it copies another, and each copy is told to the driver as it is
    decided (`on_copy`); members paused at a sync point are released when the members they waited
    for end instead (Ray's synchronous mode would wait for them forever after a resume left members
    at different steps). The scheduler sees a result only at the population's sync point
    (`population.at_sync`) before the last step, which starts past every member's start step
    (`population.first_sync`): a member that restarts (a resume, a retry in place after its worker
    died, which Ray's `on_trial_add` gives a fresh state) reports steps off the sync grid that
    would otherwise set off a round among members at different steps, or pause it in a loop at the
    step it restarted from."""

    def __init__(self, max_steps: int, first_sync: int, on_copy: OnCopy | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_steps, self.on_copy = max_steps, on_copy
        private.set_next_sync(self, first_sync)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        step = int(result.get(TIME_RESULT_KEY) or 0)
        if ends_training(result, self.max_steps) or not at_sync(
            step, private.next_sync(self), private.interval(self)
        ):
            return TrialScheduler.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)  # type: ignore[misc]

    def copy_config(self, trial: Any, source: Any, new: dict) -> dict:
        new = keep_identity(new, trial.config)
        if self.on_copy is not None:
            value = private.last_result(self, source).get(PRIMARY)
            self.on_copy(trial.trial_id, source.trial_id, private.last_train_time(self, source), value, new)
        return new

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        super().on_trial_complete(tune_controller, trial, result)  # type: ignore[misc]
        self._release(tune_controller)

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        super().on_trial_error(tune_controller, trial)  # type: ignore[misc]
        self._release(tune_controller)

    def _release(self, tune_controller: Any) -> None:
        times = private.train_times(self, tune_controller.get_live_trials())
        private.set_next_sync(self, release_point(times, private.next_sync(self), private.interval(self)))


class MemberPBT(_Members, PopulationBasedTraining):
    """Ray's synchronous PBT with the members' rules (`_Members`)."""


class MemberPB2(_Members, PB2):
    """Ray's synchronous PB2 (GP-bandit explore) with the members' rules (`_Members`)."""


def ends_training(result: Mapping[str, Any], max_steps: int) -> bool:
    """Whether a result is a member's last evaluation (or its summary)."""
    return int(result.get(TIME_RESULT_KEY) or 0) >= max_steps


def release_point(times: list[float], sync: float, interval: float) -> float:
    """The next sync point once a member ended: unchanged while a member still training is behind
    it (it will reach it and trigger the perturbation), else past every member still training, so
    those paused there go on (that round is skipped)."""
    if not times or any(t < sync for t in times):
        return sync
    return max(times) + interval
