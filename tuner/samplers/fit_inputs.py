"""The arrays one GP suggestion is made from: normalised inputs, standardized targets, pending points.

Why a module of its own: `tuner.samplers.gp.GPSampler` computes these per call and hands them on
as one frozen value, so nothing a suggestion needs is kept on the sampler between steps (one
sampler serves Optuna's `n_jobs` threads). The steps are the ones rnntune adds around Optuna's GP:
prior trials combined with the study's own (`prior_trials`), every parameter of the union space set
(`inactive`), the activity rules read off the fitted trials (`activity`), and for a fidelity model
with trials at several steps the step as one more input, on a log scale, with the pending trials
at the full length.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers import activity, inactive
from tuner.samplers import prior_trials as priors
from tuner.samplers.constraints import constraint_matrix
from tuner.samplers.observations import Observations
from tuner.samplers.union_space import active_params
from tuner.samplers.warping import Warping
from tuner.upstream.optuna_private import search_space as gp_search_space  # Optuna 5.0's GP normalisation
from tuner.upstream.optuna_private import standardize_values  # Optuna's own, as its GP expects

FIDELITY = "rnntune:step"  # the step input's name; no search space has a parameter with ':'


@dataclass(frozen=True)
class FitInputs:
    """Normalised inputs `x` and standardized targets (larger is better, as Optuna's GP fits them)
    of the fitted trials, the normalised `pending` (RUNNING) points or None, the GP's `gp_space`,
    the study's `search_space`, the activity `rules`, whether the last input is the step
    (`pinned` to the `full` length when candidates are scored), and the fitted trials'
    `constraints` (`tuner.samplers.constraints.constraint_matrix`; None: unconstrained)."""

    search_space: dict[str, BaseDistribution]
    gp_space: Any  # optuna_private.search_space.SearchSpace
    x: np.ndarray
    standardized: np.ndarray
    pending: np.ndarray | None
    rules: list[activity.Rule]
    pinned: bool
    full: int | None = None
    constraints: np.ndarray | None = None

    def normalised(self, trials: list[FrozenTrial]) -> np.ndarray:
        """Other `trials` on the same inputs as the fitted ones, at the full length when the step
        is an input (the cost model's points, scored as candidates are)."""
        proxies = [inactive.with_params(t, self.search_space) for t in trials]
        if self.pinned and self.full is not None:
            proxies = [_at(p, self.full) for p in proxies]
        return self.gp_space.get_normalized_params(proxies)


def fit_inputs(
    search_space: dict[str, BaseDistribution],
    own: Observations,
    prior: list[FrozenTrial],
    running: list[FrozenTrial],
    sign: float,
    warp: Warping,
    horizon: int,
) -> FitInputs:
    """The GP's inputs from this study's observations `own`, the usable `prior` trials, and the
    RUNNING trials with suggested params (pending unless fitted)."""
    dists = inactive.gp_space(search_space)
    plain = gp_search_space.SearchSpace(dists)

    def normalise(ts: list[FrozenTrial]) -> np.ndarray:
        return plain.get_normalized_params([inactive.with_params(t, search_space) for t in ts])

    trials, minimised = priors.combine(own.trials, own.minimised, prior, sign, warp, horizon, normalise)
    fitted = {t.number for t in own.trials}
    # Every RUNNING trial with suggested params is pending, conditional ones included (Optuna
    # keeps only those that have every parameter of the space).
    pending = [inactive.with_params(t, search_space) for t in running if t.number not in fitted]
    proxies = [inactive.with_params(t, search_space) for t in trials]
    rules = activity.learn(
        search_space,
        plain.get_normalized_params(proxies),
        [set(active_params(t, search_space)) for t in trials],
    )
    standardized = standardize_values(-np.asarray(minimised, dtype=float).reshape(-1, 1))[0][:, 0]
    steps = None if own.steps is None else own.steps + [own.full or 1] * (len(trials) - len(own.trials))
    if steps and own.full is not None and min(steps) < own.full:
        still_running = [p for p in proxies if p.state == TrialState.RUNNING]
        proxies = [_at(p, s) for p, s in zip(proxies, steps)]
        pending = [_at(p, own.full) for p in pending + still_running]
        dists = {**dists, FIDELITY: FloatDistribution(min(steps), own.full, log=True)}
    pinned = FIDELITY in dists
    space = gp_search_space.SearchSpace(dists)
    return FitInputs(
        search_space=search_space,
        gp_space=space,
        x=space.get_normalized_params(proxies),
        standardized=standardized,
        pending=space.get_normalized_params(pending) if pending else None,
        rules=rules,
        pinned=pinned,
        full=own.full if pinned else None,
        constraints=constraint_matrix(trials),
    )


def _at(trial: FrozenTrial, step: int) -> FrozenTrial:
    proxy = copy.copy(trial)
    proxy._params = {**trial.params, FIDELITY: float(step)}
    return proxy
