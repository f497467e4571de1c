"""GP on log-regret-like values: log(y − min y + δ), δ a hundredth of the median gap to the best.

Why: validation losses and benchmark functions span orders of magnitude between good and bad
regions; on a log scale multiplicative noise becomes additive (what a GP assumes) and the good region
is no longer a flat floor.
"""

from __future__ import annotations

import numpy as np

from tuner.samplers.base import WarpedGPSampler


class LogWarpedGPSampler(WarpedGPSampler):
    """`WarpedGPSampler` with a shifted log warping."""

    @staticmethod
    def warp(values: np.ndarray) -> np.ndarray:
        finite = np.isfinite(values)
        if not finite.any():
            return values
        gaps = np.where(finite, values - values[finite].min(), np.inf)
        delta = max(1e-2 * float(np.median(gaps[finite])), 1e-12)
        return np.log(gaps + delta)
