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

from tuner.storage import trial_attrs
from tuner.storage.attr_registry import Key

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


PRIMARY = "val_loss"
_HOLDS = {a.key: a.holds for a in trial_attrs.ALL}


def _stored(key: Key[float], better: Direction, unit: str, before_training: bool = False) -> Measure:
    """The measure stored as trial attribute `key`: its name and help are the attribute's."""
    return Measure(str(key), better, unit, before_training, _HOLDS[key])


# The trial's value, then the measures it stores as attributes (trial_attrs.MEASURE_KEYS).
_TRAITS: dict[str, tuple[Direction, str, bool]] = {
    trial_attrs.NUM_PARAMS: ("minimize", "weights", True),
    trial_attrs.TOKENS_PER_S: ("maximize", "tokens/s", False),
    trial_attrs.PEAK_MEMORY: ("minimize", "bytes", False),
    trial_attrs.WALL_TIME: ("minimize", "s", False),
}
MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure(PRIMARY, "minimize", "nats/token", help="the 2TA validation loss (the trial's value)"),
        *(_stored(key, *_TRAITS[key]) for key in trial_attrs.MEASURE_KEYS),
    )
}


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
