"""A trainer setting's value under a task's fixed settings: the one way to read it.

A space fixes some `TrainConfig` settings and leaves the rest at the trainer's defaults; every
reader of a fixed setting (the eval grid, a condition's parent, the study comparison) asks here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainer.config import TrainConfig


def setting_default(name: str) -> Any:
    """The trainer's default for setting `name` (`TrainConfig`'s field default)."""
    return TrainConfig.model_fields[name].get_default(call_default_factory=True)


def fixed_setting(fixed: Mapping[str, Any], name: str) -> Any:
    """Setting `name` as a task runs it: its fixed value, else the trainer's default."""
    return fixed[name] if name in fixed else setting_default(name)


def max_steps_and_eval_every(fixed: Mapping[str, Any]) -> tuple[int, int]:
    """The task's (max_steps, eval_every): the grid of steps its evaluations, and so the
    early-stopping rungs and population intervals, lie on."""
    return int(fixed_setting(fixed, "max_steps")), int(fixed_setting(fixed, "eval_every"))
