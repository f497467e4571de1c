"""`WarpedGPSampler`: Optuna's GPSampler fitted to warped objective values (base of rnntune's GPs).

Why: Optuna's GPSampler only standardizes the objective, so a few bad trials (a diverged run, an
ill-conditioned corner of the space) dominate the Gaussian-process fit and flatten the region near
the best trials, where the next suggestions matter. Warping the values with a monotone map before
the fit keeps the order of the trials and lets the GP model the good region (HEBO, Cowen-Rivers et
al. 2022, and Vizier's GP bandit, Song et al. 2024, both warp outputs). Everything else — the
Matérn-5/2 ARD kernel, its priors, logEI, the acquisition optimizer and q-logEI over the RUNNING
trials (Optuna 5's own handling of trials in flight) — is Optuna's, unchanged.
"""

from __future__ import annotations

import abc
import copy
import inspect
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import GPSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial


class WarpedGPSampler(GPSampler, abc.ABC):
    """A `GPSampler` whose GP sees `warp(values)` of the completed trials instead of the values.

    Subclasses implement `warp`. The stored trials are never modified: the sampler fits on copies.
    Takes GPSampler's keyword arguments.
    """

    @staticmethod
    @abc.abstractmethod
    def warp(values: np.ndarray) -> np.ndarray:
        """Map 1-D values (to be minimized) onto a scale the GP fits well; must keep their order."""

    # Overrides GPSampler's private hook (Optuna 5.0): the one place that sees the completed trials
    # after Optuna's own filtering, so the warping needs no copy of that logic. `check_optuna_hook`
    # refuses an Optuna whose GPSampler lacks it; tests/tuner/samplers/test_warped_gp.py tests it.
    def _sample_relative_impl(
        self,
        study: Study,
        completed_trials: list[FrozenTrial],
        running_trials: list[FrozenTrial],
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        trials, targets, pending = self.fit_data(study, completed_trials, running_trials, search_space)
        proxies = []
        for trial, row in zip(trials, targets):
            proxy = copy.copy(trial)
            proxy._values = row.tolist()
            proxies.append(proxy)
        return super()._sample_relative_impl(study, proxies, pending, search_space)

    def fit_data(
        self,
        study: Study,
        completed_trials: list[FrozenTrial],
        running_trials: list[FrozenTrial],
        search_space: dict[str, BaseDistribution],
    ) -> tuple[list[FrozenTrial], np.ndarray, list[FrozenTrial]]:
        """The trials the GP fits, their targets (one row each, in the study's directions) and the
        pending trials for q-logEI. Here: the completed trials with warped values, all RUNNING ones."""
        values = np.array([t.values for t in completed_trials], dtype=float)
        warped = np.empty_like(values)
        for i, direction in enumerate(study.directions):
            sign = 1.0 if direction == StudyDirection.MINIMIZE else -1.0
            warped[:, i] = sign * self.warp(sign * values[:, i])
        return completed_trials, warped, running_trials


def check_optuna_hook() -> None:
    """Fail at start-up, not mid-sweep, if this Optuna's GPSampler lacks the overridden hook."""
    hook = getattr(GPSampler, "_sample_relative_impl", None)
    params = list(inspect.signature(hook).parameters) if hook else []
    if params != ["self", "study", "completed_trials", "running_trials", "search_space"]:
        raise RuntimeError(
            f"optuna {optuna.__version__}: GPSampler._sample_relative_impl is missing or changed; "
            "rnntune's GP samplers need Optuna 5.0's (pin optuna==5.0.*)"
        )


check_optuna_hook()
