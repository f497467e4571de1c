"""rnntune's own Optuna samplers, one module per algorithm, all behind `WarpedGPSampler`."""

from tuner.samplers.base import WarpedGPSampler
from tuner.samplers.half_rank_gp import HalfRankGPSampler

__all__ = ["HalfRankGPSampler", "WarpedGPSampler"]
