"""Study-level stop: end a sweep once its best stops improving, or after a wall-clock budget.

A sweep otherwise runs to its trial count; when the best has plateaued, the remaining trials cost
compute and mostly fit training noise (thesis Appendix 2.B). The rule follows Keras' EarlyStopping:
a finished trial (COMPLETE or PRUNED) that does not beat the best COMPLETE value by more than
`min_improvement` counts towards `patience`; one that does resets the count.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel, ConfigDict, Field

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

    @property
    def active(self) -> bool:
        return self.patience is not None or self.max_hours is not None

    def stale_trials(self, trials: Sequence[FrozenTrial]) -> tuple[int, float]:
        """How many finished trials since the last significant improvement, and the best value then."""
        done = sorted(
            (t for t in trials if t.state in _FINISHED),
            key=lambda t: (t.datetime_complete or dt.datetime.max, t.number),
        )
        best, since = math.inf, 0
        for trial in done:
            value = trial.value if trial.state == TrialState.COMPLETE else None
            if value is not None and (best == math.inf or best - value > self.min_improvement):
                best, since = value, 0
            else:
                since += 1
        return since, best

    def reason(
        self, trials: Sequence[FrozenTrial], started: dt.datetime, now: dt.datetime | None = None
    ) -> str | None:
        """Why the sweep should end now (a sentence for the log and the study), or None to go on."""
        now = now or dt.datetime.now(dt.UTC)
        if self.max_hours is not None and (now - started).total_seconds() >= self.max_hours * 3600:
            return f"ran for its --max-hours {self.max_hours:g} h"
        if self.patience is not None:
            since, best = self.stale_trials(trials)
            if best < math.inf and since >= self.patience:
                return (
                    f"the best ({best:.4f}) has not improved by more than {self.min_improvement:g} "
                    f"in {since} trials (--patience {self.patience})"
                )
        return None
