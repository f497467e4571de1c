"""The measures every trial records under these names, whatever its study optimises.

`val_loss` is the 2TA validation loss (the objective of a one-objective study); `num_params` follows
from the config, so it is known before the trial trains; `tokens_per_s` is the training throughput
(median over evaluations), `peak_memory` the bytes at the trial's peak (CUDA's allocator on a GPU,
the process's resident peak on CPU) and `wall_time` the seconds from start to end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["minimize", "maximize"]


@dataclass(frozen=True)
class Measure:
    """One measure: its name, the direction that is better, its unit, and whether the config alone
    gives it (then a bound on it is checked before the trial starts)."""

    name: str
    better: Direction
    unit: str
    before_training: bool = False
    help: str = ""


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure("val_loss", "minimize", "nats/token", help="the 2TA validation loss (the trial's value)"),
        Measure(
            "num_params", "minimize", "weights", before_training=True, help="trainable weights of the model"
        ),
        Measure("tokens_per_s", "maximize", "tokens/s", help="training throughput, median over evaluations"),
        Measure(
            "peak_memory", "minimize", "bytes", help="peak memory of the trial (CUDA allocator, else RSS)"
        ),
        Measure("wall_time", "minimize", "s", help="seconds from the trial's start to its end"),
    )
}
PRIMARY = "val_loss"


def measure(name: str) -> Measure:
    """The measure called `name`; a ValueError naming the allowed ones otherwise."""
    try:
        return MEASURES[name]
    except KeyError:
        raise ValueError(f"unknown measure {name!r}: one of {', '.join(MEASURES)}") from None


def finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (not a bool), else None: how a measure is read
    from a result or an attribute, where a missing or diverged one may stand."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
