"""The cost model of cost-aware search: a GP over log(seconds per training step) of each trial.

Why: a Mogrifier LSTM with 6 rounds and full rank costs about twice what one with 0 rounds costs per
step (bench/step_costs.py), and every sampler counts trials, not seconds. Each trial records its
measured `seconds_per_step` (`COST_ATTR`, written by the sweep after its first evaluation, so RUNNING
trials count too); this part fits Optuna's own GP (the same kernel, priors and fit as the objective's)
to their log, standardized, on the inputs the objective's GP uses. `CostAware` turns it into the
expected improvement per unit of expected cost (Snoek et al. 2012, §3.2 "EI per second"): log EI(x)
minus log E[c(x)], with E[c] the mean of the log-normal the GP's log-cost posterior gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from optuna.trial import FrozenTrial

from tuner.storage import trial_attrs

COST_ATTR = trial_attrs.SECONDS_PER_STEP  # a trial's measured training seconds per step
MIN_TRIALS = 3  # trials with a measured cost before the model is fitted


def step_cost(result: Mapping[str, Any], before: float | None) -> float | None:
    """Seconds per training step from a trainer report (`elapsed_s` of training over `step`), when
    it moved more than 5% from `before` (what the trial recorded last); else None (nothing to write)."""
    elapsed, step = result.get("elapsed_s"), result.get("step")
    if not isinstance(elapsed, int | float) or not isinstance(step, int | float) or step <= 0 or elapsed <= 0:
        return None
    cost = float(elapsed) / float(step)
    if not math.isfinite(cost) or (before is not None and math.isclose(cost, before, rel_tol=0.05)):
        return None
    return round(cost, 6)


def measured_cost(trial: FrozenTrial) -> float | None:
    """The trial's measured seconds per step, or None when it has none (or a non-positive one)."""
    value = trial.user_attrs.get(COST_ATTR)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def costed_trials(trials: Sequence[FrozenTrial]) -> list[tuple[FrozenTrial, float]]:
    """The trials with a measured cost: finished ones and RUNNING ones (pending trials' costs count)."""
    return [(t, c) for t in trials if (c := measured_cost(t)) is not None]


@dataclass(frozen=True)
class LogCost:
    """A fitted log-cost GP over normalised inputs: `log_expected(x)` (torch, for the acquisition
    optimiser) and `seconds_per_step(x)` (numpy); `n` trials fitted."""

    gpr: Any  # optuna_private.gp.GPRegressor
    center: float  # mean of the fitted log costs
    scale: float  # their standard deviation (the GP fits standardized values)
    n: int

    def log_expected(self, x: Any) -> Any:
        """log E[cost(x)] of the log-normal posterior: μ + σ²/2 in log seconds (torch, differentiable)."""
        mean, var = self.gpr.posterior(x)
        return self.center + self.scale * mean + 0.5 * self.scale**2 * var

    def seconds_per_step(self, x: np.ndarray) -> np.ndarray:
        """Expected seconds per step at normalised points `x` (numpy, for reports and tests)."""
        import torch

        with torch.no_grad():
            return np.exp(self.log_expected(torch.from_numpy(np.atleast_2d(x))).numpy())


def fit_log_cost(x: np.ndarray, costs: Sequence[float], is_categorical: np.ndarray) -> LogCost | None:
    """Optuna's GP fitted to the standardized log `costs` at normalised inputs `x`; None with fewer
    than `MIN_TRIALS` costs or when they are all equal (nothing to tell candidates apart)."""
    if len(costs) < MIN_TRIALS:
        return None
    logs = np.log(np.asarray(costs, dtype=float))
    center, scale = float(logs.mean()), float(logs.std())
    if not scale > 1e-9:
        return None
    # Optuna 5.0's GP internals import PyTorch: imported when a cost is fitted, so a driver that
    # only records costs (`step_cost`, every sweep) does not load it.
    from tuner.upstream.optuna_private import gp, prior

    gpr = gp.fit_kernel_params(
        X=x,
        Y=(logs - center) / scale,
        is_categorical=is_categorical,
        log_prior=prior.default_log_prior,
        minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR,
        gpr_cache=None,
        deterministic_objective=False,  # a measured time: noisy
    )
    return LogCost(gpr=gpr, center=center, scale=scale, n=len(costs))


class CostAware:
    """Expected improvement per unit of expected cost: the acquisition's log EI minus log E[cost]
    (the cost model's mean log cost taken out, a constant that does not change the choice)."""

    @staticmethod
    def per_unit_cost(log_acqf: Callable[[Any], Any], model: LogCost) -> Callable[[Any], Any]:
        """`log_acqf` (log EI or q-log EI) divided by the expected cost, in log space."""

        def evaluate(x: Any) -> Any:
            return log_acqf(x) - (model.log_expected(x) - model.center)

        return evaluate
