"""Every write a sweep driver makes to its study's trials, in one place behind the driver's fence.

The searcher (searcher.py) decides when to write and `lifecycle.decide` what a finished trial
becomes; this writer makes the writes: a started trial's folder and Ray id, each evaluation as an
intermediate value and attributes, a finished trial's outcome, a failure with its reason. Every
`tell` passes the fence first (`Fence.check`: the lease renewed at this driver's epoch in one
compare-and-set), and once the lease is lost nothing more is written: the trials in flight stay
RUNNING for the driver that takes the study over. It counts what it wrote (`Tally`) for the live
table. Tested with plain messages on a real SQLite study, no Ray (tests/tuner/sweeps/drive/test_writer.py).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna
import sqlalchemy as sa
from optuna.trial import FrozenTrial, TrialState

from tuner.errors import LeaseLost
from tuner.objectives.goals import Goals
from tuner.objectives.measures import PRIMARY, finite
from tuner.policies.population_history import add_segment, settings_in_force
from tuner.samplers.cost import COST_ATTR, step_cost
from tuner.storage import trial_attrs
from tuner.sweeps.trial.lifecycle import FINAL, Evaluation, Outcome, Verdict
from tuner.upstream import optuna_private

# A database out of reach, as SQLAlchemy raises it or as Optuna wraps it on commit.
DB_ERRORS = (sa.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError)
ERROR_CHARS = 2000  # a failure's reason, as stored


class Fence(Protocol):
    """The driver's hold on the study's lease (`tuner.sweeps.drive.lease.LeaseKeeper`)."""

    @property
    def holds(self) -> bool:
        """Whether the driver may still write, without asking the database."""
        ...

    def check(self) -> None:
        """LeaseLost unless the driver still holds the lease at its epoch (asks the database)."""
        ...


@dataclass
class Measured:
    """A trial's measures so far (tuner.objectives.measures): its size, its throughput at each
    evaluation (stored as their median) and its peak memory (the largest seen)."""

    num_params: float | None = None
    throughputs: list[float] = field(default_factory=list)
    peak_memory: float | None = None

    def add(self, result: Mapping[str, Any]) -> None:
        keys = (trial_attrs.NUM_PARAMS, trial_attrs.TOKENS_PER_S, trial_attrs.PEAK_MEMORY)
        size, speed, peak = (finite(result.get(k)) for k in keys)
        self.num_params = size if size is not None else self.num_params
        if speed is not None and not result.get(FINAL):
            self.throughputs.append(speed)
        if peak is not None:
            self.peak_memory = max(peak, self.peak_memory or 0.0)

    def as_attrs(self, wall: float) -> dict[str, float]:
        """The measures known, under their names, with the trial's wall time."""
        out = {
            trial_attrs.NUM_PARAMS: self.num_params,
            trial_attrs.PEAK_MEMORY: self.peak_memory,
            trial_attrs.WALL_TIME: round(wall, 3),
        }
        if self.throughputs:
            out[trial_attrs.TOKENS_PER_S] = float(statistics.median(self.throughputs))
        return {k: v for k, v in out.items() if v is not None}


@dataclass
class LiveTrial:
    """A trial in flight: its Optuna trial, where it runs and what has been recorded so far."""

    trial: optuna.Trial
    params: dict[str, Any]
    run_dir: str
    started: float = field(default_factory=time.monotonic)
    curve: dict[int, float] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)  # a population member's, in force now
    last_step: int = 0
    measures: Measured = field(default_factory=lambda: Measured())

    def wall(self) -> float:
        """Seconds since the trial started, as stored in `wall_time_s`."""
        return round(time.monotonic() - self.started, 3)


@dataclass
class Tally:
    """What this driver wrote, for the live table."""

    complete: int = 0
    pruned: int = 0
    failed: int = 0
    retried: int = 0
    refused: int = 0  # settings refused before training for a bound (not trials of `n_trials`)
    wall_times: list[float] = field(default_factory=list)
    finished: list[FrozenTrial] = field(default_factory=list)


