"""Constraints for rnntune's GP: constrained (q-)logEI over the values `Trial.set_constraint` stores.

Why: Optuna 5 stores a trial's constraints in its system attrs (`FrozenTrial.constraints`, feasible
when every value is <= 0), and its own TPE, GPSampler and NSGA-II read them there; rnntune's GP
read none, so under a bound (`num_params <= 24e6`) it kept proposing infeasible trials. As
Optuna's GPSampler does (Gardner et al. 2014; Optuna's logCEI), each constraint gets a GP of its
own, the improvement counts only over the best FEASIBLE observation, and a candidate's log
acquisition adds the log probability that every constraint holds. A trial without a constraint's
value (a prior trial, or one pruned before it was measured) is left out of that constraint's fit
and never counts as feasible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from optuna.trial import FrozenTrial

from tuner.upstream.optuna_private import gp, prior  # Optuna 5.0's GP internals


def constraint_matrix(trials: Sequence[FrozenTrial]) -> np.ndarray | None:
    """Rows of `trials`, one column per constraint key any of them has (NaN where a trial lacks
    it); None when none has a constraint (an unconstrained study)."""
    keys = sorted({k for t in trials for k in t.constraints})
    if not keys:
        return None
    return np.array([[t.constraints.get(k, np.nan) for k in keys] for t in trials], dtype=float)


def feasible(matrix: np.ndarray) -> np.ndarray:
    """Rows whose every constraint is known and <= 0."""
    return np.all(np.nan_to_num(matrix, nan=np.inf) <= 0, axis=1)


def constraint_models(
    matrix: np.ndarray, x: np.ndarray, is_categorical: np.ndarray, deterministic: bool
) -> tuple[list[Any], list[float]]:
    """One GP per constraint over the rows that have its value (standardized as Optuna does, sign
    flipped: larger is feasible) and the threshold each must exceed to be feasible."""
    models, thresholds = [], []
    for column in matrix.T:
        known = np.isfinite(column)
        values = -column[known]
        mean, std = float(values.mean()), max(float(values.std()), 1e-10)
        models.append(
            gp.fit_kernel_params(
                X=x[known],
                Y=(values - mean) / std,
                is_categorical=is_categorical,
                log_prior=prior.default_log_prior,
                minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR,
                gpr_cache=None,
                deterministic_objective=deterministic,
            )
        )
        thresholds.append(-mean / std)
    return models, thresholds
