"""Hyperparameter importances (Optuna's PED-ANOVA) over every finished trial at one fidelity, with
bootstrap confidence intervals.

Under ASHA most trials stop early, so the COMPLETE trials alone are often too few to say anything.
Trials are only comparable at the same training step, so the importances use one fidelity: the
COMPLETE trials' objective (`step` None, the highest fidelity) or the validation loss every included
trial reported at one evaluation step. The rule is BOHB's (Falkner et al. 2018): the highest
fidelity with enough observations, here at least `2 (d + 1)` trials for `d` hyperparameters (twice
BOHB's bare minimum, since PED-ANOVA splits the trials into a top quantile and the rest); if no
fidelity has that many, the one with the most trials (the higher on ties).
The confidence intervals are percentile bootstrap intervals over trials at that fidelity: a fixed
number of resamples with a fixed seed, so the same study always gives the same interval.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.analysis.reads import ParamSpec, TrialRecord

METHOD = "ped_anova"
# Fewest trials PED-ANOVA is asked about: its top quantile needs two trials in it.
MIN_TRIALS_FOR_IMPORTANCE = 4
BOOTSTRAP_RESAMPLES = 100
# Trials drawn per resample at most: beyond this the bootstrap draws m of n and rescales (see
# `with_intervals`), which bounds its cost at about 100 x 10 ms of CPU whatever the study's size.
MAX_RESAMPLE_SIZE = 100
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.9
# PED-ANOVA warns on every call when a hyperparameter has few trials per regime (any young study)
# or when its two quantiles select the same trials (a tiny bootstrap resample); the server's console
# (that of `rnntune up`) is not the place for either.
warnings.filterwarnings("ignore", message=r"Some regimes for parameter", category=UserWarning)
warnings.filterwarnings("ignore", message=r"Target and region quantiles", category=UserWarning)
_ERRORS = (ValueError, RuntimeError, ZeroDivisionError, FloatingPointError)


@dataclass(frozen=True)
class Fidelity:
    """The trials the importances rest on and each one's value at `step` (None: the objective)."""

    step: int | None
    trials: tuple[TrialRecord, ...]
    values: tuple[float, ...]
    min_trials: int

    @property
    def n_complete(self) -> int:
        return sum(t.state == "COMPLETE" for t in self.trials)

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "kind": "objective" if self.step is None else "step",
            "n_trials": len(self.trials),
            "n_complete": self.n_complete,
            "n_pruned": len(self.trials) - self.n_complete,
            "min_trials": self.min_trials,
        }


def choose_fidelity(completed: Sequence[TrialRecord], pruned: Sequence[TrialRecord]) -> Fidelity:
    """The highest fidelity with at least `2 (d + 1)` trials, else the one with the most trials.

    `completed` count at their objective and at every step they reported; `pruned` at every step
    they reported (the last being the rung where ASHA stopped them).
    """
    names = {name for trial in (*completed, *pruned) for name in trial.params}
    need = max(MIN_TRIALS_FOR_IMPORTANCE, 2 * (len(names) + 1))
    objectives = [(t, float(t.value)) for t in completed]  # type: ignore[arg-type]
    levels: dict[int | None, list[tuple[TrialRecord, float]]] = {None: objectives}
    if len(completed) >= need:  # the highest fidelity has enough: no need to read the curves
        return Fidelity(
            step=None, trials=tuple(completed), values=tuple(v for _, v in objectives), min_trials=need
        )
    for trial in (*completed, *pruned):
        for step, value in trial.curve:
            if value is not None and math.isfinite(value):
                levels.setdefault(step, []).append((trial, value))
    order = [None, *sorted((s for s in levels if s is not None), reverse=True)]
    enough = [level for level in order if len(levels[level]) >= need]
    # else the first of the largest, which is the highest fidelity among them
    chosen = enough[0] if enough else max(order, key=lambda level: len(levels[level]))
    rows = levels[chosen]
    return Fidelity(
        step=chosen,
        trials=tuple(t for t, _ in rows),
        values=tuple(v for _, v in rows),
        min_trials=need,
    )


@lru_cache(maxsize=1024)
def _distribution(spec: ParamSpec) -> BaseDistribution:
    if spec.kind == "categorical":
        return CategoricalDistribution(list(spec.choices))
    assert spec.low is not None and spec.high is not None  # numeric specs carry both bounds
    if spec.kind == "int":
        step = int(spec.step or 1)
        return IntDistribution(int(spec.low), int(spec.high), log=spec.log, step=step)
    return FloatDistribution(spec.low, spec.high, log=spec.log, step=spec.step)


