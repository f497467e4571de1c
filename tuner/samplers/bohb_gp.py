"""GP on the largest budget with enough observations: BOHB's rule (Falkner et al. 2018, §3).

Why: values at the same step are comparable, so the model fits trials on one budget, the largest
one at which at least `n_startup_trials` trials reported; early in a sweep that is a low rung
(every trial reaches it), later the full budget. Budgets are the rungs of the study's early-stopping
policy (user attr `early_stopping`, the same settings the ASHA scheduler uses) and the full run; in
a plain Optuna study without that attr, the steps at which trials were pruned. RUNNING trials that
already reported at the chosen budget are observations there (sound: their value at that step is
final); the others stay pending for q-logEI.
"""

from __future__ import annotations

import numpy as np
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from tuner.early_stopping import ATTR, study_policy
from tuner.samplers.multi_fidelity_gp import MultiFidelityGPSampler


class BOHBRuleGPSampler(MultiFidelityGPSampler):
    """`MultiFidelityGPSampler` fitted on one budget chosen by BOHB's rule, half-rank warped."""

    def targets(
        self, study: Study, trials: list[FrozenTrial], sign: float
    ) -> tuple[list[FrozenTrial], np.ndarray]:
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        values = [sign * t.value for t in complete if t.value is not None]  # every one of `complete`
        if len(complete) >= self._min_observations:
            return complete, self.warp(np.array(values))
        best: tuple[list[FrozenTrial], list[float]] = (complete, values)
        for step in sorted(_budgets(study, trials), reverse=True):
            seen = [t for t in trials if step in t.intermediate_values]
            if len(seen) >= self._min_observations:
                best = (seen, [sign * t.intermediate_values[step] for t in seen])
                break
            if len(seen) > len(best[0]):
                best = (seen, [sign * t.intermediate_values[step] for t in seen])
        chosen, values = best
        if not chosen:
            return [], np.empty(0)
        return chosen, self.warp(np.array(values, dtype=float))


def _budgets(study: Study, trials: list[FrozenTrial]) -> set[int]:
    """The rung steps of the study's policy, else the steps where its trials were pruned."""
    try:
        attrs = study.user_attrs
    except AttributeError:  # HyperbandPruner hands samplers a bracket's view without user attrs
        attrs = {}
    task = attrs.get("task") or {}
    if ATTR in attrs and "max_steps" in task and "eval_every" in task:
        return set(study_policy(attrs).rungs(int(task["max_steps"]), int(task["eval_every"])))
    return {
        max(t.intermediate_values) for t in trials if t.state == TrialState.PRUNED and t.intermediate_values
    }
