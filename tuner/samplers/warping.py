"""Output warpings for rnntune's GP: a monotone map of the objective values before the fit.

Why: Optuna's GPSampler only standardizes the objective, so a few bad trials (a diverged run, an
ill-conditioned corner of the space) dominate the Gaussian-process fit and flatten the region near
the best trials, where the next suggestions matter. Warping the values with a monotone map keeps
the order of the trials and lets the GP model the good region (HEBO, Cowen-Rivers et al. 2022, and
Vizier's GP bandit, Song et al. 2024, both warp outputs). A warping is a part of
`tuner.samplers.gp.GPSampler` (``warping=HalfRank()``); it holds no state.
"""

from __future__ import annotations

import abc

import numpy as np


class Warping(abc.ABC):
    """A monotone map of 1-D values to be minimised onto a scale the GP fits well."""

    @abc.abstractmethod
    def __call__(self, values: np.ndarray) -> np.ndarray:
        """The warped values, in the same order (a better value stays better)."""


class HalfRank(Warping):
    """The better half kept as is, the worse half made Gaussian by rank (Vizier's output warping).

    The trials better than the median carry the shape of the good region, which the GP must model
    to refine the optimum, so they keep their values. The worse half is where outliers live; each
    of those values is replaced by the normal quantile of its rank, scaled to the spread of the
    better half, so none can dominate the fit. A full rank (copula) warping was tried first and
    dropped: it flattens the good region, and after ~60 trials the GP explored far corners instead
    of refining (docs/samplers.md).
    """

    def __call__(self, values: np.ndarray) -> np.ndarray:
        # Imported here: scipy.stats costs each sweep driver and API process 0.7 s of CPU to start.
        from scipy.special import ndtri
        from scipy.stats import rankdata

        values = np.asarray(values, dtype=float)
        if len(values) == 0:
            return values
        quantiles = (rankdata(values, method="average") - 0.5) / len(values)
        median = float(np.median(values))
        if not np.isfinite(median):  # half the trials or more diverged (inf): order is all we have
            return ndtri(quantiles)
        good = values <= median
        spread = float(np.sqrt(np.mean((values[good] - median) ** 2))) or 1.0
        # Worse-than-median values have quantiles > 0.5, so they land above the median, in order.
        return np.where(good, values, median + spread * ndtri(np.maximum(quantiles, 0.5)))