class _TrialsStudy:
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


def _frozen(index: int, trial: TrialRecord, value: float) -> FrozenTrial:
    """`trial` as a COMPLETE FrozenTrial whose value is its value at the chosen fidelity."""
    return FrozenTrial(
        number=trial.number,
        state=TrialState.COMPLETE,
        value=value,
        datetime_start=None,
        datetime_complete=None,
        params=trial.params,
        distributions={name: _distribution(spec) for name, spec in trial.specs.items()},
        user_attrs={},
        system_attrs={},
        intermediate_values={},
        trial_id=index,
    )


def _ped_anova(trials: list[FrozenTrial], direction: str) -> dict[str, float]:
    """Normalised PED-ANOVA importances; the top quantile is 2 trials at least, half at most."""
    quantile = min(0.5, max(0.1, 2.0 / len(trials)))
    evaluator = optuna.importance.PedAnovaImportanceEvaluator(target_quantile=quantile)
    study = _TrialsStudy(trials, direction)
    result = optuna.importance.get_param_importances(study, evaluator=evaluator)  # type: ignore[arg-type]
    return {name: float(value) for name, value in result.items()}


def _too_few(fidelity: Fidelity) -> str | None:
    n = len(fidelity.trials)
    if n >= MIN_TRIALS_FOR_IMPORTANCE:
        return None
    return f"importances need at least {MIN_TRIALS_FOR_IMPORTANCE} finished trials at one fidelity; the study has {n}"


def estimate(fidelity: Fidelity, direction: str) -> tuple[dict[str, float] | None, str | None]:
    """PED-ANOVA importances at `fidelity`, normalised to sum 1; (None, reason) if unfit."""
    reason = _too_few(fidelity)
    if reason is not None:
        return None, reason
    frozen = [_frozen(i, t, v) for i, (t, v) in enumerate(zip(fidelity.trials, fidelity.values))]
    try:
        return _ped_anova(frozen, direction), None
    except _ERRORS as err:
        return None, f"importances could not be computed: {err}"


def with_intervals(
    fidelity: Fidelity,
    direction: str,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
    max_resample_size: int = MAX_RESAMPLE_SIZE,
) -> dict[str, Any]:
    """Importances with percentile bootstrap intervals over trials, as JSON-ready data.

    Each resample draws m trials with replacement (m = n, the fidelity's trial count, up to
    `max_resample_size`) and recomputes the importances; a hyperparameter missing from a resample
    (a conditional one) counts 0 there. Where m < n the resamples' spread around the full-sample
    importance is shrunk by sqrt(m / n), the m-out-of-n bootstrap (Bickel, Götze & van Zwet 1997).
    The interval is widened to hold the full-sample importance where the resamples lie all on one
    side of it (the bootstrap's bias on a small sample), so `ci_low <= importance <= ci_high`.
    """
    point, reason = estimate(fidelity, direction)
    n = len(fidelity.trials)
    m = min(n, max_resample_size)
    out: dict[str, Any] = {
        "method": METHOD,
        "fidelity": fidelity.as_dict(),
        "n_trials": n,
        "step": fidelity.step,
        "bootstrap": {"resamples": resamples, "resample_size": m, "seed": seed, "confidence": confidence},
        "importances": None,
        "note": reason,
    }
    if point is None:
        return out
    rows_at = list(zip(fidelity.trials, fidelity.values))
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, m))
    samples: dict[str, list[float]] = {name: [] for name in point}
    for row in draws:
        # each drawn trial gets its own id: PED-ANOVA tells trials apart by id, and a resample
        # holds the same trial several times
        resample = [_frozen(k, *rows_at[j]) for k, j in enumerate(row)]
        try:
            result = _ped_anova(resample, direction)
        except _ERRORS:
            continue
        for name, drawn in samples.items():
            drawn.append(result.get(name, 0.0))
    tail, shrink = (1.0 - confidence) / 2, math.sqrt(m / n)
    rows = []
    for name, value in point.items():
        drawn = samples[name]
        low, high = np.quantile(drawn, [tail, 1.0 - tail]).tolist() if drawn else (value, value)
        low, high = value + shrink * (low - value), value + shrink * (high - value)
        rows.append(
            {"name": name, "importance": value, "ci_low": min(low, value), "ci_high": max(high, value)}
        )
    out["importances"] = rows
    out["bootstrap"]["resamples_used"] = min((len(s) for s in samples.values()), default=0)
    return out
