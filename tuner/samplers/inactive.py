"""Inactive parameters in the GP's data: one fixed value outside the range plays the indicator's role.

Why: a trial without `mogrifier_rank` (rounds = 0) still says a lot about the other parameters, so
the GP should fit it; but no value inside rank's range is true for it. Each numeric parameter a
trial lacks gets the raw value that Optuna's GP normalises to `INACTIVE_AT` (−0.5, outside the
acquisition optimiser's [0, 1]): all inactive points sit together, one length scale away from every
active value, and the optimiser never proposes that value. The raw value is computed back on the
parameter's own scale (log, and the half-step padding Optuna adds around integer and stepped
ranges). A categorical parameter a trial lacks gets its own category: index −1, which differs from
every choice under the GP's Hamming kernel, so inactive points match each other and no choice.
The GP only ever sees copies of the stored FrozenTrials (`with_params`).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import FrozenTrial

from tuner.samplers.union_space import active_params

INACTIVE_AT = -0.5  # normalised coordinate of an inactive numeric parameter
INACTIVE = object()  # the value a categorical parameter takes when inactive (index −1 to the GP)


class CategoricalWithInactive(CategoricalDistribution):
    """A categorical whose internal representation of `INACTIVE` is −1 (no choice's index)."""

    def to_internal_repr(self, param_value_in_external_repr: Any) -> float:
        if param_value_in_external_repr is INACTIVE:
            return -1.0
        return super().to_internal_repr(param_value_in_external_repr)


def gp_space(space: dict[str, BaseDistribution]) -> dict[str, BaseDistribution]:
    """`space` as handed to Optuna's GP internals: categoricals accept `INACTIVE`."""
    return {
        name: CategoricalWithInactive(d.choices) if isinstance(d, CategoricalDistribution) else d
        for name, d in space.items()
    }


def inactive_value(distribution: BaseDistribution) -> Any:
    """The raw value Optuna's GP search space normalises to `INACTIVE_AT` for `distribution`."""
    if isinstance(distribution, CategoricalDistribution):
        return INACTIVE
    assert isinstance(distribution, (FloatDistribution, IntDistribution))
    step = float(distribution.step or 0.0)
    low, high = distribution.low - 0.5 * step, distribution.high + 0.5 * step  # as Optuna pads
    if distribution.log:
        return math.exp(math.log(low) + INACTIVE_AT * (math.log(high) - math.log(low)))
    return low + INACTIVE_AT * (high - low)


def with_params(
    trial: FrozenTrial, space: dict[str, BaseDistribution], values: np.ndarray | None = None
) -> FrozenTrial:
    """A copy of `trial` with every parameter of `space` set (inactive ones imputed) and, when
    given, `values` as its objective values."""
    active = active_params(trial, space)
    proxy = copy.copy(trial)
    proxy._params = {n: active[n] if n in active else inactive_value(d) for n, d in space.items()}
    if values is not None:
        proxy._values = [float(v) for v in values]
    return proxy


def warm_start_points(normalized: np.ndarray | None, gp_space: Any) -> np.ndarray | None:
    """The acquisition optimiser's starting points with inactive coordinates moved into the range:
    the middle (the grid value nearest it for a discrete parameter, the first category for a
    categorical one), so it never starts outside [0, 1] or off the grid. `gp_space` is Optuna's
    GP search space (`optuna._gp.search_space.SearchSpace`)."""
    if normalized is None:
        return None
    inside = np.where(gp_space.is_categorical, 0.0, 0.5)
    for i, grid in zip(gp_space.discrete_indices, gp_space.get_choices_of_discrete_params()):
        if not gp_space.is_categorical[i]:
            inside[i] = grid[np.argmin(np.abs(grid - 0.5))]
    return np.where(normalized < 0.0, inside, normalized)
