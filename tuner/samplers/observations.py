"""What rnntune's GP fits, and the fidelity models that choose it from a study's trials.

Why a part of its own: under ASHA most trials are PRUNED, and Optuna's GPSampler fits only
COMPLETE ones. How a pruned trial's intermediate values become a GP target is one decision with
several answers (BOHB's rule, `tuner.samplers.bohb_rule`; a GP over configuration and step,
`tuner.samplers.fidelity_gp`), so it is a part handed to `tuner.samplers.gp.GPSampler`
(``fidelity=...``), computed per call from the trials and returned, never kept on an instance.
The models read only public study data (trials' states and intermediate values, the study's
early-stopping policy and task), so they work in a plain `optuna.Study` with Optuna's pruners too.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.warping import Warping


@dataclass(frozen=True)
class Observations:
    """The trials the GP fits and their warped targets (to be minimised), in the same order.

    `steps` (a fidelity model's) gives the training step each target is at, clipped to [1, full];
    None when every target is at one fidelity. `full` is the full run's length in steps."""

    trials: list[FrozenTrial]
    minimised: np.ndarray
    steps: list[int] | None = None
    full: int | None = None

    def take(self, index: np.ndarray) -> Observations:
        """The observations at `index` (positions), in that order."""
        steps = None if self.steps is None else [self.steps[i] for i in index]
        return Observations([self.trials[i] for i in index], self.minimised[index], steps, self.full)


class FidelityModel(abc.ABC):
    """Chooses the GP's observations among a study's COMPLETE, PRUNED and RUNNING trials."""

    @abc.abstractmethod
    def observations(
        self, study: Study, trials: list[FrozenTrial], sign: float, warp: Warping, enough: int
    ) -> Observations:
        """The observations among `trials` (COMPLETE, PRUNED and RUNNING ones with a parameter of
        the space); `sign` times a value minimises it; `enough` is the sampler's
        `n_startup_trials`, the number of observations a budget needs to be trusted."""


def complete_only(trials: list[FrozenTrial], sign: float, warp: Warping) -> Observations:
    """No fidelity model: the COMPLETE trials at their final values (Optuna's GPSampler's data)."""
    complete = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
    values = np.array([sign * t.value for t in complete if t.value is not None], dtype=float)
    return Observations(complete, warp(values))


def signs(study: Study) -> np.ndarray:
    """+1 for each minimised objective of `study`, -1 for a maximised one: sign times value is
    minimised."""
    return np.array([1.0 if d == StudyDirection.MINIMIZE else -1.0 for d in study.directions])
