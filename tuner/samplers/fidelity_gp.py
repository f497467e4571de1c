"""A GP over (configuration, training step): every trial at the step it reached (MOBSTER-like).

Why: BOHB's rule (`tuner.samplers.bohb_rule`) fits one budget, so once enough trials are COMPLETE
it drops every pruned trial, most of the sweep. Here, once `n_startup_trials` trials are COMPLETE,
each trial is one observation at its last reported step, with the step as one more GP input (log
scale, Matérn ARD like the others), as MOBSTER pairs asynchronous Hyperband with a GP over
configuration and resource (Klein et al. 2020, §3). Before the fit, a value at step s is moved by
the median drop from s to the final value among COMPLETE trials that reported both, so the GP sees
one surface and its step length scale only has to carry what the shift misses (rank changes
between steps). The sampler scores candidates at the full step count; RUNNING trials count both as
observations (their last value) and as pending at full length for q-logEI, since they go on. Until
then BOHB's rule decides (one rung, every trial that reached it): with few COMPLETE trials the
median drops are not yet known, and bench/multifidelity.py measured the rule better at small
budgets.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.bohb_rule import BOHBRule, user_attrs_of
from tuner.samplers.observations import FidelityModel, Observations
from tuner.samplers.warping import Warping
from tuner.storage import study_attrs

MIN_PAIRS = 3  # COMPLETE trials needed at a step before its median drop is trusted


class FidelityGP(FidelityModel):
    """BOHB's rule until `enough` trials are COMPLETE, then every trial at its last step."""

    def observations(
        self, study: Study, trials: list[FrozenTrial], sign: float, warp: Warping, enough: int
    ) -> Observations:
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        if len(complete) < enough:
            return BOHBRule().observations(study, trials, sign, warp, enough)
        full = full_steps(study, trials)
        points: list[tuple[FrozenTrial, int | None, float]] = []
        for t in trials:
            if t.state == TrialState.COMPLETE and t.value is not None:
                points.append((t, full, sign * t.value))
            elif t.intermediate_values:
                step = max(t.intermediate_values)
                points.append((t, step, sign * t.intermediate_values[step]))
        drop = median_drops(trials, sign)
        values = [v - (drop.get(at, 0.0) if at is not None and at != full else 0.0) for _, at, v in points]
        chosen = [t for t, _, _ in points]
        minimised = warp(np.array(values, dtype=float))
        if full is None:
            return Observations(chosen, minimised)
        # The step is a log-scale input: a report at step 0 (allowed in Optuna) counts as step 1.
        top = max(full, 1)
        steps = [top if at is None else min(max(int(at), 1), top) for _, at, _ in points]
        return Observations(chosen, minimised, steps, top)


def full_steps(study: Study, trials: list[FrozenTrial]) -> int | None:
    """The full run's length in steps: the study's task (`max_steps`), else the last step any
    COMPLETE trial reported, else the last step any trial reported; None without reports."""
    task = study_attrs.TASK.of(user_attrs_of(study)) or {}
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
