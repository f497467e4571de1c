"""What a tracker logs, as plain values: the scalars of one evaluation and how a trial ended.

Pure rules over Ray Tune's result dicts and Optuna's finished trials, tested without Ray
(tests/tuner/sweeps/trackers/test_records.py). `val_loss` is the study's intermediate value at
the same step (the searcher stores the same finite value, once per step).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.storage import trial_attrs
from tuner.sweeps.trial.lifecycle import FINAL, METRIC

# The scalars of an evaluation that trackers log: the validation curve, the training loss,
# throughput and the learning rate (trainer/loop.py `_evaluation`).
SCALARS = (METRIC, "train_loss", "tokens_per_s", "lr")
# The trial's objective, logged once as it ends (what the study was told).
VALUE = "value"


@dataclass(frozen=True)
class Point:
    """One evaluation's scalars at its training step."""

    step: int
    scalars: dict[str, float]


@dataclass(frozen=True)
class Ending:
    """How a trial ended, as the study was told: its state (COMPLETE, PRUNED, FAIL), its value,
    its best checkpoint and its error."""

    state: str
    value: float | None = None
    checkpoint: str | None = None
    error: str | None = None


def point(result: Mapping[str, Any]) -> Point | None:
    """The scalars to log from one result: None for a trial's final summary (not an evaluation)
    or a result without a step; values that are missing or not finite are left out."""
    step = result.get("step")
    if result.get(FINAL) or step is None:
        return None
    scalars = {
        key: float(value)
        for key in SCALARS
        if isinstance(value := result.get(key), numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
    }
    return Point(int(step), scalars) if scalars else None


def hparams(params: Mapping[str, Any]) -> dict[str, float | int | str | bool]:
    """A trial's hyperparameters as trackers take them: scalars only, inactive ones (None) left out."""
    return {k: v for k, v in params.items() if isinstance(v, (bool, int, float, str))}


def ending(state: str, value: float | None, user_attrs: Mapping[str, Any]) -> Ending:
    """A finished trial's `Ending` from its state's name, value and user attributes."""
    finite = value is not None and math.isfinite(value)
    return Ending(
        state,
        float(value) if finite and value is not None else None,
        trial_attrs.CHECKPOINT.of(user_attrs) or None,
        trial_attrs.ERROR.of(user_attrs) or None,
    )
