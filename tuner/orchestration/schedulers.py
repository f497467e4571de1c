"""Early-stopping schedulers on the reported 2TA validation loss, measured in training steps.

The 2TA loss is an online estimate of what the trial's averaged weights achieve, which is what
makes comparing trials at equal steps (and so stopping the laggards) sound (thesis §3.4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, MedianStoppingRule, TrialScheduler

from trainer import TrainConfig

TIME_ATTR = "step"


def _setting(fixed: Mapping[str, Any], name: str) -> int:
    return int(fixed.get(name, TrainConfig.model_fields[name].default))


def _round_up(value: float, multiple: int) -> int:
    return max(multiple, int(math.ceil(value / multiple)) * multiple)


def make_scheduler(name: str, fixed: Mapping[str, Any]) -> TrialScheduler:
    """`asha`, `median` or `none`, with milestones on the evaluation grid of the task's settings.

    ASHA's first rung is at about a quarter of `max_steps`, reduction factor 3. Median stopping
    compares from a quarter of the run on and never pauses trials (pausing would restart a
    trainer that keeps its own checkpoints).
    """
    max_steps, every = _setting(fixed, "max_steps"), _setting(fixed, "eval_every")
    grace = _round_up(max_steps / 4, every)
    if name == "asha":
        return ASHAScheduler(
            time_attr=TIME_ATTR,
            max_t=max_steps,
            grace_period=min(grace, max_steps),
            reduction_factor=3,
            stop_last_trials=False,
        )
    if name == "median":
        return MedianStoppingRule(
            time_attr=TIME_ATTR,
            grace_period=min(grace, max_steps),
            min_samples_required=3,
            min_time_slice=math.inf,
            hard_stop=True,
        )
    if name == "none":
        return FIFOScheduler()
    raise ValueError(f"scheduler must be one of asha, median, none, not {name!r}")
