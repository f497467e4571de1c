"""The trained-model kind: a study of a checkpoint (`checkpoint` in the spec), each trial one
dynamic evaluation of it under the trial's settings; nothing trains, so nothing is stopped early."""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from tuner.policies.kinds.base import SchedulerInputs, SweepKind

SCHEDULER = "none"  # what the header shows: every trial runs to its end


def _fifo(inputs: SchedulerInputs) -> TrialScheduler:
    return FIFOScheduler()


def _line(spec: Any, max_steps: int, eval_every: int) -> str:
    return f"early stopping: {SCHEDULER} (each trial evaluates {spec.checkpoint} once, trains nothing)"


KIND = SweepKind(
    SCHEDULER,
    "trained_model",
    "dynamic evaluation of a trained model's checkpoint under each trial's settings",
    _fifo,
    _line,
)
