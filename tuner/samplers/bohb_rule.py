"""BOHB's rule: fit the largest budget with enough observations (Falkner et al. 2018, §3).

Why: values at the same step are comparable, so the GP fits trials on one budget, the largest one
at which at least `n_startup_trials` trials reported; early in a sweep that is a low rung (every
trial reaches it), later the full budget. Budgets are the rungs of the study's early-stopping
policy (user attr `early_stopping`, the same settings the ASHA scheduler uses) and the full run; in
a plain Optuna study without that attr, the steps at which trials were pruned. RUNNING trials that
already reported at the chosen budget are observations there (sound: their value at that step is
final); the others stay pending for q-logEI.
"""

from __future__ import annotations

import numpy as np
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from tuner.policies.early_stopping import stores_policy, study_policy
from tuner.samplers.observations import FidelityModel, Observations
from tuner.samplers.warping import Warping
from tuner.storage import study_attrs


class BOHBRule(FidelityModel):
    """The GP fits one budget: the full run once `enough` trials are COMPLETE, else the largest
    budget with `enough` reports (or, if none has, the one with the most)."""

    def observations(
        self, study: Study, trials: list[FrozenTrial], sign: float, warp: Warping, enough: int
    ) -> Observations:
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        values = [sign * t.value for t in complete if t.value is not None]  # every one of `complete`
        if len(complete) >= enough:
            return Observations(complete, warp(np.array(values, dtype=float)))
        best: tuple[list[FrozenTrial], list[float]] = (complete, values)
        for step in sorted(budgets(study, trials), reverse=True):
            seen = [t for t in trials if step in t.intermediate_values]
            if len(seen) >= enough:
                best = (seen, [sign * t.intermediate_values[step] for t in seen])
                break
            if len(seen) > len(best[0]):
                best = (seen, [sign * t.intermediate_values[step] for t in seen])
        chosen, chosen_values = best
        return Observations(chosen, warp(np.array(chosen_values, dtype=float)))


def user_attrs_of(study: Study) -> dict:
    """The study's user attrs; empty for HyperbandPruner's bracket view, which has none."""
    try:
        return dict(study.user_attrs)
    except AttributeError:
        return {}


def budgets(study: Study, trials: list[FrozenTrial]) -> set[int]:
    """The rung steps of the study's policy, else the steps where its trials were pruned."""
    attrs = user_attrs_of(study)
    task = study_attrs.TASK.of(attrs) or {}
    if stores_policy(attrs) and "max_steps" in task and "eval_every" in task:
        return set(study_policy(attrs).rungs(int(task["max_steps"]), int(task["eval_every"])))
    return {
        max(t.intermediate_values) for t in trials if t.state == TrialState.PRUNED and t.intermediate_values
    }
