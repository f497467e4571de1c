"""GP on Gaussian ranks: each value becomes the normal quantile of its rank (a Gaussian copula).

Why: only the order of the trials is kept, so outliers (diverged runs, heavy-tailed noise) cannot
dominate the fit, and the marginal distribution of the targets is exactly what a GP assumes
(the Gaussian-copula transform of Salinas et al., 2020, "A quantile-based approach for
hyperparameter transfer learning").
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from tuner.samplers.base import WarpedGPSampler


class RankWarpedGPSampler(WarpedGPSampler):
    """`WarpedGPSampler` with a rank-to-normal-quantile warping."""

    @staticmethod
    def warp(values: np.ndarray) -> np.ndarray:
        ranks = rankdata(values, method="average")  # inf (diverged) ranks last, as it should
        return ndtri((ranks - 0.5) / len(values))
