"""Hyperparameter sensitivity around the best trial (thesis Appendix 2.B), as plain data.

The neighbourhood of the best trial is every other completed trial whose hyperparameters each lie
within `fraction` (default 0.15) of that hyperparameter's whole tuning range from the best trial's
value — measured on the log scale for log-scale hyperparameters, equal for categorical ones. How far
the neighbours' objectives lie from the best says how sensitive the result is to jitter in the
hyperparameters; importances (Optuna's PED-ANOVA) say which hyperparameters matter overall.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.api.reads import ParamSpec, TrialRecord

DEFAULT_FRACTION = 0.15
# Fewest completed trials PED-ANOVA is asked about: its top quantile needs two trials in it.
MIN_TRIALS_FOR_IMPORTANCE = 4
# Tolerance of the window test, relative to the range: params stored as floats round-trip exactly
# in SQLite but not always through log().
_REL_TOL = 1e-9
# PED-ANOVA warns on every call when a hyperparameter has few trials per regime (any young study);
# the server's console (that of `rnntune up`) is not the place for it.
warnings.filterwarnings("ignore", message=r"Some regimes for parameter", category=UserWarning)


@dataclass(frozen=True)
class Window:
    """The neighbourhood's bounds on one hyperparameter.

    `half_width` is on the scaled axis (log for log params); `low`/`high` are the same bounds in
    the hyperparameter's own units, clipped to its range, for display.
    """

    spec: ParamSpec
    center: Any
    half_width: float
    low: Any
    high: Any

    def contains(self, value: Any) -> bool:
        if not self.spec.numeric:
            return value == self.center
        distance = abs(self.spec.scaled(value) - self.spec.scaled(self.center))
        return distance <= self.half_width + _REL_TOL * max(self.spec.scaled_width, 1.0)


def windows(best: TrialRecord, fraction: float) -> dict[str, Window]:
    """One window per hyperparameter of the best trial: `fraction` of its range either side."""
    out = {}
    for name, spec in best.specs.items():
        center = best.params[name]
        if not spec.numeric:
            out[name] = Window(spec=spec, center=center, half_width=0.0, low=center, high=center)
            continue
        half = fraction * spec.scaled_width
        lo, hi = spec.scaled(center) - half, spec.scaled(center) + half
        unscale = math.exp if spec.log else float
        out[name] = Window(
            spec=spec,
            center=center,
            half_width=half,
            low=max(spec.low, unscale(lo)),
            high=min(spec.high, unscale(hi)),
        )
    return out


def neighbourhood(
    best: TrialRecord, completed: list[TrialRecord], fraction: float
) -> list[TrialRecord]:
    """Completed trials other than the best with every hyperparameter inside its window.

    A trial that lacks one of the best trial's hyperparameters (a conditional one) is outside.
    """
    bounds = windows(best, fraction)
    return [
        trial
        for trial in completed
        if trial.number != best.number
        and all(name in trial.params and w.contains(trial.params[name]) for name, w in bounds.items())
    ]


@lru_cache(maxsize=1024)
def _distribution(spec: ParamSpec) -> BaseDistribution:
    if spec.kind == "categorical":
        return CategoricalDistribution(list(spec.choices))
    if spec.kind == "int":
        step = int(spec.step or 1)
        return IntDistribution(int(spec.low), int(spec.high), log=spec.log, step=step)
    return FloatDistribution(spec.low, spec.high, log=spec.log, step=spec.step)


class _CompletedStudy:
    """The read-only part of `optuna.Study` that Optuna's importance evaluators use (`directions`,
    `_is_multi_objective`, `get_trials`), over trials we already hold. Copying 10,000 trials into
    an in-memory Optuna study first takes seconds (it deep-copies every trial); this takes none.
    Optuna is pinned (pyproject), and the sensitivity tests check the importances it returns."""

    def __init__(self, trials: list[FrozenTrial], direction: str) -> None:
        self._trials = trials
        self.directions = [StudyDirection.MINIMIZE if direction == "minimize" else StudyDirection.MAXIMIZE]

    def _is_multi_objective(self) -> bool:
        return False

    def get_trials(self, deepcopy: bool = False, states: Any = None) -> list[FrozenTrial]:
        if states is None:
            return list(self._trials)
        return [t for t in self._trials if t.state in states]


def _frozen(index: int, trial: TrialRecord) -> FrozenTrial:
    return FrozenTrial(
        number=trial.number,
        state=TrialState.COMPLETE,
        value=trial.value,
        datetime_start=None,
        datetime_complete=None,
        params=trial.params,
        distributions={name: _distribution(spec) for name, spec in trial.specs.items()},
        user_attrs={},
        system_attrs={},
        intermediate_values={},
        trial_id=index,
    )


def importances(completed: list[TrialRecord], direction: str) -> tuple[dict[str, float] | None, str | None]:
    """PED-ANOVA importances over completed trials, normalised to sum 1; (None, reason) if unfit.

    The top quantile is at least two trials (PED-ANOVA's minimum) and at most half of them.
    """
    n = len(completed)
    if n < MIN_TRIALS_FOR_IMPORTANCE:
        return None, (
            f"importances need at least {MIN_TRIALS_FOR_IMPORTANCE} completed trials; "
            f"the study has {n}"
        )
    study = _CompletedStudy([_frozen(i, t) for i, t in enumerate(completed)], direction)
    quantile = min(0.5, max(0.1, 2.0 / n))
    evaluator = optuna.importance.PedAnovaImportanceEvaluator(target_quantile=quantile)
    try:
        result = optuna.importance.get_param_importances(study, evaluator=evaluator)  # type: ignore[arg-type]
    except (ValueError, RuntimeError, ZeroDivisionError) as err:
        return None, f"importances could not be computed: {err}"
    return {name: float(value) for name, value in result.items()}, None


def analyse(
    completed: list[TrialRecord], direction: str, fraction: float = DEFAULT_FRACTION
) -> dict[str, Any] | None:
    """The whole Appendix 2.B analysis as JSON-ready data; None when no trial has completed.

    `completed` must be the study's completed trials, best first.
    """
    if not completed:
        return None
    best = completed[0]
    near = neighbourhood(best, completed, fraction)
    sign = 1.0 if direction == "minimize" else -1.0
    deltas = [sign * (t.value - best.value) for t in near]
    weights, reason = importances(completed, direction)
    bounds = windows(best, fraction)
    return {
        "fraction": fraction,
        "n_completed": len(completed),
        "best": {"number": best.number, "value": best.value, "params": best.params},
        "windows": {
            name: {**w.spec.as_dict(), "center": w.center, "window_low": w.low, "window_high": w.high}
            for name, w in bounds.items()
        },
        "neighbours": sorted(
            (
                {"number": t.number, "value": t.value, "delta": d, "params": t.params}
                for t, d in zip(near, deltas)
            ),
            key=lambda item: (item["delta"], item["number"]),
        ),
        "summary": {
            "count": len(near),
            "max_delta": max(deltas) if deltas else None,
            "mean_delta": statistics.fmean(deltas) if deltas else None,
            "median_delta": statistics.median(deltas) if deltas else None,
        },
        "importance_method": "ped_anova",
        "importances": weights,
        "importance_note": reason,
    }
