"""Optuna's TPE, made to read early-stopped trials in a study with several objectives.

Why: Optuna 5.0's TPE ranks PRUNED trials by their last intermediate value through
`Study.direction`, which raises in a study with several directions. Optuna itself never meets
that case (it refuses `Trial.report` there), but an rnntune sweep stores every trial's
validation-loss curve (`tuner.sweeps.drive.writer.report`), so the first early-stopped trial
that TPE must rank (fewer COMPLETE trials than its "good" group) ended the sweep. Here TPE
sees the study through `CurveDirection`, whose `direction` is the first objective's: rnntune's
curves are always of the first objective (`val_loss`, minimised), so a pruned trial ranks by its
loss where it stopped, as in a study with one objective. Any other use of the study is
unchanged; with one objective the sampler is Optuna's exactly.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial


class CurveDirection:
    """A study as Optuna's TPE reads it: the study itself, except that `direction` is the first
    objective's, the one the stored curves are of."""

    def __init__(self, study: Study) -> None:
        self._study = study

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    @property
    def direction(self) -> StudyDirection:
        return self._study.directions[0]


def _as_read(study: Study) -> Any:
    return CurveDirection(study) if len(study.directions) > 1 else study


class TPESampler(optuna.samplers.TPESampler):
    """Optuna's `TPESampler` (every option as Optuna's) that also ranks pruned trials with curves
    in a study with several objectives (module docstring)."""

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return super().sample_relative(_as_read(study), trial, search_space)

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return super().sample_independent(_as_read(study), trial, param_name, param_distribution)
