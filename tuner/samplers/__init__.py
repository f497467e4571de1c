"""rnntune's Optuna samplers, one module per part, and the registry sweeps pick them from.

`make_sampler(name, seed=...)` (`tuner.samplers.registry`) builds any of `SAMPLERS`;
`DEFAULT_SAMPLER` is the one sweeps use when none is given (`DEFAULT_MULTI_OBJECTIVE_SAMPLER` with
several objectives, `default_sampler(n_objectives)`); `WARM_START_SAMPLERS` take
`prior_trials=[FrozenTrial, ...]` (a warm start from another study); `COST_AWARE_SAMPLERS` take
`cost_aware=True` (improvement per unit of expected cost, `tuner.samplers.cost`); `RETIRED_SAMPLERS` maps
retired names to their replacement. rnntune's GP is one class built from parts
(`GPSampler(warping=HalfRank(), fidelity=FidelityGP() | BOHBRule() | None, subset=Subset(...))`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tuner.samplers.bohb_rule import BOHBRule
from tuner.samplers.fidelity_gp import FidelityGP
from tuner.samplers.observations import FidelityModel, Observations
from tuner.samplers.registry import (
    COST_AWARE_SAMPLERS,
    DEFAULT_MULTI_OBJECTIVE_SAMPLER,
    DEFAULT_SAMPLER,
    RETIRED_SAMPLERS,
    SAMPLERS,
    WARM_START_SAMPLERS,
    default_sampler,
    make_sampler,
    sampler_options,
)
from tuner.samplers.subset import Subset
from tuner.samplers.warping import HalfRank, Warping

if TYPE_CHECKING:
    from tuner.samplers.gp import GPSampler

__all__ = [
    "COST_AWARE_SAMPLERS",
    "DEFAULT_MULTI_OBJECTIVE_SAMPLER",
    "DEFAULT_SAMPLER",
    "RETIRED_SAMPLERS",
    "SAMPLERS",
    "WARM_START_SAMPLERS",
    "BOHBRule",
    "FidelityGP",
    "FidelityModel",
    "GPSampler",
    "HalfRank",
    "Observations",
    "Subset",
    "Warping",
    "default_sampler",
    "make_sampler",
    "sampler_options",
]


def __getattr__(name: str) -> Any:
    """`GPSampler` is imported on first use (PEP 562): it imports PyTorch through Optuna's GP."""
    if name == "GPSampler":
        from tuner.samplers.gp import GPSampler

        return GPSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
