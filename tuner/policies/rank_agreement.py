"""Early stopping that checks its own premise: rank agreement between rungs, and a back-off.

ASHA (Li et al. 2020) stops a trial at a rung because its value there ranks it among the worse
ones, which is sound only if the values at that rung rank trials like the values further on. On a
task whose curves cross after the first rungs (a fast start that plateaus high), it prunes the
trials that would have won. The study's own trials say whether this happens: for the trials that
reached both rung r and the next comparison point (the next rung, or `max_steps` for the last
rung), Spearman's rank correlation between their values at the two (`rung_agreement`).

What adapts, and when: `AdaptiveASHA` is Ray Tune's ASHAScheduler that records every value it is
fed at the rungs and the end and, each time a trial ends (stopped or complete), re-measures the
agreement. A rung prunes only once it has shown that it ranks well: at least MIN_PAIRS trials have
values at it and at the next point, and their agreement is at least AGREEMENT_FLOOR. Until then it
is calibrating (the first trials run on unpruned, so the pairs are not filtered by pruning); once
measured below the floor it is refuted for the run. A rung that prunes needs every rung after it to
prune too (`pruning_grace`: the grace period is the first rung from which on all do; past the last
rung early stopping is off), and its STOP decisions below the grace become CONTINUE. A run starts
from the agreement of the `history` it is given: the study's earlier trials, so a resumed sweep
keeps what it learnt and skips the calibration. The stored policy is unchanged, so the sampler
keeps reading the same rungs (every trial still reports there).

Measured in bench/multifidelity.py (docs/samplers.md, "Early stopping that pays for itself").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from tuner.policies.early_stopping import TIME_RESULT_KEY, EarlyStopping

# A rung prunes once MIN_PAIRS trials have values at it and at the next point (fewer: too noisy to
# trust) and their Spearman correlation is at least this; below it, the rung is refuted for the run.
AGREEMENT_FLOOR = 0.3
MIN_PAIRS = 4

Curves = Mapping[Any, Mapping[int, float]]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); nan for fewer than 2 points or a
    constant side."""
    if len(a) < 2:
        return math.nan
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=float)
    for value in np.unique(x):  # ties share their mean rank
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def rung_agreement(curves: Curves, rungs: list[int], max_steps: int) -> dict[int, tuple[float, int]]:
    """For each rung: (Spearman between the values there and at the next comparison point, number
    of trials with both), over the `curves` ({trial: {step: value}}) that reached both."""
    out = {}
    for i, rung in enumerate(rungs):
        nxt = rungs[i + 1] if i + 1 < len(rungs) else max_steps
        both = [c for c in curves.values() if rung in c and nxt in c]
        a = np.array([c[rung] for c in both], dtype=float)
        b = np.array([c[nxt] for c in both], dtype=float)
        out[rung] = (spearman(a, b), len(both))
    return out


def pruning_grace(
    rungs: list[int],
    agreement: Mapping[int, tuple[float, int]],
    max_steps: int,
    refuted: set[int],
    floor: float = AGREEMENT_FLOOR,
    min_pairs: int = MIN_PAIRS,
) -> int:
    """The first rung from which on every rung prunes: the one after the last rung still calibrating
    (fewer than `min_pairs` trials with both values) or refuted (measured below `floor`, now or
    before: such rungs are added to `refuted`, which only grows); `max_steps` when the last rung is
    such."""
    grace = rungs[0] if rungs else max_steps
    for i, rung in enumerate(rungs):
        rho, n = agreement.get(rung, (math.nan, 0))
        if n >= min_pairs and rho < floor:  # nan (a constant side) tells nothing: compares False
            refuted.add(rung)
        if n < min_pairs or rung in refuted:
            grace = rungs[i + 1] if i + 1 < len(rungs) else max_steps
    return grace


def describe_adaptive(floor: float = AGREEMENT_FLOOR, min_pairs: int = MIN_PAIRS) -> str:
    """One line for a sweep's header: when a rung of the adaptive scheduler starts pruning."""
    return (
        f"adaptive: a rung prunes once {min_pairs} trials show its values rank like the next "
        f"rung's (Spearman >= {floor:g}), never after they do not"
    )


class AdaptiveASHA(ASHAScheduler):
    """Ray's ASHAScheduler whose rungs prune only once their values are shown to rank the trials
    like the next ones (module docstring); built like `make_scheduler`'s ASHA."""

    def __init__(
        self,
        policy: EarlyStopping,
        max_steps: int,
        eval_every: int,
        history: Curves | None = None,
        floor: float = AGREEMENT_FLOOR,
        min_pairs: int = MIN_PAIRS,
    ) -> None:
        resolved = policy.resolved(max_steps, eval_every)
        super().__init__(
            time_attr=TIME_RESULT_KEY,
            max_t=max_steps,
            grace_period=int(resolved.grace_steps or eval_every),
            reduction_factor=resolved.reduction_factor,
            brackets=resolved.brackets or 1,
            stop_last_trials=False,
        )
        self.rungs, self.max_steps = resolved.rungs(max_steps, eval_every), max_steps
        self.floor, self.min_pairs = floor, min_pairs
        self.curves: dict[Any, dict[int, float]] = {k: dict(v) for k, v in (history or {}).items()}
        self.refuted: set[int] = set()
        self.grace = max_steps
        self._update()

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        self._record(trial, result)
        action = super().on_trial_result(tune_controller, trial, result)
        if action == TrialScheduler.STOP:
            if int(result[TIME_RESULT_KEY]) < self.grace:  # a rung calibrating or refuted: it does not prune
                self._num_stopped -= 1
                return TrialScheduler.CONTINUE
            self._update()
        return action

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        self._record(trial, result)
        super().on_trial_complete(tune_controller, trial, result)
        self._update()

    def _record(self, trial: Any, result: Mapping[str, Any]) -> None:
        step, value = result.get(TIME_RESULT_KEY), result.get(self._metric or "")
        if (
            step is not None
            and value is not None
            and (int(step) in self.rungs or int(step) >= self.max_steps)
        ):
            self.curves.setdefault(trial.trial_id, {})[min(int(step), self.max_steps)] = float(value)

    def _update(self) -> None:
        agreement = rung_agreement(self.curves, self.rungs, self.max_steps)
        self.grace = pruning_grace(
            self.rungs, agreement, self.max_steps, self.refuted, self.floor, self.min_pairs
        )
