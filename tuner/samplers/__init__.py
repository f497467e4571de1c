"""rnntune's own Optuna samplers, one module per algorithm, all behind `WarpedGPSampler`."""

from tuner.samplers.base import WarpedGPSampler
from tuner.samplers.rank_gp import RankWarpedGPSampler

__all__ = ["RankWarpedGPSampler", "WarpedGPSampler"]
