"""GP on half-rank-warped values: the better half kept as is, the worse half made Gaussian by rank.

Why: the trials better than the median carry the shape of the good region, which the GP must model
to refine the optimum, so they keep their values. The worse half is where outliers live (diverged
runs, noisy evaluations, ill-conditioned corners); each of those values is replaced by the normal
quantile of its rank, scaled to the spread of the better half, so none can dominate the fit.
This is the half-rank output warping of Vizier's GP bandit (Song et al., 2024). A full rank (copula)
warping was tried first and dropped: it flattens the good region, and after ~60 trials the GP
explored far corners instead of refining (docs/samplers.md).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from tuner.samplers.warped_gp import WarpedGPSampler


class HalfRankGPSampler(WarpedGPSampler):
    """`WarpedGPSampler` with the half-rank warping."""

    @staticmethod
    def warp(values: np.ndarray) -> np.ndarray:
        quantiles = (rankdata(values, method="average") - 0.5) / len(values)
        median = float(np.median(values))
        if not np.isfinite(median):  # half the trials or more diverged (inf): order is all we have
            return ndtri(quantiles)
        good = values <= median
        spread = float(np.sqrt(np.mean((values[good] - median) ** 2))) or 1.0
        # Worse-than-median values have quantiles > 0.5, so they land above the median, in order.
        return np.where(good, values, median + spread * ndtri(np.maximum(quantiles, 0.5)))