class StudyWriter:
    """The fenced writer of one study's trials. `fence` None writes unfenced (callers that hold no
    lease, such as benchmarks); `after_trial` runs after each trial that finished for good."""

    def __init__(
        self,
        study: optuna.Study,
        fence: Fence | None = None,
        after_trial: Callable[[], None] | None = None,
        goals: Goals | None = None,
    ) -> None:
        self.study = study
        self.goals = goals or Goals()
        self.tally = Tally()
        self.told: list[Callable[[FrozenTrial], None]] = []  # called with each trial as it is told
        self._fence = fence
        self._after_trial = after_trial

    @property
    def writable(self) -> bool:
        """Whether this driver may still write to the study (False once its lease is lost)."""
        return self._fence is None or self._fence.holds

    def check(self) -> None:
        """LeaseLost unless the driver still holds the study's lease (asks the database)."""
        if self._fence is not None:
            self._fence.check()

    def started(self, live: LiveTrial, ray_trial_id: str) -> None:
        """A trial handed to Ray Tune: where it trains and Ray's id for it."""
        trial_attrs.RUN_DIR.write(live.trial, live.run_dir)
        trial_attrs.RAY_TRIAL_ID.write(live.trial, ray_trial_id)

    def record(self, live: LiveTrial, evaluation: Evaluation, result: Mapping[str, Any]) -> None:
        """One evaluation: its value on the curve (once per step, finite only) and the attributes
        it carries, the step cost among them. A database out of reach drops the point; the trial
        goes on."""
        if not self.writable:
            return
        live.measures.add(result)
        if evaluation.step is not None:
            live.last_step = max(live.last_step, evaluation.step)
        if (
            evaluation.step is not None
            and evaluation.value is not None
            and evaluation.step not in live.curve
            and math.isfinite(evaluation.value)
        ):
            try:
                report(live.trial, evaluation.value, evaluation.step)
            except DB_ERRORS:
                return
            live.curve[evaluation.step] = evaluation.value
        # Seconds per training step, for cost-aware search (written when it moves by more than 5%).
        attrs = {COST_ATTR: step_cost(result, live.attrs.get(COST_ATTR)), **evaluation.attrs}
        for attr, new in attrs.items():
            if new and live.attrs.get(attr) != new:
                try:
                    trial_attrs.write(live.trial, attr, new)
                except DB_ERRORS:
                    return
                live.attrs[attr] = new

    def segment(self, live: LiveTrial, segment: Mapping[str, Any]) -> None:
        """A population member (re)started or copied another: its history gets the segment when it
        changes what the member trains (tuner.policies.population_history.add_segment, which
        takes the events in whatever order Ray delivers them)."""
        history = add_segment(trial_attrs.PBT_HISTORY.of(live.attrs), segment, live.params)
        if history is None or not self.writable:
            return
        try:
            trial_attrs.PBT_HISTORY.write(live.trial, history)
        except DB_ERRORS:
            return
        live.attrs[trial_attrs.PBT_HISTORY] = history
        live.settings = settings_in_force(history)

    def finish(self, live: LiveTrial, outcome: Outcome) -> None:
        """A finished trial: its wall time, the outcome's attributes, then COMPLETE, PRUNED or FAIL."""
        if not self.writable:
            return
        wall = time.monotonic() - live.started
        trial_attrs.WALL_TIME_S.write(live.trial, round(wall, 3))
        for key, value in outcome.attrs.items():
            trial_attrs.write(live.trial, key, value)
        measures = self._measures(live, wall, outcome.value)
        told: float | list[float] | None = outcome.value
        error = outcome.error
        if outcome.verdict is Verdict.COMPLETE and self.goals.several:
            told = self.goals.values(measures)
            error = None if told is not None else f"a measure to optimise is missing: {self.goals.names}"
        if outcome.verdict is Verdict.FAIL or (told is None and outcome.verdict is Verdict.COMPLETE):
            self.fail(live, error or "failed", needs_retry=outcome.needs_retry)
        elif (frozen := self._tell(live, told, TrialState[outcome.verdict.value])) is not None:
            if outcome.verdict is Verdict.COMPLETE:
                self.tally.complete += 1
            else:
                self.tally.pruned += 1
            self._finished(frozen, wall)

    def _measures(self, live: LiveTrial, wall: float, value: float | None) -> dict[str, float]:
        """Store the trial's measures under their names (every study, whatever it optimises) and
        its constraint values for Optuna's feasibility-aware samplers; return them with `val_loss`."""
        measures = live.measures.as_attrs(wall)
        for key, number in measures.items():
            trial_attrs.write(live.trial, key, number)
        measures = {**measures, **({PRIMARY: value} if value is not None else {})}
        for key, excess in self.goals.excesses(measures).items():
            live.trial.set_constraint(key, excess)
        return measures

    def refuse(self, trial: optuna.Trial, measures: Mapping[str, float], reason: str) -> FrozenTrial | None:
        """A setting refused before training for a bound it breaks: its known measures, the reason
        (`refused`), every constraint's value, then COMPLETE with `Goals.refused_values`, so every
        sampler reads it as infeasible (docs/sweeps.md). Not a finished trial of the sweep: no
        tracker hears of it and no stop rule counts it. None when the lease is lost."""
        try:
            self.check()
        except LeaseLost:
            return None
        for key, number in measures.items():
            trial_attrs.write(trial, key, number)
        trial_attrs.REFUSED.write(trial, reason[:ERROR_CHARS])
        for key, excess in self.goals.refused_excesses(measures).items():
            trial.set_constraint(key, excess)
        values = self.goals.refused_values(measures)
        frozen = self.study.tell(trial, values if self.goals.several else values[0])
        self.tally.refused += 1
        return frozen

    def fail(
        self, live: LiveTrial, message: str, *, needs_retry: bool, wall: bool = False
    ) -> FrozenTrial | None:
        """FAIL with its reason (and `needs_retry` when it was not the trial's fault; `wall`: store
        its wall time first); None when the lease is lost (the trial stays RUNNING for the next
        driver)."""
        try:
            self.check()
        except LeaseLost:
            return None
        if wall:
            trial_attrs.WALL_TIME_S.write(live.trial, live.wall())
        trial_attrs.ERROR.write(live.trial, message[:ERROR_CHARS])
        if needs_retry:
            trial_attrs.NEEDS_RETRY.write(live.trial, True)
        frozen = self.study.tell(live.trial, state=TrialState.FAIL)
        self._announce(frozen)
        if not needs_retry:
            self.tally.failed += 1
            self._finished(frozen, None)
        return frozen

    def _tell(
        self, live: LiveTrial, value: float | list[float] | None, state: TrialState
    ) -> FrozenTrial | None:
        """Optuna's tell behind the fence; None (nothing written) when the lease is lost."""
        try:
            self.check()
        except LeaseLost:
            return None
        frozen = self.study.tell(live.trial, value, state=state)
        self._announce(frozen)
        return frozen

    def _announce(self, trial: FrozenTrial) -> None:
        for listener in self.told:
            listener(trial)

    def _finished(self, trial: FrozenTrial, wall: float | None) -> None:
        if wall is not None:
            self.tally.wall_times.append(wall)
        self.tally.finished.append(trial)
        if self._after_trial is not None:
            self._after_trial()


def report(trial: optuna.Trial, value: float, step: int) -> None:
    """`trial.report(value, step)`, also in a study with several objectives, where Optuna refuses
    `report` (it has no pruner for them); rnntune's curves are the validation loss alone, so it
    stores them through the storage call `report` itself makes (`Trial.storage`, public; the trial's
    id is Optuna's private `_trial_id`, read through `tuner.upstream.optuna_private.trial_id`)."""
    if len(trial.study.directions) == 1:
        trial.report(value, step)
    else:
        trial.storage.set_trial_intermediate_value(optuna_private.trial_id(trial), step, value)
