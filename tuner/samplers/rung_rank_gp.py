"""GP whose targets rank every PRUNED trial below the survivors of the rung where it stopped.

Why: a trial pruned at step s lost the comparison at s to the trials that went on, so it is worse
than each of them; among trials stopped at the same step, the value there orders them. That gives
one order over COMPLETE and PRUNED trials (COMPLETE by final value first, then PRUNED by the step
they reached, latest first, then by their value there) which needs no guess of a pruned trial's
final value. The targets keep the half-rank warping's shape: the COMPLETE trials in the better half
keep their values (the good region's shape), every other trial gets the normal quantile of its rank,
scaled to the better half's spread and placed after it (Vizier's output warping, Song et al. 2024).
RUNNING trials are not ranked (their comparison is still to come): they stay pending for q-logEI.
"""

from __future__ import annotations

import numpy as np
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState
from scipy.special import ndtri

from tuner.samplers.multi_fidelity_gp import MultiFidelityGPSampler


class RungRankGPSampler(MultiFidelityGPSampler):
    """`MultiFidelityGPSampler` that ranks PRUNED trials below their rung's survivors."""

    def targets(
        self, study: Study, trials: list[FrozenTrial], sign: float
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        keyed = []
        for t in trials:
            if t.state == TrialState.COMPLETE and t.value is not None:
                keyed.append(((0, 0.0, sign * t.value), t))
            elif t.state == TrialState.PRUNED and t.intermediate_values:
                step = max(t.intermediate_values)
                keyed.append(((1, -step, sign * t.intermediate_values[step]), t))
        keyed.sort(key=lambda kt: (kt[0][0], kt[0][1], _finite(kt[0][2])))
        values = [k[2] if k[0] == 0 else None for k, _ in keyed]
        return [t for _, t in keyed], rung_rank_warp(values)


def _finite(value: float) -> float:
    return value if np.isfinite(value) else np.inf


def rung_rank_warp(values: list[float | None]) -> np.ndarray:
    """Targets for trials sorted best first; `values` holds the COMPLETE ones' values, None for the
    rest (which all come after the COMPLETE ones)."""
    n = len(values)
    quantiles = (np.arange(n) + 0.5) / n
    ranked = ndtri(quantiles)
    good = [i for i, v in enumerate(values) if v is not None and np.isfinite(v) and quantiles[i] <= 0.5]
    if not good:
        return ranked
    last = good[-1]
    kept = np.array([values[i] for i in good], dtype=float)
    spread = float(np.sqrt(np.mean((kept - kept[-1]) ** 2)))
    if spread == 0.0:
        finite = np.array([v for v in values if v is not None and np.isfinite(v)], dtype=float)
        spread = float(np.std(finite)) or 1.0
    out = kept[-1] + spread * (ranked - ranked[last])
    out[: last + 1] = kept
    return out
