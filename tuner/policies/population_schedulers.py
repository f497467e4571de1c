"""Ray Tune's population-based schedulers (PBT, PB2) over a study's members.

Ray's PBT copies the whole config of the member exploited, its identity included (the study trial
it reports to and its run folder), so a member would go on training in the other's folder. No public
hook sees both members, so the subclasses here override `_get_new_config(trial, trial_to_clone)`,
a private method of Ray 2.60's PBT and PB2, to keep the member's own identity
(`population.keep_identity`) and tell the driver of the copy, and read the synchronous mode's
private state to release members a finished member left waiting; `check_hooks` verifies the method
and the state when a sweep starts, and tests/tuner/sweeps/test_population_sweep.py checks the
behaviour end to end (own folders, copies recorded, a resumed population that finishes). Both run synchronously: every member pauses at each perturbation until all have reached it,
which is what makes a copied checkpoint the same step as the member's (a continuous curve) and
bounds the checkpoints a member may still copy (`population.CHECKPOINTS_KEPT`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ray import tune
from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler
from ray.tune.schedulers.pb2 import PB2

from tuner.objectives.measures import PRIMARY
from tuner.policies.early_stopping import TIME_RESULT_KEY
from tuner.policies.population import (
    QUANTILE,
    Mutable,
    PopulationError,
    at_sync,
    explore_into,
    first_sync,
    keep_identity,
)

# Called when a member copies another: (its Ray id, the other's, the step, the other's loss there,
# the member's new trainer settings). The driver writes the copy to the member's history.
OnCopy = Callable[[str, str, int, float | None, dict[str, Any]], None]


class _Members:
    """What rnntune changes in Ray's synchronous PBT and PB2 (see the module docstring): a member
    keeps its identity when it copies another; each copy is told to the driver as it is decided
    (`on_copy`), except at the last step, where a copy would make a duplicate of a finished member
    and the member's trainable keeps its own run (member.py); and members paused at a sync point
    are released when the members they waited for end instead (Ray's synchronous mode would wait
    for them forever after a resume left members at different steps). The scheduler sees a result
    only at the population's sync point (`population.at_sync`), which starts past every member's
    start step (`population.first_sync`): a member that restarts (a resume, a retry in place after
    its worker died, which Ray's `on_trial_add` gives a fresh state) reports steps off the sync
    grid that would otherwise set off a round among members at different steps, or pause it in a
    loop at the step it restarted from."""

    _trial_state: dict[Any, Any]
    _next_perturbation_sync: float
    _perturbation_interval: float

    def __init__(self, max_steps: int, first_sync: int, on_copy: OnCopy | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_steps, self.on_copy = max_steps, on_copy
        self._next_perturbation_sync = first_sync

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        step = int(result.get(TIME_RESULT_KEY) or 0)
        if not at_sync(step, self._next_perturbation_sync, int(self._perturbation_interval)):
            return TrialScheduler.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)  # type: ignore[misc]

    def _get_new_config(self, trial: Any, trial_to_clone: Any) -> tuple[dict, dict]:
        new, operations = super()._get_new_config(trial, trial_to_clone)  # type: ignore[misc]
        new = keep_identity(new, trial.config)
        source = self._trial_state[trial_to_clone]
        if self.on_copy is not None and not ends_training(source.last_result or {}, self.max_steps):
            value = (source.last_result or {}).get(PRIMARY)
            self.on_copy(trial.trial_id, trial_to_clone.trial_id, int(source.last_train_time), value, new)
        return new, operations

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        super().on_trial_complete(tune_controller, trial, result)  # type: ignore[misc]
        self._release(tune_controller)

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        super().on_trial_error(tune_controller, trial)  # type: ignore[misc]
        self._release(tune_controller)

    def _release(self, tune_controller: Any) -> None:
        times = [
            self._trial_state[t].last_train_time
            for t in tune_controller.get_live_trials()
            if t in self._trial_state
        ]
        self._next_perturbation_sync = release_point(
            times, self._next_perturbation_sync, self._perturbation_interval
        )


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


def check_hooks(scheduler: PopulationBasedTraining) -> None:
    """Refuse to run on a Ray whose PBT or PB2 lacks the private method and state `_Members` uses."""
    for cls in (PopulationBasedTraining, PB2):
        method = cls.__dict__.get("_get_new_config")
        parameters = list(inspect.signature(method).parameters) if method is not None else []
        if parameters != ["self", "trial", "trial_to_clone"]:
            raise PopulationError(
                f"this Ray's {cls.__name__} has no _get_new_config(trial, trial_to_clone) {_PIN}"
            )
    for name in PRIVATE_STATE:
        if not hasattr(scheduler, name):
            raise PopulationError(f"this Ray's PopulationBasedTraining has no {name} {_PIN}")


_PIN = "(rnntune's population schedulers were written for Ray 2.60; pin ray[tune]==2.60.0)"
PRIVATE_STATE = ("_trial_state", "_next_perturbation_sync", "_perturbation_interval")


def make_population_scheduler(
    name: str,
    ranges: Mapping[str, Mutable],
    interval: int,
    max_steps: int,
    on_copy: OnCopy | None = None,
    starts: Iterable[int] = (),
) -> PopulationBasedTraining:
    """`pbt` or `pb2` over the settings in `ranges`, perturbing every `interval` steps before
    `max_steps`, first past every member's start step (`starts`: a resumed population's, from its
    folders); `on_copy` hears of each copy (the metric and mode come from Tune's config)."""

    def explore(config: dict[str, Any]) -> dict[str, Any]:
        return explore_into(config, ranges)

    common: dict[str, Any] = dict(
        time_attr=TIME_RESULT_KEY,
        perturbation_interval=interval,
        quantile_fraction=QUANTILE,
        custom_explore_fn=explore,
        synch=True,
        max_steps=max_steps,
        first_sync=first_sync(starts, interval, max_steps),
        on_copy=on_copy,
    )
    scheduler: PopulationBasedTraining
    if name == "pb2":
        bounds = {n: [m.low, m.high] for n, m in ranges.items()}
        scheduler = MemberPB2(hyperparam_bounds={"trainer": bounds}, **common)
    elif name == "pbt":
        mutations = {
            n: (tune.loguniform if m.log else tune.uniform)(m.low, m.high) for n, m in ranges.items()
        }
        scheduler = MemberPBT(hyperparam_mutations={"trainer": mutations}, **common)
    else:
        raise ValueError(f"not a population scheduler: {name!r}")
    check_hooks(scheduler)
    return scheduler
