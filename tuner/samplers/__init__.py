"""rnntune's Optuna samplers, one module per algorithm, and the registry sweeps pick them from.

`make_sampler(name, seed=...)` (`tuner.samplers.registry`) builds any of `SAMPLERS`;
`DEFAULT_SAMPLER` is the one sweeps use when none is given; `WARM_START_SAMPLERS` take
`prior_trials=[FrozenTrial, ...]` (a warm start from another study).
"""

from tuner.samplers.bohb_gp import BOHBRuleGPSampler
from tuner.samplers.half_rank_gp import HalfRankGPSampler
from tuner.samplers.multi_fidelity_gp import MultiFidelityGPSampler
from tuner.samplers.registry import (
    DEFAULT_SAMPLER,
    SAMPLERS,
    WARM_START_SAMPLERS,
    make_sampler,
    sampler_options,
)
from tuner.samplers.rung_rank_gp import RungRankGPSampler
from tuner.samplers.warped_gp import WarpedGPSampler

__all__ = [
    "DEFAULT_SAMPLER",
    "SAMPLERS",
    "WARM_START_SAMPLERS",
    "BOHBRuleGPSampler",
    "HalfRankGPSampler",
    "MultiFidelityGPSampler",
    "RungRankGPSampler",
    "WarpedGPSampler",
    "make_sampler",
    "sampler_options",
]
