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
from collections.abc import Sequence

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.half_rank_gp import HalfRankGPSampler
from tuner.samplers.prior_trials import DEFAULT_HORIZON


class MultiFidelityGPSampler(HalfRankGPSampler, abc.ABC):
    """Half-rank-warped GP over COMPLETE and PRUNED trials (single objective); q-logEI over pending.

    `n_startup_trials` counts observations (trials the GP would fit) and usable prior trials, not
    COMPLETE trials only. The search space is the union of the trials (PRUNED ones included).
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
        prior_trials: Sequence[FrozenTrial] | None = None,
        prior_horizon: int = DEFAULT_HORIZON,
    ) -> None:
        super().__init__(
            seed=seed,
            independent_sampler=independent_sampler,
            n_startup_trials=n_startup_trials,
            deterministic_objective=deterministic_objective,
            warn_independent_sampling=warn_independent_sampling,
            prior_trials=prior_trials,
            prior_horizon=prior_horizon,
        )

    def n_observations(self, study: Study, search_space: dict[str, BaseDistribution]) -> int:
        if len(study.directions) != 1:
            return super().n_observations(study, search_space)
        return len(self.observations(study, search_space)[0])

    def fit_data(
        self, study: Study, completed_trials: list[FrozenTrial], search_space: dict[str, BaseDistribution]
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        if len(study.directions) != 1:
            return super().fit_data(study, completed_trials, search_space)
        trials, targets = self.observations(study, search_space)
        return trials, targets.reshape(-1, 1)

    def observations(
        self, study: Study, search_space: dict[str, BaseDistribution]
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        """The trials the GP fits and their targets (to be minimised after `_sign`), warped."""
        sign = 1.0 if study.direction == StudyDirection.MINIMIZE else -1.0
        states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        # Conditional parameters a trial lacks are imputed (tuner.samplers.inactive), so every trial
        # with a parameter of the space is fitted; RUNNING ones only once they have suggested params.
        trials = [
            t
            for t in study.get_trials(deepcopy=False, states=states)
            if t.params.keys() & search_space.keys()
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
