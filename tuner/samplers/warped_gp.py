"""`WarpedGPSampler`: Optuna's GPSampler fitted to warped objective values (base of rnntune's GPs).

Why: Optuna's GPSampler only standardizes the objective, so a few bad trials (a diverged run, an
ill-conditioned corner of the space) dominate the Gaussian-process fit and flatten the region near
the best trials, where the next suggestions matter. Warping the values with a monotone map before
the fit keeps the order of the trials and lets the GP model the good region (HEBO, Cowen-Rivers et
al. 2022, and Vizier's GP bandit, Song et al. 2024, both warp outputs). Everything else — the
Matérn-5/2 ARD kernel, its priors, logEI, the acquisition optimizer and q-logEI over the RUNNING
trials (Optuna 5's own handling of trials in flight) — is Optuna's, unchanged.

Two things Optuna's GPSampler leaves to its random sampler are modelled here: the search space is
the union of the study's trials (`tuner.samplers.union_space`: conditional parameters and widened
ranges stay in the GP), with inactive parameters imputed outside the range
(`tuner.samplers.inactive`); and `prior_trials` from another study warm-start the fit
(`tuner.samplers.prior_trials`).
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna._gp import search_space as gp_search_space  # the GP's own normalisation (Optuna 5.0)
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, GPSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers import activity, inactive
from tuner.samplers import prior_trials as priors
from tuner.samplers.union_space import active_params, study_search_space, union_search_space


class WarpedGPSampler(GPSampler, abc.ABC):
    """A `GPSampler` whose GP sees `warp(values)` of the completed trials instead of the values.

    Subclasses implement `warp`. The stored trials are never modified: the sampler fits on copies.
    Takes GPSampler's keyword arguments, plus `prior_trials` (another study's trials, a warm
    start) and `prior_horizon` (own observations after which the priors are no longer fitted).
    `n_startup_trials` counts this study's observations plus the usable prior trials.
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        n_startup_trials: int = 10,
        deterministic_objective: bool = False,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
        warn_independent_sampling: bool = True,
        prior_trials: Sequence[FrozenTrial] | None = None,
        prior_horizon: int = priors.DEFAULT_HORIZON,
    ) -> None:
        # GPSampler's gate counts COMPLETE trials only; ours (sample_relative) adds the priors.
        super().__init__(
            seed=seed,
            independent_sampler=independent_sampler,
            n_startup_trials=0,
            deterministic_objective=deterministic_objective,
            constraints_func=constraints_func,
            warn_independent_sampling=warn_independent_sampling,
        )
        self._min_observations = n_startup_trials
        self._prior_trials = list(prior_trials or [])
        self._prior_horizon = prior_horizon
        self._activity_rules: list[activity.Rule] = []

    @staticmethod
    @abc.abstractmethod
    def warp(values: np.ndarray) -> np.ndarray:
        """Map 1-D values (to be minimized) onto a scale the GP fits well; must keep their order."""

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        """The union of this study's trials (the prior trials' while the study has none)."""
        space = study_search_space(study.get_trials(deepcopy=False))
        if not space and self._prior_trials and len(study.directions) == 1:
            space = union_search_space(self._prior_trials)
        return space

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        observed = self.n_observations(study, search_space) + len(self.priors(study, search_space))
        if observed == 0 or observed < self._min_observations:
            return {}  # the independent (random) sampler draws the startup trials
        return super().sample_relative(study, trial, search_space)

    def n_observations(self, study: Study, search_space: dict[str, BaseDistribution]) -> int:
        """How many of this study's trials the GP would fit (here: the COMPLETE ones)."""
        return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))

    def priors(self, study: Study, search_space: dict[str, BaseDistribution]) -> list[FrozenTrial]:
        """The prior trials that count in `search_space` (none in a multi-objective study)."""
        if not self._prior_trials or len(study.directions) != 1:
            return []
        return priors.usable(self._prior_trials, search_space)

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
        trials, targets = self.fit_data(study, completed_trials, search_space)
        fitted = {t.number for t in trials}
        if len(study.directions) == 1:
            sign = 1.0 if study.direction == StudyDirection.MINIMIZE else -1.0
            prior = self.priors(study, search_space)
            gp_space = gp_search_space.SearchSpace(inactive.gp_space(search_space))

            def normalise(ts: list[FrozenTrial]) -> np.ndarray:
                return gp_space.get_normalized_params([inactive.with_params(t, search_space) for t in ts])

            trials, minimised = priors.combine(
                trials, sign * targets[:, 0], prior, sign, self.warp, self._prior_horizon, normalise
            )
            targets = (sign * minimised).reshape(-1, 1)
        # Every RUNNING trial with suggested params is pending, conditional ones included (Optuna
        # keeps only those that have every parameter of the space).
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        pending = [t for t in running if t.params and t.number not in fitted]
        proxies = [inactive.with_params(t, search_space, row) for t, row in zip(trials, targets)]
        pending = [inactive.with_params(t, search_space) for t in pending]
        space = inactive.gp_space(search_space)
        normalized = gp_search_space.SearchSpace(space).get_normalized_params(proxies)
        self._activity_rules = activity.learn(
            search_space, normalized, [set(active_params(t, search_space)) for t in trials]
        )
        proxies, pending, space = self.gp_inputs(study, proxies, pending, space)
        params = super()._sample_relative_impl(study, proxies, pending, space)
        return {name: value for name, value in params.items() if name in search_space}

    def gp_inputs(
        self,
        study: Study,
        fitted: list[FrozenTrial],
        pending: list[FrozenTrial],
        space: dict[str, BaseDistribution],
    ) -> tuple[list[FrozenTrial], list[FrozenTrial], dict[str, BaseDistribution]]:
        """The GP's fitted and pending trials (copies) and its space, as Optuna's GP gets them.
        Subclasses may append input columns (a fidelity) after the search space's; here unchanged."""
        return fitted, pending, space

    # Also a private GPSampler hook (Optuna 5.0, same check): the best trial seeds the acquisition
    # optimiser's local search, and an inactive coordinate (outside [0, 1]) must not be its start;
    # and the acquisition must score a candidate as its trial will be stored (tuner.samplers.activity).
    def _optimize_acqf(self, acqf: Any, best_params: np.ndarray | None) -> np.ndarray:
        start = inactive.warm_start_points(best_params, acqf.search_space)
        # Candidates are scored with the parameters they leave inactive at the imputed value.
        acqf.eval_acqf = activity.masked(acqf.eval_acqf, self._activity_rules)
        return super()._optimize_acqf(acqf, start)

    def fit_data(
        self, study: Study, completed_trials: list[FrozenTrial], search_space: dict[str, BaseDistribution]
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        """The trials the GP fits and their targets (one row each, in the study's directions).
        Here: the completed trials with warped values."""
        if not completed_trials:
            return [], np.empty((0, len(study.directions)))
        values = np.array([t.values for t in completed_trials], dtype=float)
        warped = np.empty_like(values)
        for i, direction in enumerate(study.directions):
            sign = 1.0 if direction == StudyDirection.MINIMIZE else -1.0
            warped[:, i] = sign * self.warp(sign * values[:, i])
        return completed_trials, warped


def check_optuna_hook() -> None:
    """Fail at start-up, not mid-sweep, if this Optuna's GPSampler lacks the overridden hooks."""
    expected = {
        "_sample_relative_impl": ["self", "study", "completed_trials", "running_trials", "search_space"],
        "_optimize_acqf": ["self", "acqf", "best_params"],
    }
    for name, want in expected.items():
        hook = getattr(GPSampler, name, None)
        params = list(inspect.signature(hook).parameters) if hook else []
        if params != want:
            raise RuntimeError(
                f"optuna {optuna.__version__}: GPSampler.{name} is missing or changed; "
                "rnntune's GP samplers need Optuna 5.0's (pin optuna==5.0.*)"
            )
    if not hasattr(gp_search_space.SearchSpace, "get_normalized_params"):
        raise RuntimeError(f"optuna {optuna.__version__}: optuna._gp.search_space changed; pin optuna==5.0.*")


check_optuna_hook()
