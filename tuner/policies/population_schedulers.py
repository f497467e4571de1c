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

A member paused at a perturbation keeps its Ray actor (its process, PyTorch loaded) and resumes on
it, or on another member's, instead of Tune starting a new one each round: the scheduler asks Tune's
actor cache to hold it (`ray_private.keep_actor`) and `MemberGenerator` keeps the search open until
every member has finished (Tune caches no actor once its search is over).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler
from ray.tune.schedulers.pb2 import PB2
from ray.tune.search import BasicVariantGenerator

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
        self._kept: set[Any] = set()  # members paused whose actor Tune's cache may hold
        private.set_next_sync(self, first_sync)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        step = int(result.get(TIME_RESULT_KEY) or 0)
        if ends_training(result, self.max_steps) or not at_sync(
            step, private.next_sync(self), private.interval(self)
        ):
            return TrialScheduler.CONTINUE
        # Kept before Ray decides: a copy onto a running member pauses it inside the decision.
        self._keep(tune_controller, trial)
        decision = super().on_trial_result(tune_controller, trial, result)  # type: ignore[misc]
        if decision == TrialScheduler.CONTINUE:
            self._forget(tune_controller, trial)
        return decision

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
        trial = super().choose_trial_to_run(tune_controller)  # type: ignore[misc]
        if trial is None and _all_paused(tune_controller.get_live_trials()):
            # No member can reach the sync point they wait at: Ray's round sets the next one to
            # the furthest member's step when members were past it (a resume), and a member that
            # ends while still counted behind releases nobody. They go on past it instead.
            self._release(tune_controller)
            trial = super().choose_trial_to_run(tune_controller)  # type: ignore[misc]
        if trial is not None and trial.status == Trial.PAUSED:
            self._forget(tune_controller, trial)  # it resumes, on a kept actor if one waits
        return trial

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        super().on_trial_remove(tune_controller, trial)  # type: ignore[misc]
        self._forget(tune_controller, trial)

    def _keep(self, tune_controller: Any, trial: Any) -> None:
        if trial not in self._kept:
            self._kept.add(trial)
            private.keep_actor(tune_controller, trial)

    def _forget(self, tune_controller: Any, trial: Any) -> None:
        if trial in self._kept:
            self._kept.discard(trial)
            private.release_actor(tune_controller, trial)

    def copy_config(self, trial: Any, source: Any, new: dict) -> dict:
        new = keep_identity(new, trial.config)
        if self.on_copy is not None:
            value = private.last_result(self, source).get(PRIMARY)
            self.on_copy(trial.trial_id, source.trial_id, private.last_train_time(self, source), value, new)
        return new

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        super().on_trial_complete(tune_controller, trial, result)  # type: ignore[misc]
        self._forget(tune_controller, trial)
        self._release(tune_controller)

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        super().on_trial_error(tune_controller, trial)  # type: ignore[misc]
        self._forget(tune_controller, trial)
        self._release(tune_controller)

    def _release(self, tune_controller: Any) -> None:
        times = private.train_times(self, tune_controller.get_live_trials())
        private.set_next_sync(self, release_point(times, private.next_sync(self), private.interval(self)))


class MemberPBT(_Members, PopulationBasedTraining):
    """Ray's synchronous PBT with the members' rules (`_Members`)."""


class MemberPB2(_Members, PB2):
    """Ray's synchronous PB2 (GP-bandit explore) with the members' rules (`_Members`)."""


class MemberGenerator(BasicVariantGenerator):
    """Tune's generator of a population's members (a grid) whose search is over once every member
    has finished, not once the last member is created: Tune keeps no paused member's actor after
    its search is over (module docstring)."""

    def __init__(self, max_concurrent: int = 0) -> None:
        super().__init__(max_concurrent=max_concurrent)
        self._members: list[Any] = []

    def next_trial(self) -> Any:
        trial = super().next_trial()
        if trial is not None:
            self._members.append(trial)
        return trial

    def is_finished(self) -> bool:
        return bool(super().is_finished()) and all(member.is_finished() for member in self._members)

    def get_state(self) -> Any:
        state = super().get_state()
        if isinstance(state, dict):
            state.pop("_members", None)  # Tune saves its trials itself
        return state


def _all_paused(trials: Any) -> bool:
    """Whether there are live members and every one is paused (none running or about to)."""
    statuses = [trial.status for trial in trials]
    return bool(statuses) and all(status == Trial.PAUSED for status in statuses)


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
