"""Early-stopping schedulers on the reported 2TA validation loss, measured in training steps.

The 2TA loss is an online estimate of what the trial's averaged weights achieve, which is what
makes comparing trials at equal steps (and so stopping the laggards) sound (thesis §3.4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ray.tune.schedulers import (
    ASHAScheduler,
    FIFOScheduler,
    MedianStoppingRule,
    TrialScheduler,
)

from trainer import TrainConfig
from tuner.objectives.goals import Goals
from tuner.policies.early_stopping import SCHEDULERS, TIME_RESULT_KEY, EarlyStopping
from tuner.policies.pareto_rungs import ParetoASHA
from tuner.policies.rank_agreement import AdaptiveASHA, Curves


def _setting(fixed: Mapping[str, Any], name: str) -> int:
    return int(fixed.get(name, TrainConfig.model_fields[name].default))


def make_scheduler(
    name: str,
    fixed: Mapping[str, Any],
    policy: EarlyStopping | None = None,
    history: Curves | None = None,
    goals: Goals | None = None,
) -> TrialScheduler:
    """One of SCHEDULERS, with milestones on the evaluation grid of the task's settings.

    ASHA's grace period, reduction factor and brackets come from the study's early-stopping `policy`
    (`tuner.policies.early_stopping`, the same settings the multi-fidelity sampler reads); `adaptive`
    starts from the rank agreement of `history`, the study's finished trials' curves. Median stopping
    compares from the policy's grace period on and never pauses trials (pausing would restart a
    trainer that keeps its own checkpoints).
    """
    max_steps, every = _setting(fixed, "max_steps"), _setting(fixed, "eval_every")
    policy = (policy or EarlyStopping()).resolved(max_steps, every)
    grace = int(policy.grace_steps or every)
    if goals is not None and goals.several and name in ("adaptive", "asha"):
        # Several objectives: a trial stops at a rung only when dominated there (MO-ASHA).
        return ParetoASHA(
            [(o.name, o.direction) for o in goals.objectives],
            max_steps=max_steps,
            grace_period=grace,
            reduction_factor=policy.reduction_factor,
            brackets=policy.brackets or 1,
        )
    if name == "adaptive":
        return AdaptiveASHA(policy, max_steps, every, history)
    if name == "asha":
        return ASHAScheduler(
            time_attr=TIME_RESULT_KEY,
            max_t=max_steps,
            grace_period=grace,
            reduction_factor=policy.reduction_factor,
            brackets=policy.brackets or 1,
            stop_last_trials=False,
        )
    if name == "median":
        return MedianStoppingRule(
            time_attr=TIME_RESULT_KEY,
            grace_period=grace,
            min_samples_required=3,
            min_time_slice=math.inf,  # type: ignore[arg-type]  # Ray annotates int; inf = never pause
            hard_stop=True,
        )
    if name == "none":
        return FIFOScheduler()
    raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, not {name!r}")
