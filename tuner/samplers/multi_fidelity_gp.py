"""`MultiFidelityGPSampler`: the warped GP that also learns from trials stopped early.

Why: under ASHA most trials are PRUNED; Optuna's GPSampler fits only COMPLETE ones, so after a
24-trial sweep with 3 COMPLETE it has seen 3 points and the rest of the sweep taught it nothing.
Subclasses choose how a pruned trial's intermediate values become a GP target (one module each):
`rung_rank_gp` ranks it below the survivors of its rung, `bohb_gp` models the largest budget with
enough observations. Both read only public study data (trials' states and intermediate values, the
study's early-stopping policy), so they work in a plain `optuna.Study` with Optuna's pruners too.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.search_space import IntersectionSearchSpace
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.half_rank_gp import HalfRankGPSampler


class MultiFidelityGPSampler(HalfRankGPSampler, abc.ABC):
    """Half-rank-warped GP over COMPLETE and PRUNED trials (single objective); q-logEI over pending.

    `n_startup_trials` counts observations (trials the GP would fit), not COMPLETE trials only.
    Multi-objective studies fall back to the parent's COMPLETE-only fit.
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        n_startup_trials: int = 10,
        deterministic_objective: bool = False,
        warn_independent_sampling: bool = True,
    ) -> None:
        # The parent's gate counts COMPLETE trials only; ours (sample_relative) counts observations.
        super().__init__(
            seed=seed,
            independent_sampler=independent_sampler,
            n_startup_trials=0,
            deterministic_objective=deterministic_objective,
            warn_independent_sampling=warn_independent_sampling,
        )
        self._min_observations = n_startup_trials
        # Pruned trials define the search space too: with 3 COMPLETE of 23 trials it is still known.
        self._intersection_search_space = IntersectionSearchSpace(include_pruned=True)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        if len(study.directions) == 1:
            observed = self.observations(study, search_space)[0]
        else:
            observed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(observed) < self._min_observations:
            return {}  # the independent (random) sampler draws the startup trials
        return super().sample_relative(study, trial, search_space)

    def fit_data(
        self,
        study: Study,
        completed_trials: list[FrozenTrial],
        running_trials: list[FrozenTrial],
        search_space: dict[str, BaseDistribution],
    ) -> tuple[list[FrozenTrial], np.ndarray, list[FrozenTrial]]:
        if len(study.directions) != 1:
            return super().fit_data(study, completed_trials, running_trials, search_space)
        trials, targets = self.observations(study, search_space)
        observed = {t.number for t in trials}
        pending = [t for t in running_trials if t.number not in observed]
        return trials, targets.reshape(-1, 1), pending

    def observations(
        self, study: Study, search_space: dict[str, BaseDistribution]
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        """The trials the GP fits and their targets (to be minimised after `_sign`), warped."""
        sign = 1.0 if study.direction == StudyDirection.MINIMIZE else -1.0
        states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        trials = [
            t
            for t in study.get_trials(deepcopy=False, states=states)
            if search_space.keys() <= t.params.keys()
        ]
        chosen, minimised = self.targets(study, trials, sign)
        if not chosen:
            return [], np.empty(0)
        return chosen, sign * np.asarray(minimised, dtype=float)

    @abc.abstractmethod
    def targets(
        self, study: Study, trials: list[FrozenTrial], sign: float
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        """Pick the trials to fit among COMPLETE, PRUNED and RUNNING `trials`; return them and their
        warped targets, to be minimised (`sign` times a value minimises it)."""
