"""Study-level stop: end a sweep once its best stops improving, or after a wall-clock, step or compute budget.

A sweep otherwise runs to its trial count; when the best has plateaued, the remaining trials cost
compute and mostly fit training noise (thesis Appendix 2.B). The rule follows Keras' EarlyStopping:
a finished trial (COMPLETE or PRUNED) that does not beat the best COMPLETE value by more than
`min_improvement` counts towards `patience`; one that does resets the count. `budget` caps the
training steps instead, in the unit `bench/multifidelity.py` compares samplers in: full trials'
worth of steps, a pruned trial counting the steps it ran; `budget_hours` caps the compute its
trials use, in hours of each trial's wall-clock time times its GPUs (GPU-hours; a CPU trial counts
its hours once), the unit cost-aware search (`tuner.samplers.cost`) spends.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel, ConfigDict, Field

from tuner.storage import trial_attrs
from tuner.storage.study import value_of

_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


class StudyStop(BaseModel):
    """When to end a sweep before its trial count; every field off (None) by default."""

    model_config = ConfigDict(extra="forbid")

    patience: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="end after this many finished trials in a row without a significant improvement",
    )
    min_improvement: float = Field(
        0.0,
        ge=0.0,
        le=1e6,
        description="how much (objective units: nats/token) a trial must beat the best by to count as one",
    )
    max_hours: float | None = Field(
        None, gt=0.0, le=24 * 366, description="end this run of the sweep after this many hours"
    )
    budget: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        description="end this run of the sweep once its trials have trained this many full trials' "
        "worth of steps (max_steps each; a pruned trial counts the steps it ran)",
    )

    budget_hours: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        description="end this run of the sweep once its trials have used this many compute hours: "
        "each trial's wall-clock hours times its GPUs (GPU-hours; once on CPU), a running trial "
        "counting the time so far",
    )

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.patience, self.max_hours, self.budget, self.budget_hours))

    def describe(self, max_steps: int) -> str:
        """The active rules, for the sweep's header ("" when none)."""
        rules = []
        if self.budget is not None:
            rules.append(f"--budget {self.budget:g} ({round(self.budget * max_steps)} steps this run)")
        if self.budget_hours is not None:
            rules.append(f"--budget-hours {self.budget_hours:g}")
        if self.patience is not None:
            rules.append(f"--patience {self.patience} (--min-improvement {self.min_improvement:g})")
        if self.max_hours is not None:
            rules.append(f"--max-hours {self.max_hours:g}")
        return ", ".join(rules)

    def stale_trials(self, trials: Sequence[FrozenTrial]) -> tuple[int, float]:
        """How many finished trials since the last significant improvement, and the best value then."""
        done = sorted(
            (t for t in trials if t.state in _FINISHED),
            key=lambda t: (t.datetime_complete or dt.datetime.max, t.number),
        )
        best, since = math.inf, 0
        for trial in done:
            value = value_of(trial) if trial.state == TrialState.COMPLETE else None
            if value is not None and (best == math.inf or best - value > self.min_improvement):
                best, since = value, 0
            else:
                since += 1
        return since, best

    def reason(
        self,
        trials: Sequence[FrozenTrial],
        started: dt.datetime,
        now: dt.datetime | None = None,
        *,
        steps: int = 0,
        max_steps: int = 1,
        hours: float = 0.0,
    ) -> str | None:
        """Why the sweep should end now (a sentence for the log and the study), or None to go on.

        `steps` is what this run's trials have trained so far (`steps_trained`), `max_steps` a full
        trial's length; only `budget` reads them. `hours` is the compute this run's trials used
        (`compute_hours`), read by `budget_hours`.
        """
        now = now or dt.datetime.now(dt.UTC)
        if self.max_hours is not None and (now - started).total_seconds() >= self.max_hours * 3600:
            return f"ran for its --max-hours {self.max_hours:g} h"
        if self.budget is not None and steps >= self.budget * max_steps:
            return (
                f"trained {steps} steps, {steps / max_steps:.1f} full trials' worth "
                f"(--budget {self.budget:g} × {max_steps} steps)"
            )
        if self.budget_hours is not None and hours >= self.budget_hours:
            return f"used {hours:.3g} compute hours (--budget-hours {self.budget_hours:g})"
        if self.patience is not None:
            since, best = self.stale_trials(trials)
            if best < math.inf and since >= self.patience:
                return (
                    f"the best ({best:.4f}) has not improved by more than {self.min_improvement:g} "
                    f"in {since} trials (--patience {self.patience})"
                )
        return None


def steps_trained(trials: Sequence[FrozenTrial]) -> int:
    """Training steps the trials have run, each to the last step it reported (running ones too)."""
    return sum(max(t.intermediate_values, default=0) for t in trials)


def compute_hours(trials: Sequence[FrozenTrial], now: dt.datetime, gpus_per_trial: float) -> float:
    """Compute the trials used, in hours: each trial's wall-clock time (its `wall_time_s`, else its
    start to its end or to `now` while it runs) times its GPUs, or once when it has none."""
    seconds = 0.0
    for t in trials:
        wall = trial_attrs.WALL_TIME_S.of(t.user_attrs)
        if isinstance(wall, int | float) and math.isfinite(wall):
            seconds += max(float(wall), 0.0)
        elif t.datetime_start is not None:
            end = t.datetime_complete or (now if t.state == TrialState.RUNNING else t.datetime_start)
            seconds += max((_aware(end) - _aware(t.datetime_start)).total_seconds(), 0.0)
    return seconds * (gpus_per_trial if gpus_per_trial > 0 else 1.0) / 3600.0


def _aware(moment: dt.datetime) -> dt.datetime:
    """Optuna stores naive local times; compare them as such against an aware `now`."""
    return moment.astimezone(dt.UTC) if moment.tzinfo is None else moment
