"""Rank agreement between rungs, and ASHA whose rungs prune only once their values are shown to
rank the trials like the next ones (`tuner.policies.rank_agreement`)."""

from __future__ import annotations

import math

import numpy as np
from ray.tune.schedulers import TrialScheduler
from scipy.stats import spearmanr

from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.rank_agreement import (
    MIN_PAIRS,
    AdaptiveASHA,
    pruning_grace,
    rung_agreement,
    spearman,
)
from tuner.policies.schedulers import make_scheduler
from tuner.spec import SweepSpec

RUNGS, MAX_STEPS = [50, 150], 200


class _Trial:
    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id


def test_rank_agreement_equals_a_direct_computation() -> None:
    """On fixed curves, each rung's agreement is scipy's Spearman between the values there and at
    the next point, over the trials that have both (ties included; a trial pruned at 50 counts
    for no pair)."""
    rng = np.random.default_rng(3)
    curves = {
        i: {50: float(v), 150: float(v + rng.normal()), 200: float(v + rng.normal())}
        for i, v in enumerate(rng.normal(size=12))
    }
    curves[0][150] = curves[1][150]  # a tie
    curves[12] = {50: 9.0}  # pruned at the first rung
    curves[13] = {50: 1.0, 150: 1.0}  # pruned at the second
    got = rung_agreement(curves, RUNGS, MAX_STEPS)
    full = [c for c in curves.values() if 200 in c]
    reached = [c for c in curves.values() if 150 in c]
    assert got[50][1] == 13 and got[150][1] == 12
    assert math.isclose(got[50][0], spearmanr([c[50] for c in reached], [c[150] for c in reached])[0])
    assert math.isclose(got[150][0], spearmanr([c[150] for c in full], [c[200] for c in full])[0])
    assert math.isnan(spearman(np.array([1.0]), np.array([2.0])))
    assert math.isnan(spearman(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))


def test_pruning_grace_starts_past_rungs_calibrating_or_refuted() -> None:
    def grace(agreement, refuted=None):
        return pruning_grace(RUNGS, agreement, MAX_STEPS, set() if refuted is None else refuted)

    assert grace({50: (0.9, 20), 150: (0.95, 10)}) == 50
    assert grace({50: (-0.5, 20), 150: (0.95, 10)}) == 150
    assert grace({50: (0.9, 20), 150: (-0.2, 10)}) == MAX_STEPS
    assert grace({}) == MAX_STEPS  # nothing measured: calibrating, no pruning yet
    assert grace({50: (0.9, 20), 150: (0.9, 3)}) == MAX_STEPS  # the last rung still calibrating
    assert grace({50: (-0.9, 3), 150: (0.9, 10)}) == 150  # too few pairs to trust the first rung
    assert grace({50: (math.nan, 20), 150: (0.9, 10)}) == 50  # a constant side tells nothing
    refuted: set[int] = set()
    assert grace({50: (0.1, 6), 150: (0.9, 10)}, refuted) == 150 and refuted == {50}
    assert grace({50: (0.9, 40), 150: (0.9, 10)}, refuted) == 150  # refuted stays refuted


def replay(flip: bool, n: int = 30) -> tuple[AdaptiveASHA, list[int]]:
    """`n` trials one after another under AdaptiveASHA (grace 50, η 3, 200 steps); trial i's final
    quality is q_i (random). Its value at step 50 is q_i, or -q_i when `flip` (early values rank
    the finals backwards); from step 100 on it is q_i. Returns the scheduler and each trial's last step."""
    rng = np.random.default_rng(0)
    scheduler = AdaptiveASHA(EarlyStopping(), MAX_STEPS, 25)
    scheduler.set_search_properties("val_loss", "min")
    last = []
    for i in range(n):
        trial, q = _Trial(str(i)), float(rng.random())
        scheduler.on_trial_add(None, trial)
        for step in range(25, MAX_STEPS + 1, 25):
            value = (-q if flip else q) if step < 100 else q
            if step == MAX_STEPS:
                scheduler.on_trial_complete(None, trial, {"step": step, "val_loss": value})
            elif (
                scheduler.on_trial_result(None, trial, {"step": step, "val_loss": value})
                == TrialScheduler.STOP
            ):
                break
        last.append(step)
    return scheduler, last


def test_the_first_trials_calibrate_then_only_agreeing_rungs_prune() -> None:
    agreeing, kept = replay(flip=False)
    assert kept[:MIN_PAIRS] == [MAX_STEPS] * MIN_PAIRS  # nothing is pruned before it is measured
    assert agreeing.grace == 50
    assert kept[-10:].count(50) >= 3  # still pruning at the first rung at the end
    flipped, backed = replay(flip=True)
    assert flipped.grace == 150
    assert 50 not in backed[-10:]  # the first rung no longer prunes
    assert min(backed[-10:]) == 150  # the second, which agrees, still does


def test_history_from_earlier_runs_skips_the_calibration() -> None:
    """A resumed sweep's scheduler, given the study's earlier trials, starts from their agreement;
    without finished trials in it, it calibrates first."""
    history = {i: {50: -float(i), 150: float(i), 200: float(i)} for i in range(8)}
    assert AdaptiveASHA(EarlyStopping(), MAX_STEPS, 25, history=history).grace == 150
    agreeing = {k: {**v, 50: -v[50]} for k, v in history.items()}
    assert AdaptiveASHA(EarlyStopping(), MAX_STEPS, 25, history=agreeing).grace == 50
    unfinished = {k: {50: v[50], 150: v[150]} for k, v in agreeing.items()}
    assert AdaptiveASHA(EarlyStopping(), MAX_STEPS, 25, history=unfinished).grace == MAX_STEPS


def test_the_default_scheduler_is_adaptive_and_starts_from_the_study() -> None:
    """`make_scheduler("adaptive")`, the sweeps' default, is AdaptiveASHA on the policy's rungs,
    given the study's finished curves (`finished_curves`) as history."""
    assert SweepSpec().scheduler == "adaptive"
    history = {f"study-{i}": {50: -float(i), 150: float(i), 200: float(i)} for i in range(8)}
    scheduler = make_scheduler("adaptive", {"max_steps": MAX_STEPS, "eval_every": 25}, None, history)
    assert isinstance(scheduler, AdaptiveASHA) and scheduler.rungs == RUNGS
    assert scheduler.grace == 150 and scheduler.refuted == {50}
    fresh = make_scheduler("adaptive", {"max_steps": MAX_STEPS, "eval_every": 25})
    assert isinstance(fresh, AdaptiveASHA) and fresh.grace == MAX_STEPS
