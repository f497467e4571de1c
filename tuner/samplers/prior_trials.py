"""Warm start: another study's trials as prior data for the GP (Vizier's prior studies).

Why: a new sweep often repeats an old one on a related task (the same space on Wikitext-2 after
PTB); its first trials need not be random. Vizier transfers from prior studies (Golovin et al.
2017, §3.3: a stack of GPs, each fitted to the residuals of the one below) because the tasks' best
regions overlap while their objective scales differ (PTB and Wikitext-2 perplexities are not
comparable). rnntune keeps Optuna's single GP and gets the two properties that matter cheaply:

* common scale: the prior study's values and this study's targets are each warped (the sampler's
  own half-rank warping) and standardised separately, so only each study's order and spread
  reach the GP, not its units;
* own data dominates: all usable prior trials are fitted while this study has none; as it gains
  observations, the priors kept shrink linearly, to none once it has `horizon` of its own (a
  subset spread evenly over the priors' ranks, so the prior's shape is kept while its weight
  falls). Stacked residual GPs would need a second GP inside Optuna's acquisition; a pooled fit
  with a shrinking prior is the simpler form of the same idea (the `horizon` was chosen with
  `bench/warm_start.py`, docs/samplers.md);
* negative transfer: from `MIN_CHECKED` own observations on, the priors must rank them: Kendall's
  tau between this study's values and the priors' prediction at its points (a nearest-neighbour
  mean; the ranking check of RGPE, Feurer et al. 2018) below `MIN_AGREEMENT` drops the priors.

Only COMPLETE prior trials with a finite value count, and only those whose parameters lie in this
study's space (after union and widening): a prior parameter named in the space but of another kind
or outside its range drops the trial; prior parameters the space lacks are ignored, and space
parameters the prior trial lacks are inactive (`tuner.samplers.inactive`). The priors also count
towards `n_startup_trials`, and they define the space while the study has no trial of its own, so a
warm-started study's first suggestions come from the GP, not from the random startup sampler.
Prior trials are assumed to have this study's objective direction; multi-objective studies ignore them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.union_space import contains, kind

DEFAULT_HORIZON = 30  # own observations at which no prior trial is fitted any more
MIN_CHECKED = 5  # own observations from which the priors must agree with them
MIN_AGREEMENT = 0.2  # Kendall's tau below which the priors are dropped
NEIGHBOURS = 5


def usable(prior_trials: Sequence[FrozenTrial], space: dict[str, BaseDistribution]) -> list[FrozenTrial]:
    """The COMPLETE prior trials with a finite value whose parameters in `space` lie in it."""
    out = []
    for t in prior_trials:
        if t.state != TrialState.COMPLETE or t.values is None or len(t.values) != 1:
            continue
        if not math.isfinite(t.values[0]):
            continue
        named = [n for n in t.params if n in space]
        if not named:
            continue
        if all(_fits(t, n, space[n]) for n in named):
            out.append(t)
    return out


def _fits(trial: FrozenTrial, name: str, distribution: BaseDistribution) -> bool:
    own = trial.distributions.get(name)
    return (own is None or kind(own) == kind(distribution)) and contains(distribution, trial.params[name])


def standardised(values: np.ndarray) -> np.ndarray:
    """Zero mean, unit spread (a single value, or equal ones, map to 0)."""
    if len(values) == 0:
        return values
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return np.zeros_like(values)
    spread = float(np.std(finite)) or 1.0
    return (np.clip(values, finite.min(), finite.max()) - float(np.mean(finite))) / spread


def kept(n_priors: int, n_own: int, horizon: int) -> int:
    """How many prior trials to fit beside `n_own` observations of this study's own."""
    if horizon <= 0:
        return 0
    return math.ceil(n_priors * max(0.0, 1.0 - n_own / horizon))


def agreement(own_x: np.ndarray, own_y: np.ndarray, prior_x: np.ndarray, prior_y: np.ndarray) -> float:
    """Kendall's tau between this study's values and what the prior trials predict at its points
    (inverse-distance-weighted mean of the `NEIGHBOURS` nearest prior trials, normalised space)."""
    from scipy.stats import kendalltau  # imported here: scipy.stats costs each process 0.7 s to start

    d = np.linalg.norm(own_x[:, None, :] - prior_x[None, :, :], axis=-1)
    nearest = np.argsort(d, axis=1)[:, :NEIGHBOURS]
    w = 1.0 / (np.take_along_axis(d, nearest, axis=1) + 1e-3) ** 2
    predicted = (w * prior_y[nearest]).sum(axis=1) / w.sum(axis=1)
    tau = kendalltau(own_y, predicted).statistic
    return float(tau) if np.isfinite(tau) else 0.0


def combine(
    own: list[FrozenTrial],
    own_minimised: np.ndarray,
    priors: list[FrozenTrial],
    sign: float,
    warp: Callable[[np.ndarray], np.ndarray],
    horizon: int,
    normalise: Callable[[list[FrozenTrial]], np.ndarray],
) -> tuple[list[FrozenTrial], np.ndarray]:
    """This study's observations plus the prior trials kept, on one standardised scale (targets to
    be minimised). Prior trials are copies without system attrs (no constraints of another study).
    `normalise` maps trials to the GP's normalised coordinates (for the agreement check)."""
    n = kept(len(priors), len(own), horizon)
    if n == 0:
        return own, own_minimised
    prior_minimised = warp(sign * np.array([t.values[0] for t in priors], dtype=float))
    if len(own) >= MIN_CHECKED:
        tau = agreement(
            normalise(own), np.asarray(own_minimised, dtype=float), normalise(priors), prior_minimised
        )
        if tau < MIN_AGREEMENT:
            return own, own_minimised  # the prior study ranks this one's trials wrongly: drop it
    order = np.argsort(prior_minimised, kind="stable")
    chosen = order[np.unique(np.linspace(0, len(order) - 1, n).round().astype(int))]
    proxies = []
    for i in chosen:
        proxy = copy.copy(priors[i])
        proxy._system_attrs = {}
        proxies.append(proxy)
    targets = np.concatenate(
        [standardised(np.asarray(own_minimised, dtype=float)), standardised(prior_minimised)[chosen]]
    )
    return own + proxies, targets
