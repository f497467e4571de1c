"""GP over (configuration, training step): every trial at the step it reached (MOBSTER-like).

Why: BOHB's rule (`bohb_gp`) fits one budget, so once enough trials are COMPLETE it drops every
pruned trial, most of the sweep. Here, once `n_startup_trials` trials are COMPLETE, each trial is
one observation at its last reported step, with the step as one more GP input (log scale, Matérn
ARD like the others), as MOBSTER pairs asynchronous Hyperband with a GP over configuration and
resource (Klein et al. 2020, §3). Before the fit, a value at step s is moved by the median drop
from s to the final value among COMPLETE trials that reported both, so the GP sees one surface and
its step length scale only has to carry what the shift misses (rank changes between steps). The
acquisition scores candidates at the full step count; RUNNING trials count both as observations
(their last value) and as pending at full length for q-logEI, since they go on. Until then
BOHB's rule decides (one rung, every trial that reached it): with few COMPLETE trials the median
drops are not yet known, and bench/multifidelity.py measured the rule better at small budgets.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.bohb_gp import BOHBRuleGPSampler

FIDELITY = "rnntune:step"  # the extra GP input's name; no search space has a parameter with ':'
MIN_PAIRS = 3  # COMPLETE trials needed at a step before its median drop is trusted


class FidelityGPSampler(BOHBRuleGPSampler):
    """BOHB's rule until the full budget has enough trials, then a GP over (configuration, step)
    with candidates scored at the full length."""

    _full: int | None = None  # the full run's steps, as the last targets() call found it
    _pinned = False  # whether the last GP input is the step (set by gp_inputs)

    def targets(
        self, study: Study, trials: list[FrozenTrial], sign: float
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        full = full_steps(study, trials)
        self._full = full
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        if len(complete) < self._min_observations:
            return super().targets(study, trials, sign)
        points: list[tuple[FrozenTrial, int | None, float]] = []
        for t in trials:
            if t.state == TrialState.COMPLETE and t.value is not None:
                points.append((t, full, sign * t.value))
            elif t.intermediate_values:
                step = max(t.intermediate_values)
                points.append((t, step, sign * t.intermediate_values[step]))
        if not points:
            return [], np.empty(0)
        drop = median_drops(trials, sign)
        chosen, values = [], []
        for t, at, value in points:
            proxy = copy.copy(t)
            proxy._system_attrs = {**t.system_attrs, FIDELITY: at}
            chosen.append(proxy)
            values.append(value - (drop.get(at, 0.0) if at is not None and at != full else 0.0))
        return chosen, self.warp(np.array(values, dtype=float))

    def gp_inputs(
        self,
        study: Study,
        fitted: list[FrozenTrial],
        pending: list[FrozenTrial],
        space: dict[str, BaseDistribution],
    ) -> tuple[list[FrozenTrial], list[FrozenTrial], dict[str, BaseDistribution]]:
        full = self._full if len(study.directions) == 1 else None  # multi-objective: no targets()
        steps = [t.system_attrs.get(FIDELITY, full) for t in fitted]  # prior trials: full length
        # The step is a log-scale input: a report at step 0 (allowed in Optuna) counts as step 1.
        steps = [None if s is None else max(int(s), 1) for s in steps]
        full = None if full is None else max(full, 1)
        known = [s for s in steps if s is not None]
        self._pinned = full is not None and bool(known) and min(known) < full
        if full is None or not self._pinned:
            return fitted, pending, space  # one fidelity: the step would be a constant input
        low = min(known)
        still_running = [t for t in fitted if t.state == TrialState.RUNNING]
        return (
            [_at(t, full if s is None else min(s, full)) for t, s in zip(fitted, steps)],
            [_at(t, full) for t in pending + still_running],
            {**space, FIDELITY: FloatDistribution(low, full, log=True)},
        )

    # GPSampler's private hook again (see WarpedGPSampler): the step input is pinned to the full
    # length, so the acquisition ranks candidates by their predicted final value.
    def _optimize_acqf(self, acqf: Any, best_params: np.ndarray | None) -> np.ndarray:
        if self._pinned:
            acqf.eval_acqf = _pinned_last(acqf.eval_acqf)
            if best_params is not None:
                best_params = best_params.copy()
                best_params[:, -1] = 1.0
        return super()._optimize_acqf(acqf, best_params)


def full_steps(study: Study, trials: list[FrozenTrial]) -> int | None:
    """The full run's length in steps: the study's task (`max_steps`), else the last step any
    COMPLETE trial reported, else the last step any trial reported; None without reports."""
    try:
        task = study.user_attrs.get("task") or {}
    except AttributeError:  # HyperbandPruner's bracket view has no user attrs
        task = {}
    if "max_steps" in task:
        return int(task["max_steps"])
    complete = [
        max(t.intermediate_values) for t in trials if t.state == TrialState.COMPLETE and t.intermediate_values
    ]
    if complete:
        return max(complete)
    reported = [max(t.intermediate_values) for t in trials if t.intermediate_values]
    return max(reported) if reported else None


def median_drops(trials: list[FrozenTrial], sign: float) -> dict[int, float]:
    """Per step s: the median of (value at s − final value), to be minimised (`sign` applied), over
    the COMPLETE trials that reported s; only steps with at least `MIN_PAIRS` of them."""
    pairs: dict[int, list[float]] = defaultdict(list)
    for t in trials:
        if t.state != TrialState.COMPLETE or t.value is None:
            continue
        for step, value in t.intermediate_values.items():
            if np.isfinite(value) and np.isfinite(t.value):
                pairs[step].append(sign * value - sign * t.value)
    return {step: float(np.median(d)) for step, d in pairs.items() if len(d) >= MIN_PAIRS}


def _at(trial: FrozenTrial, step: int) -> FrozenTrial:
    proxy = copy.copy(trial)
    proxy._params = {**trial.params, FIDELITY: float(step)}
    return proxy


def _pinned_last(eval_acqf: Any) -> Any:
    """`eval_acqf` with the last normalised input (the step) set to 1, the full length."""
    import torch  # Optuna's GP already imported it

    def evaluate(x: torch.Tensor) -> torch.Tensor:
        return eval_acqf(torch.cat([x[..., :-1], torch.ones_like(x[..., -1:])], -1))

    return evaluate
